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

-- How many jobs a worker runs at once, all its queues' slots together, so
-- that a dashboard shows how busy each is; 0 for a worker that did not
-- say. Diagnostics only, as the rest of lite_workers.
alter table lite_workers add column slots integer not null default 0;
