-- Composite work: dependencies, callbacks and batches (see
-- lite/workflow.go). Every transition a job's end causes (a dependent
-- counts down or is cancelled, a callback is enqueued, a batch counts)
-- commits in triggers on the update that ends the job, so that it happens
-- in the transaction of that fenced write, whichever path made it (an
-- ack, a failure, a cancel, a reclaim, an expiry), and never for a stale
-- lease, whose write matched no row.

-- deps_pending counts the dependencies not yet done (or, for a job that
-- runs anyway, not yet finished): the job becomes available when it
-- reaches 0. on_dep_failure is what a dependency that ends dead or
-- cancelled does to it. callback is the job to enqueue when this one ends,
-- as JSON [queue, kind, payload in hex, max_attempts]; batch_id the batch
-- it counts in. has_dependents is set once a job waits for this one, so
-- that the end of a job nothing waits for runs no trigger.
alter table lite_jobs add column deps_pending integer not null default 0;
alter table lite_jobs add column has_dependents integer not null default 0;
alter table lite_jobs add column on_dep_failure text not null default 'cancel'
    check (on_dep_failure in ('cancel', 'run', 'block'));
alter table lite_jobs add column callback text;
alter table lite_jobs add column batch_id integer;

-- One row per dependency: job_id waits for depends_on. resolved is 0
-- until depends_on's end has been counted for job_id, 2 while the trigger
-- that counts it runs, 1 after. A dependency that died under a job that
-- stays blocked stays 0, so that it counts once it is retried and done.
create table lite_deps (
    depends_on integer not null,
    job_id     integer not null,
    resolved   integer not null default 0 check (resolved in (0, 1, 2)),
    primary key (depends_on, job_id)
) strict, without rowid;
create index lite_deps_job on lite_deps (job_id);
create index lite_deps_counting on lite_deps (job_id) where resolved = 2;

-- A batch: total jobs, how many ended each way, and the callback enqueued
-- once, when the last of them ends (finished_at set then).
create table lite_batches (
    id          integer primary key autoincrement,
    total       integer not null check (total > 0),
    done        integer not null default 0,
    dead        integer not null default 0,
    cancelled   integer not null default 0,
    callback    text,
    created_at  integer not null,
    finished_at integer
) strict;

-- A job's end counts for every job waiting on it. The edges it settles
-- are marked 2 first: its own, and, when it did not end done, those of
-- every blocked job its end cancels, down the graph through jobs that
-- cancel (a trigger does not fire itself again on SQLite, so the cascade
-- is walked here). Then the waiting jobs count down (for a done
-- dependency, or one that runs anyway), those that cancel are cancelled
-- (their callbacks and batches fire in their own triggers), those at 0
-- become available, and the edges are settled.
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
              where new.state <> 'done' and d.resolved = 0 and b.state = 'blocked' and b.on_dep_failure = 'cancel')
          select id from ended)
      and (new.state = 'done' or (select on_dep_failure from lite_jobs where id = lite_deps.job_id) <> 'block');
    update lite_jobs set deps_pending = deps_pending - (select count(*) from lite_deps d where d.job_id = lite_jobs.id and d.resolved = 2)
    where id in (select job_id from lite_deps where resolved = 2)
      and (new.state = 'done' or on_dep_failure = 'run');
    update lite_jobs set state = 'cancelled', finished_at = new.finished_at,
        errors = json_insert(errors, '$[#]', json_object('attempt', attempts, 'generation', generation,
            'at', new.finished_at, 'error', 'cancelled: dependency ' || new.id || ' ended ' || new.state))
    where id in (select job_id from lite_deps where resolved = 2) and state = 'blocked'
      and new.state <> 'done' and on_dep_failure = 'cancel';
    update lite_jobs set state = 'available'
    where id in (select job_id from lite_deps where resolved = 2) and state = 'blocked' and deps_pending = 0;
    update lite_deps set resolved = 1 where resolved = 2;
end;

-- A job's callback is enqueued in the transaction that ends it, once per
-- end, with the ended job's id and state in its meta.
create trigger lite_jobs_callback after update of state on lite_jobs
    when new.callback is not null and new.state in ('done', 'dead', 'cancelled') and old.state not in ('done', 'dead', 'cancelled')
begin
    insert into lite_jobs (queue, kind, payload, run_at, max_attempts, created_at, meta)
    values (new.callback ->> 0, new.callback ->> 1, unhex(new.callback ->> 2), new.finished_at, new.callback ->> 3,
            new.finished_at, json_object('lite.job', cast(new.id as text), 'lite.state', new.state));
end;

-- A batch counts its jobs' ends (and takes back an end that Retry undid);
-- the end that finishes it enqueues its callback, once: finished_at is
-- set in the same transaction, and a batch once finished never calls
-- back again.
create trigger lite_batches_count after update of state on lite_jobs
    when new.batch_id is not null
     and (new.state in ('done', 'dead', 'cancelled')) <> (old.state in ('done', 'dead', 'cancelled'))
begin
    update lite_batches set
        done      = done + (new.state = 'done') - (old.state = 'done'),
        dead      = dead + (new.state = 'dead') - (old.state = 'dead'),
        cancelled = cancelled + (new.state = 'cancelled') - (old.state = 'cancelled')
    where id = new.batch_id;
    insert into lite_jobs (queue, kind, payload, run_at, max_attempts, created_at, meta)
    select callback ->> 0, callback ->> 1, unhex(callback ->> 2), new.finished_at, callback ->> 3, new.finished_at,
           json_object('lite.batch', cast(id as text), 'lite.done', cast(done as text),
                       'lite.dead', cast(dead as text), 'lite.cancelled', cast(cancelled as text))
    from lite_batches
    where id = new.batch_id and finished_at is null and done + dead + cancelled = total and callback is not null;
    update lite_batches set finished_at = new.finished_at
    where id = new.batch_id and finished_at is null and done + dead + cancelled = total;
end;

create index lite_jobs_batch on lite_jobs (batch_id) where batch_id is not null;

-- A job that waits for others is 'blocked'. SQLite cannot alter a CHECK
-- constraint: widening the state list in the schema's text changes no
-- stored row (every row satisfies the wider check), which is the
-- documented way to drop or loosen a constraint without copying a table
-- that may hold millions of jobs (sqlite.org/lang_altertable.html). It comes last: ALTER TABLE edits
-- the schema's text by what it read at the start of the transaction, and
-- RESET reads it again; the statements above have bumped the schema's
-- version, so every other connection reads it again too.
pragma writable_schema = on;
update sqlite_schema
set sql = replace(sql, 'check (state in (''available'', ''running'', ''done'', ''dead'', ''cancelled''))',
                       'check (state in (''available'', ''running'', ''done'', ''dead'', ''cancelled'', ''blocked''))')
where type = 'table' and name = 'lite_jobs';
pragma writable_schema = reset;
