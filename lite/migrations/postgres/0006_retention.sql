-- How long finished jobs are kept, per finished state, as on SQLite (see
-- migrations/sqlite): in the database, so that every host deletes by the
-- same policy. A state with no row is kept for lite's default; keep_ms
-- null keeps it forever.
create table lite_retention (
    state   text   collate "C" primary key check (state in ('done', 'dead', 'cancelled')),
    keep_ms bigint check (keep_ms > 0)
);
