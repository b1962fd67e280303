-- Stats and Backlog count a queue's parked jobs (sleeping, awaiting a
-- signal, their time to come) from this index alone, as they count its
-- available jobs from theirs: a dashboard that asks every few seconds
-- reads no job row.
create index lite_jobs_parked on lite_jobs (queue, parked, state, run_at) where parked is not null;
