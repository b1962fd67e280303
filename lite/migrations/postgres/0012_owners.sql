-- Who set each schedule, retention and queue limit, as on SQLite (see
-- migrations/sqlite): '' by hand, or the Owner of the Declaration that
-- wrote it.
alter table lite_schedules add column owner text collate "C" not null default '';
alter table lite_retention add column owner text collate "C" not null default '';
alter table lite_queues add column limits_owner text collate "C" not null default '';

-- How many jobs a worker runs at once, as on SQLite.
alter table lite_workers add column slots bigint not null default 0;
