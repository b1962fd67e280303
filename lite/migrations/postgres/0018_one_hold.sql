-- One hold for every kind of unique key, as on SQLite (see
-- migrations/sqlite): a key held while its job is unfinished is a hold
-- of lite_unique until the job is finished; the partial unique index
-- goes; the jobs that held a key through it get their row; a retried
-- holder takes its hold back in the retry's transaction, or the retry is
-- refused (unique_violation) when another job holds the key.
insert into lite_unique (queue, unique_key, job_id, held_until, released)
select queue, unique_key, id, 0, 0 from lite_jobs
where unique_key is not null and unique_hold is null and state in ('available', 'running')
on conflict (queue, unique_key) do update set job_id = excluded.job_id, held_until = 0, released = 0
where lite_unique.released = 1 and lite_unique.held_until <= (extract(epoch from clock_timestamp()) * 1000)::bigint;

update lite_jobs set unique_hold = 'finished'
where unique_key is not null and unique_hold is null and state <> 'done';

drop index lite_jobs_unique_key;

create function lite_unique_retaken() returns trigger
language plpgsql as $$
begin
    insert into lite_unique (queue, unique_key, job_id, held_until, released)
    values (new.queue, new.unique_key, new.id, new.run_at, case when new.unique_hold = 'period' then 1 else 0 end)
    on conflict (queue, unique_key) do update
    set job_id = excluded.job_id, released = excluded.released, held_until = greatest(lite_unique.held_until, excluded.held_until)
    where lite_unique.job_id = excluded.job_id or (lite_unique.released = 1 and lite_unique.held_until <= excluded.held_until);
    if not exists (select 1 from lite_unique where queue = new.queue and unique_key = new.unique_key and job_id = new.id) then
        raise exception 'lite: unique key % held by another job', new.unique_key using errcode = 'unique_violation';
    end if;
    return null;
end
$$;
create trigger lite_unique_retaken after update of state on lite_jobs
    for each row when (new.unique_key is not null and new.state = 'available' and old.state in ('dead', 'cancelled'))
    execute function lite_unique_retaken();
