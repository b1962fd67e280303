-- How long finished jobs are kept, per finished state, in the file so that
-- every process sharing it deletes by the same policy: a worker started
-- with other settings can never delete what the file says to keep. A state
-- with no row is kept for lite's default; keep_ms null keeps it forever.
create table lite_retention (
    state   text    primary key check (state in ('done', 'dead', 'cancelled')),
    keep_ms integer check (keep_ms > 0)
) strict;
