-- Tags and metadata a job carries from its enqueue: tags a sorted JSON
-- array of short labels, meta a small JSON object of strings (both bounded
-- by the library, see meta.go). A list by tag reads the array with
-- json_each: tags filter a listing, never the hot paths, so no index.
alter table lite_jobs add column tags text not null default '[]';
alter table lite_jobs add column meta text not null default '{}';
