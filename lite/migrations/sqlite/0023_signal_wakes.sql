-- On PostgreSQL, a signal's wake now notifies the workers of other hosts.
-- A file needs no such change: its workers see every commit, of any
-- process, through the file's data version (wake.go). This migration
-- keeps the versions of both engines in step.
select 1;
