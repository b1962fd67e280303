-- On PostgreSQL, a step's bounds are counted once its job's row is
-- locked. A file needs no such change: its writes hold the file's lock
-- from their first read. This migration keeps the versions of both
-- engines in step.
select 1;
