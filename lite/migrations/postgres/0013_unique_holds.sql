-- Unique keys that hold for a period or until a state, as on SQLite (see
-- migrations/sqlite): unique_hold says what releases a job's key besides
-- its period, lite_unique holds one row per queue and key, taken by an
-- upsert whose update applies only once the row's hold has lapsed, and
-- released by the triggers below in the transaction that moves its
-- holder. The upsert locks the row, so enqueuers on many hosts take
-- turns on it and each sees the one before it committed.
alter table lite_jobs add column unique_hold text check (unique_hold in ('period', 'started', 'finished'));

drop index lite_jobs_unique_key;
create unique index lite_jobs_unique_key on lite_jobs (queue, unique_key)
    where unique_key is not null and unique_hold is null and state in ('available', 'running');

create table lite_unique (
    queue      text   collate "C" not null,
    unique_key text   collate "C" not null,
    job_id     bigint not null,
    held_until bigint not null,
    released   bigint not null check (released in (0, 1)),
    primary key (queue, unique_key)
);

-- The holds a holder's state releases, for the triggers; the released
-- ones by their end, for Clean, which deletes those that have lapsed.
create index lite_unique_holder on lite_unique (job_id) where released = 0;
create index lite_unique_lapsing on lite_unique (held_until) where released = 1;

create function lite_unique_release() returns trigger
language plpgsql as $$
begin
    update lite_unique set released = 1 where job_id = old.id and released = 0; -- old.id is new.id on an update
    return null;
end
$$;
create trigger lite_unique_release after update of state on lite_jobs
    for each row when (new.unique_hold in ('started', 'finished') and new.state <> old.state
        and (new.state in ('done', 'dead', 'cancelled') or (new.unique_hold = 'started' and new.state = 'running')))
    execute function lite_unique_release();

-- A holder deleted before its state releases its key.
create trigger lite_unique_deleted after delete on lite_jobs
    for each row when (old.unique_hold in ('started', 'finished'))
    execute function lite_unique_release();
