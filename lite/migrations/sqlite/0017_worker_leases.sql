-- Each lease a running Worker takes names the worker's row in
-- lite_workers, which the worker renews every heartbeat: that row is the
-- liveness of every lease it holds. Reclaim takes a running job only
-- when its own heartbeat lapsed and its worker's row is gone or lapsed
-- too, so a job whose heartbeat waits behind a lock (a long enqueue, an
-- app's transaction, a frozen process) while its worker goes on beating
-- is not taken. Null for a lease taken without a Worker's row (a Lease
-- by hand, RunOnce, RunJob, a lite from before this column): such a job
-- is judged by its own heartbeat alone, as before.
alter table lite_jobs add column worker_id text;
