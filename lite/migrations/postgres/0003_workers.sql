-- Running workers announce what they take, so that a job no live worker
-- would lease (a kind with a typo, a queue nobody serves) is shown and
-- warned about instead of waiting in silence. A row is live while its
-- owner keeps renewing seen_at within its stale_after_ms; a killed
-- worker's row goes stale, is ignored, and is deleted when a worker starts.
-- Diagnostics only: no lease, ack or reclaim reads this table. Queues and
-- kinds are JSON arrays, [] for every one.
create table lite_workers (
    id             text   collate "C" primary key,
    identity       text   collate "C" not null,
    queues         jsonb  not null,
    kinds          jsonb  not null,
    started_at     bigint not null,
    seen_at        bigint not null,
    stale_after_ms bigint not null
);
