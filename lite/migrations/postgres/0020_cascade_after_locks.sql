-- lite_deps_ended walks the cascade of a job's end level by level, and
-- reads each level in a statement begun once it holds that level's rows
-- (the dependents' jobs, in id order). It chose every job to cancel in
-- one statement before: a statement that waits for a row reads all else
-- from before its wait, so a dependent that an enqueue, or a retry,
-- committed while the trigger waited for that transaction's row was
-- missed, and left blocked for good behind a cancelled job. The rest is
-- as 0010 wrote it.
create or replace function lite_deps_ended() returns trigger
language plpgsql as $$
declare
    level bigint[] := array[new.id];
begin
    if pg_trigger_depth() > 1 then
        return null;
    end if;
    loop
        perform 1 from lite_jobs
        where id in (select job_id from lite_deps where depends_on = any(level) and resolved = 0)
        order by id for update;
        update lite_deps set resolved = 2
        where resolved = 0 and depends_on = any(level)
          and (new.state = 'done' or (select on_dep_failure from lite_jobs where id = lite_deps.job_id) <> 'block');
        exit when new.state = 'done';
        -- The next level: the blocked dependents this level's end cancels.
        select array_agg(d.job_id order by d.job_id) into level
        from lite_deps d join lite_jobs b on b.id = d.job_id
        where d.depends_on = any(level) and d.resolved = 2 and b.state = 'blocked' and b.on_dep_failure = 'cancel';
        exit when level is null;
    end loop;
    update lite_jobs set deps_pending = deps_pending - (select count(*) from lite_deps d where d.job_id = lite_jobs.id and d.resolved = 2)
    where id in (select job_id from lite_deps where resolved = 2)
      and (new.state = 'done' or on_dep_failure = 'run');
    update lite_jobs set state = 'cancelled', finished_at = new.finished_at,
        errors = errors || jsonb_build_object('attempt', attempts, 'generation', generation,
            'at', new.finished_at, 'error', 'cancelled: dependency ' || new.id || ' ended ' || new.state)
    where id in (select job_id from lite_deps where resolved = 2) and state = 'blocked'
      and new.state <> 'done' and on_dep_failure = 'cancel';
    update lite_jobs set state = 'available'
    where id in (select job_id from lite_deps where resolved = 2) and state = 'blocked' and deps_pending = 0;
    update lite_deps set resolved = 1 where resolved = 2;
    return null;
end
$$;
