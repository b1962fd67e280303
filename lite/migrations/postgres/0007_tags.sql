-- Tags and metadata a job carries from its enqueue, as on SQLite (see
-- migrations/sqlite): jsonb here, so that a list by tag is a containment
-- test (tags @> '["a"]').
alter table lite_jobs add column tags jsonb not null default '[]';
alter table lite_jobs add column meta jsonb not null default '{}';
