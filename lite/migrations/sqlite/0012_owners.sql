-- Who set each schedule, retention and queue limit: '' by hand (the CLI,
-- the dashboard, SetSchedule, SetRetention, SetLimits), or the Owner of
-- the Declaration that wrote it. A declaration writes only what is its
-- own or nobody's, unless it forces, and removes what it declared before
-- and no longer does (see lite/declare.go). Rows from before this
-- migration read as set by hand, so a declaration never takes them over
-- unforced.
alter table lite_schedules add column owner text not null default '';
alter table lite_retention add column owner text not null default '';
alter table lite_queues add column limits_owner text not null default '';
