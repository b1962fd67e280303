-- Dependency edges and batches are pruned as the jobs they refer to are
-- deleted (see deleteJobs in lite/retention_clean.go). Those that deletes
-- before this migration left, every job of theirs gone, go now.
delete from lite_deps
where not exists (select 1 from lite_jobs where id = lite_deps.depends_on)
  and not exists (select 1 from lite_jobs where id = lite_deps.job_id);
delete from lite_batches
where not exists (select 1 from lite_jobs where batch_id = lite_batches.id);
