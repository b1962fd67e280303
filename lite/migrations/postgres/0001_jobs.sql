-- Jobs and their lease state, as on SQLite (see migrations/sqlite): lease
-- identity is (id, generation); every change of ownership bumps
-- generation, and every owner write matches it. An identity column draws
-- ids from a sequence that never hands a value out twice, so a purged
-- job's id is never reused and a stale (id, generation) can never match a
-- newer row; "always" refuses an insert that names its own id. Integers
-- are bigint, 64 bits as SQLite's are. Queue and kind sort bytewise
-- (collate "C"), as SQLite's text does, so lists come out in the same
-- order on both engines whatever the server's locale.
create table lite_jobs (
    id           bigint  generated always as identity primary key,
    queue        text    collate "C" not null,
    kind         text    collate "C" not null,
    payload      bytea   not null,
    priority     bigint  not null default 0,
    state        text    not null default 'available'
                 check (state in ('available', 'running', 'done', 'dead', 'cancelled')),
    run_at       bigint  not null,
    attempts     bigint  not null default 0,
    max_attempts bigint  not null check (max_attempts > 0),
    generation   bigint  not null default 0,
    lease_token  text,
    locked_by    text,
    leased_at    bigint,
    heartbeat_at bigint,
    unique_key   text,
    result       bytea,
    errors       jsonb   not null default '[]',
    created_at   bigint  not null,
    finished_at  bigint
);

-- The hot paths read only these partial indexes, so millions of finished
-- jobs in the table do not slow leasing or reclaiming. Leases walk an
-- index in lease order and stop after N rows: by queue for one queue,
-- across queues for every queue.
create index lite_jobs_available on lite_jobs (queue, priority desc, run_at, id)
    where state = 'available';
create index lite_jobs_ready on lite_jobs (priority desc, run_at, id)
    where state = 'available';
create index lite_jobs_running on lite_jobs (heartbeat_at)
    where state = 'running';
create index lite_jobs_finished on lite_jobs (finished_at)
    where state in ('done', 'dead', 'cancelled');

-- A unique key admits one unfinished job per queue; once that job is done,
-- dead or cancelled the key is free again.
create unique index lite_jobs_unique_key on lite_jobs (queue, unique_key)
    where unique_key is not null and state in ('available', 'running');

-- Wake-up across hosts: a job that becomes available (enqueued, released,
-- snoozed, retried, reclaimed, or back after a failed attempt) notifies
-- channel lite_jobs when its transaction commits, and idle workers listen
-- on it. An enqueue inside a transaction that rolls back notifies nobody.
-- The payload is constant, so that PostgreSQL folds a transaction's
-- notifications into one.
create function lite_jobs_notify() returns trigger
language plpgsql as $$
begin
    perform pg_notify('lite_jobs', '');
    return null;
end
$$;
create trigger lite_jobs_notify_insert after insert on lite_jobs
    for each row execute function lite_jobs_notify();
create trigger lite_jobs_notify_available after update of state on lite_jobs
    for each row when (new.state = 'available' and old.state <> 'available')
    execute function lite_jobs_notify();
