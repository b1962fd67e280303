-- Await (lite/await.go): a handler's job waits, blocked, for jobs it
-- names, its children, through the edges dependencies use. An await edge
-- differs from a dependency in one way: any end of the awaited job counts
-- (done, dead or cancelled), whatever the waiting job's policy for its
-- dependencies, and none cancels or keeps it blocked; the handler reads
-- the outcomes when it runs again.
alter table lite_deps add column awaits boolean not null default false;

-- lite_deps_ended as 0020 wrote it, but that an await edge counts any
-- end and never carries a cancel down the graph.
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
          and (new.state = 'done' or awaits or (select on_dep_failure from lite_jobs where id = lite_deps.job_id) <> 'block');
        exit when new.state = 'done';
        -- The next level: the blocked dependents this level's end cancels.
        select array_agg(d.job_id order by d.job_id) into level
        from lite_deps d join lite_jobs b on b.id = d.job_id
        where d.depends_on = any(level) and d.resolved = 2 and not d.awaits and b.state = 'blocked' and b.on_dep_failure = 'cancel';
        exit when level is null;
    end loop;
    update lite_jobs set deps_pending = deps_pending - (select count(*) from lite_deps d where d.job_id = lite_jobs.id and d.resolved = 2
        and (new.state = 'done' or d.awaits or lite_jobs.on_dep_failure = 'run'))
    where id in (select job_id from lite_deps where resolved = 2);
    update lite_jobs set state = 'cancelled', finished_at = new.finished_at,
        errors = errors || jsonb_build_object('attempt', attempts, 'generation', generation,
            'at', new.finished_at, 'error', 'cancelled: dependency ' || new.id || ' ended ' || new.state)
    where id in (select job_id from lite_deps where resolved = 2 and not awaits) and state = 'blocked'
      and new.state <> 'done' and on_dep_failure = 'cancel';
    update lite_jobs set state = 'available'
    where id in (select job_id from lite_deps where resolved = 2) and state = 'blocked' and deps_pending = 0;
    update lite_deps set resolved = 1 where resolved = 2;
    return null;
end
$$;
