-- Jobs and their lease state. Lease identity is (id, generation): every
-- change of ownership bumps generation, and every owner write matches it.
-- AUTOINCREMENT keeps a purged job's id from ever being handed out again,
-- so a stale (id, generation) can never match a newer row.
create table lite_jobs (
    id           integer primary key autoincrement,
    queue        text    not null,
    kind         text    not null,
    payload      blob    not null,
    priority     integer not null default 0,
    state        text    not null default 'available'
                 check (state in ('available', 'running', 'done', 'dead', 'cancelled')),
    run_at       integer not null,
    attempts     integer not null default 0,
    max_attempts integer not null check (max_attempts > 0),
    generation   integer not null default 0,
    lease_token  text,
    locked_by    text,
    leased_at    integer,
    heartbeat_at integer,
    unique_key   text,
    result       blob,
    errors       text    not null default '[]',
    created_at   integer not null,
    finished_at  integer
) strict;

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
