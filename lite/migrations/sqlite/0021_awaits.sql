-- Await (lite/await.go): a handler's job waits, blocked, for jobs it
-- names, its children, through the edges dependencies use. An await edge
-- differs from a dependency in one way: any end of the awaited job counts
-- (done, dead or cancelled), whatever the waiting job's policy for its
-- dependencies, and none cancels or keeps it blocked; the handler reads
-- the outcomes when it runs again.
alter table lite_deps add column awaits integer not null default 0 check (awaits in (0, 1));

-- lite_deps_ended as 0010 wrote it, but that an await edge counts any
-- end and never carries a cancel down the graph.
drop trigger lite_deps_ended;
create trigger lite_deps_ended after update of state on lite_jobs
    when new.has_dependents and new.state in ('done', 'dead', 'cancelled') and old.state not in ('done', 'dead', 'cancelled')
begin
    update lite_deps set resolved = 2
    where resolved = 0
      and depends_on in (
          with recursive ended(id) as (
              select new.id
              union
              select d.job_id from lite_deps d join ended on d.depends_on = ended.id
              join lite_jobs b on b.id = d.job_id
              where new.state <> 'done' and d.resolved = 0 and not d.awaits and b.state = 'blocked' and b.on_dep_failure = 'cancel')
          select id from ended)
      and (new.state = 'done' or awaits or (select on_dep_failure from lite_jobs where id = lite_deps.job_id) <> 'block');
    update lite_jobs set deps_pending = deps_pending - (select count(*) from lite_deps d where d.job_id = lite_jobs.id and d.resolved = 2
        and (new.state = 'done' or d.awaits or lite_jobs.on_dep_failure = 'run'))
    where id in (select job_id from lite_deps where resolved = 2);
    update lite_jobs set state = 'cancelled', finished_at = new.finished_at,
        errors = json_insert(errors, '$[#]', json_object('attempt', attempts, 'generation', generation,
            'at', new.finished_at, 'error', 'cancelled: dependency ' || new.id || ' ended ' || new.state))
    where id in (select job_id from lite_deps where resolved = 2 and not awaits) and state = 'blocked'
      and new.state <> 'done' and on_dep_failure = 'cancel';
    update lite_jobs set state = 'available'
    where id in (select job_id from lite_deps where resolved = 2) and state = 'blocked' and deps_pending = 0;
    update lite_deps set resolved = 1 where resolved = 2;
end;
