-- Each lease carries its owner's promise: how long its heartbeat may lapse
-- before any process may reclaim the job. A reclaimer honours the owner's
-- schedule, never its own, so a process with a shorter stale-after cannot
-- take a healthy job from an owner that beats less often.
alter table lite_jobs add column stale_after_ms bigint;

-- Reclaim walks running jobs by the moment their owner's promise ends.
-- No lease on PostgreSQL predates the column, so SQLite's back-fill has no
-- twin here; the coalesce stays so that reclaim reads the same on both
-- engines and finds this index.
drop index lite_jobs_running;
create index lite_jobs_running on lite_jobs ((heartbeat_at + coalesce(stale_after_ms, 30000)))
    where state = 'running';
