-- Each lease carries its owner's promise: how long its heartbeat may lapse
-- before any process may reclaim the job. A reclaimer honours the owner's
-- schedule, never its own, so a process with a shorter stale-after cannot
-- take a healthy job from an owner that beats less often.
alter table lite_jobs add column stale_after_ms integer;

-- Leases taken before the column existed were made under the default.
update lite_jobs set stale_after_ms = 30000 where state = 'running';

-- Reclaim walks running jobs by the moment their owner's promise ends. A
-- lease taken by an older lite, still running while a newer one migrated
-- the file, stores no promise: it is held to the default, never to none.
drop index lite_jobs_running;
create index lite_jobs_running on lite_jobs (heartbeat_at + coalesce(stale_after_ms, 30000))
    where state = 'running';
