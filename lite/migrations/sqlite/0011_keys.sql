-- Expiry, keys and per-key flow control. expires_at is when a job must
-- have started by (null: never expires): every lease refuses it past that
-- time, and the reclaim pass cancels it. job_key groups a queue's jobs
-- (a customer, a remote host) for the queue's per-key settings:
-- max_per_key caps its running jobs per key (0: no cap), and sequence
-- runs each key's jobs one at a time in id order ('': no sequence;
-- 'continue': a dead or cancelled job lets the next one run; 'block': it
-- holds the key until it is retried or deleted). Both are read inside the
-- lease statement (see lite/lease.go).
alter table lite_jobs add column expires_at integer;
alter table lite_jobs add column job_key text;
alter table lite_queues add column max_per_key integer not null default 0 check (max_per_key >= 0);
alter table lite_queues add column sequence text not null default '' check (sequence in ('', 'continue', 'block'));

create index lite_jobs_expiring on lite_jobs (expires_at)
    where state = 'available' and expires_at is not null;

-- A key's ready jobs in lease order, for the per-key limit's walk.
create index lite_jobs_keyed on lite_jobs (queue, job_key, priority desc, run_at, id)
    where state = 'available' and job_key is not null;

-- A key's running jobs, counted against its limit.
create index lite_jobs_key_running on lite_jobs (queue, job_key)
    where state = 'running' and job_key is not null;

-- A key's unfinished jobs (and its dead and cancelled ones, which a
-- blocking sequence waits on) in enqueue order, for the sequence's head.
create index lite_jobs_key_order on lite_jobs (queue, job_key, id)
    where job_key is not null and state <> 'done';
