-- Periodic jobs. A schedule is a cron spec in a time zone and the job each
-- tick enqueues. next_run_at is the tick the schedule waits for (unix ms);
-- a fire moves it on by a compare-and-set on the value it read, in the
-- same transaction as the enqueue, so each tick is enqueued once however
-- many hosts share the database. A paused schedule keeps its row and
-- fires nothing.
create table lite_schedules (
    name         text    collate "C" primary key,
    spec         text    not null,
    time_zone    text    not null,
    queue        text    collate "C" not null,
    kind         text    collate "C" not null,
    payload      bytea   not null,
    priority     integer not null,
    max_attempts integer not null,
    unique_key   text    collate "C",
    paused       boolean not null default false,
    next_run_at  bigint  not null,
    last_run_at  bigint,
    created_at   bigint  not null,
    updated_at   bigint  not null
);

-- Workers sleep until the earliest next_run_at; a schedule added, changed
-- or resumed by another host must wake them, on the channel they listen on.
create function lite_schedules_notify() returns trigger
language plpgsql as $$
begin
    perform pg_notify('lite_jobs', '');
    return null;
end
$$;
create trigger lite_schedules_notify after insert or update on lite_schedules
    for each statement execute function lite_schedules_notify();
