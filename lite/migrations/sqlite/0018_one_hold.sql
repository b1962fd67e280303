-- One hold for every kind of unique key. A key held while its job is
-- unfinished (a UniqueKey alone) is now a hold of lite_unique until the
-- job is finished, as UniqueUntilFinished is: one row per queue and key,
-- taken by the enqueue's upsert, released by the trigger in the
-- transaction that ends its holder. The partial unique index that held
-- such keys before, and saw none of the others, is dropped.
--
-- The jobs that hold a key that way now get their row (a key also held
-- the other way by a hold that has not lapsed keeps that hold: the two
-- did not see each other before this), and every job that can still run
-- (unfinished, dead or cancelled: a retry takes its hold back) says what
-- releases its key.
insert into lite_unique (queue, unique_key, job_id, held_until, released)
select queue, unique_key, id, 0, 0 from lite_jobs
where unique_key is not null and unique_hold is null and state in ('available', 'running')
on conflict (queue, unique_key) do update set job_id = excluded.job_id, held_until = 0, released = 0
where lite_unique.released = 1 and lite_unique.held_until <= cast(unixepoch('subsec') * 1000 as integer);

update lite_jobs set unique_hold = 'finished'
where unique_key is not null and unique_hold is null and state <> 'done';

drop index lite_jobs_unique_key;

-- A retried holder (Retry, lite retry, a bulk retry: dead or cancelled
-- back to available) takes its hold back in the retry's transaction: its
-- own row, or one that has lapsed, as the enqueue would (a hold until
-- its state again; a period is not started over, so a retried job of a
-- period whose period has passed holds nothing). A key another job holds
-- refuses the retry, whatever the kinds of the two holds: one key, one
-- holder. The retry sets run_at to its now, which the trigger reads as
-- the time.
create trigger lite_unique_retaken after update of state on lite_jobs
    when new.unique_key is not null and new.state = 'available' and old.state in ('dead', 'cancelled')
begin
    insert into lite_unique (queue, unique_key, job_id, held_until, released)
    values (new.queue, new.unique_key, new.id, new.run_at, new.unique_hold = 'period')
    on conflict (queue, unique_key) do update
    set job_id = excluded.job_id, released = excluded.released, held_until = max(lite_unique.held_until, excluded.held_until)
    where lite_unique.job_id = excluded.job_id or (lite_unique.released = 1 and lite_unique.held_until <= excluded.held_until);
    select raise(abort, 'lite: unique key held by another job')
    where not exists (select 1 from lite_unique where queue = new.queue and unique_key = new.unique_key and job_id = new.id);
end;
