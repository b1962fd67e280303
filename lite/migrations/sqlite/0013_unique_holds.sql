-- Unique keys that hold for a period or until a state (NewJob.UniqueFor,
-- NewJob.UniqueUntil). Such a job keeps its key in unique_key, where
-- lite ls and lite show find it, and names in unique_hold what releases
-- it besides its period: 'started' (its first lease, or its end before
-- one), 'finished' (done, dead or cancelled), or 'period' (nothing: the
-- period alone holds it). The hold itself is the row of lite_unique for
-- the queue and key: the enqueue takes it with an upsert whose update
-- applies only once the row's hold has lapsed (released, and held_until
-- passed), so every guard is on the one row that concurrent enqueuers
-- contend for. The triggers below release it in the transaction that
-- moves its holder, so a stale lease can release nothing. A job without
-- unique_hold keeps the rule of its key being unfinished, the partial
-- unique index, which no longer sees the others.
alter table lite_jobs add column unique_hold text check (unique_hold in ('period', 'started', 'finished'));

drop index lite_jobs_unique_key;
create unique index lite_jobs_unique_key on lite_jobs (queue, unique_key)
    where unique_key is not null and unique_hold is null and state in ('available', 'running');

create table lite_unique (
    queue      text    not null,
    unique_key text    not null,
    job_id     integer not null,
    held_until integer not null,
    released   integer not null check (released in (0, 1)),
    primary key (queue, unique_key)
) strict, without rowid;

-- The holds a holder's state releases, for the triggers; the released
-- ones by their end, for Clean, which deletes those that have lapsed.
create index lite_unique_holder on lite_unique (job_id) where released = 0;
create index lite_unique_lapsing on lite_unique (held_until) where released = 1;

create trigger lite_unique_release after update of state on lite_jobs
    when new.unique_hold in ('started', 'finished') and new.state <> old.state
        and (new.state in ('done', 'dead', 'cancelled') or (new.unique_hold = 'started' and new.state = 'running'))
begin
    update lite_unique set released = 1 where job_id = new.id and released = 0;
end;

-- A holder deleted before its state (lite delete takes available jobs)
-- releases its key, or the key would be held by nothing forever.
create trigger lite_unique_deleted after delete on lite_jobs
    when old.unique_hold in ('started', 'finished')
begin
    update lite_unique set released = 1 where job_id = old.id and released = 0;
end;
