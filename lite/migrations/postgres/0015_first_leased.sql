-- "Never leased" is a marker of its own: first_leased_at, the time of a
-- job's first lease, set by every lease and never cleared. Expiry and
-- debounce read it; they once read generation 0 instead, which a restore
-- (FenceRestore raises every generation) turned into "leased" for every
-- job. A job leased before this migration gets its lease's time if it
-- runs now, else its creation time (its first lease's is not kept). A
-- file restored before it keeps its pending jobs marked leased: nothing
-- tells them apart from jobs released after a lease.
alter table lite_jobs add column first_leased_at bigint;
update lite_jobs set first_leased_at = coalesce(leased_at, created_at) where generation > 0;
