-- Durable execution (docs/durable.md), as on SQLite (see
-- migrations/sqlite): a job's recorded steps, the signals sent to it, and
-- the marker of a parked job. Both tables go with their job.
create table lite_steps (
    job_id      bigint not null references lite_jobs (id) on delete cascade,
    name        text   collate "C" not null,
    generation  bigint not null,
    result      bytea  not null,
    recorded_at bigint not null,
    primary key (job_id, name)
);

create table lite_signals (
    id                     bigint generated always as identity primary key,
    job_id                 bigint not null references lite_jobs (id) on delete cascade,
    name                   text   collate "C" not null,
    payload                bytea  not null,
    sent_at                bigint not null,
    consumed_by_generation bigint,
    consumed_at            bigint
);

create index lite_signals_job on lite_signals (job_id, name, id);

alter table lite_jobs add column parked text check (parked in ('sleep', 'signal', 'children'));
alter table lite_jobs add column parked_on text;
