-- Durable execution (docs/durable.md): a job's recorded steps, the
-- signals sent to it, and the marker of a parked job. A step row is
-- written only under the job's current lease (id, generation, running)
-- and never overwritten; its generation is the lease that recorded it.
-- Both tables go with their job (on delete cascade).
create table lite_steps (
    job_id      integer not null references lite_jobs (id) on delete cascade,
    name        text    not null,
    generation  integer not null,
    result      blob    not null,
    recorded_at integer not null,
    primary key (job_id, name)
) strict;

-- A signal waits, unconsumed, until its job awaits its name; a consumer
-- sets consumed_by_generation under its lease, once.
create table lite_signals (
    id                     integer primary key autoincrement,
    job_id                 integer not null references lite_jobs (id) on delete cascade,
    name                   text    not null,
    payload                blob    not null,
    sent_at                integer not null,
    consumed_by_generation integer,
    consumed_at            integer
) strict;

create index lite_signals_job on lite_signals (job_id, name, id);

-- A parked job is available, run_at at its wake time, and says why here:
-- a marker of its own, never read from run_at or generation. parked_on is
-- the signal name it awaits. A lease clears both.
alter table lite_jobs add column parked text check (parked in ('sleep', 'signal', 'children'));
alter table lite_jobs add column parked_on text;
