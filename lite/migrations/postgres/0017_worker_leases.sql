-- Each lease a running Worker takes names the worker's row in
-- lite_workers, the liveness of every lease it holds, as on SQLite (see
-- migrations/sqlite). The row is written by one statement of its own,
-- which no transaction over jobs ever locks.
alter table lite_jobs add column worker_id text collate "C";
