-- Composite work: dependencies, callbacks and batches, as on SQLite (see
-- migrations/sqlite): every transition a job's end causes commits in
-- triggers on the update that ends it. Hosts end jobs at once here: a
-- waiting job's count, an edge and a batch's counts each change in one
-- update of one row, which holds that row's lock to commit, so a second
-- host's update waits and then applies to the row as the first left it
-- (no lost count, no job unblocked twice, no batch finished twice). An
-- enqueue that waits on a job locks it first (see lite/workflow.go), so
-- that an end cannot slip between the enqueue's look and its edge.
alter table lite_jobs drop constraint lite_jobs_state_check;
alter table lite_jobs add constraint lite_jobs_state_check
    check (state in ('available', 'running', 'done', 'dead', 'cancelled', 'blocked'));

alter table lite_jobs add column deps_pending bigint not null default 0;
alter table lite_jobs add column has_dependents boolean not null default false;
alter table lite_jobs add column on_dep_failure text not null default 'cancel'
    check (on_dep_failure in ('cancel', 'run', 'block'));
alter table lite_jobs add column callback jsonb;
alter table lite_jobs add column batch_id bigint;

create table lite_deps (
    depends_on bigint not null,
    job_id     bigint not null,
    resolved   bigint not null default 0 check (resolved in (0, 1, 2)),
    primary key (depends_on, job_id)
);
create index lite_deps_job on lite_deps (job_id);
create index lite_deps_counting on lite_deps (job_id) where resolved = 2;

create table lite_batches (
    id          bigint generated always as identity primary key,
    total       bigint not null check (total > 0),
    done        bigint not null default 0,
    dead        bigint not null default 0,
    cancelled   bigint not null default 0,
    callback    jsonb,
    created_at  bigint not null,
    finished_at bigint
);

-- The cancel cascade is walked here, as on SQLite, where a trigger never
-- fires itself again: the jobs it cancels do not run it again here
-- either (their callbacks and batches fire in their own triggers).
create function lite_deps_ended() returns trigger
language plpgsql as $$
begin
    if pg_trigger_depth() > 1 then
        return null;
    end if;
    update lite_deps set resolved = 2
    where resolved = 0
      and depends_on in (
          with recursive ended(id) as (
              select new.id
              union
              select d.job_id from lite_deps d join ended on d.depends_on = ended.id
              join lite_jobs b on b.id = d.job_id
              where new.state <> 'done' and d.resolved = 0 and b.state = 'blocked' and b.on_dep_failure = 'cancel')
          select id from ended)
      and (new.state = 'done' or (select on_dep_failure from lite_jobs where id = lite_deps.job_id) <> 'block');
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
create trigger lite_deps_ended after update of state on lite_jobs
    for each row when (new.has_dependents and new.state in ('done', 'dead', 'cancelled') and old.state not in ('done', 'dead', 'cancelled'))
    execute function lite_deps_ended();

create function lite_jobs_callback() returns trigger
language plpgsql as $$
begin
    insert into lite_jobs (queue, kind, payload, run_at, max_attempts, created_at, meta)
    values (new.callback ->> 0, new.callback ->> 1, decode(new.callback ->> 2, 'hex'), new.finished_at,
            (new.callback ->> 3)::bigint, new.finished_at,
            jsonb_build_object('lite.job', new.id::text, 'lite.state', new.state));
    return null;
end
$$;
create trigger lite_jobs_callback after update of state on lite_jobs
    for each row when (new.callback is not null and new.state in ('done', 'dead', 'cancelled') and old.state not in ('done', 'dead', 'cancelled'))
    execute function lite_jobs_callback();

create function lite_batches_count() returns trigger
language plpgsql as $$
begin
    update lite_batches set
        done      = done + (new.state = 'done')::int - (old.state = 'done')::int,
        dead      = dead + (new.state = 'dead')::int - (old.state = 'dead')::int,
        cancelled = cancelled + (new.state = 'cancelled')::int - (old.state = 'cancelled')::int
    where id = new.batch_id;
    insert into lite_jobs (queue, kind, payload, run_at, max_attempts, created_at, meta)
    select callback ->> 0, callback ->> 1, decode(callback ->> 2, 'hex'), new.finished_at, (callback ->> 3)::bigint, new.finished_at,
           jsonb_build_object('lite.batch', id::text, 'lite.done', done::text,
                              'lite.dead', dead::text, 'lite.cancelled', cancelled::text)
    from lite_batches
    where id = new.batch_id and finished_at is null and done + dead + cancelled = total and callback is not null;
    update lite_batches set finished_at = new.finished_at
    where id = new.batch_id and finished_at is null and done + dead + cancelled = total;
    return null;
end
$$;
create trigger lite_batches_count after update of state on lite_jobs
    for each row when (new.batch_id is not null
        and (new.state in ('done', 'dead', 'cancelled')) <> (old.state in ('done', 'dead', 'cancelled')))
    execute function lite_batches_count();

create index lite_jobs_batch on lite_jobs (batch_id) where batch_id is not null;
