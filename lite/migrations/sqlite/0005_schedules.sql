-- Periodic jobs. A schedule is a cron spec in a time zone and the job each
-- tick enqueues. next_run_at is the tick the schedule waits for (unix ms);
-- a fire moves it on by a compare-and-set on the value it read, in the
-- same transaction as the enqueue, so each tick is enqueued once however
-- many processes share the file. A paused schedule keeps its row and
-- fires nothing.
create table lite_schedules (
    name         text    primary key,
    spec         text    not null,
    time_zone    text    not null,
    queue        text    not null,
    kind         text    not null,
    payload      blob    not null,
    priority     integer not null,
    max_attempts integer not null,
    unique_key   text,
    paused       integer not null default 0,
    next_run_at  integer not null,
    last_run_at  integer,
    created_at   integer not null,
    updated_at   integer not null
) strict;
