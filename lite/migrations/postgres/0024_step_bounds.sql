-- A step's bounds (lite.MaxSteps, lite.MaxStepsBytes), counted once its
-- job's row is locked. The insert that records a step locks the row
-- first, so that a reclaim or a cancel waits for it; but the insert's own
-- reads keep the snapshot taken before that wait, so a step that another
-- call under the same lease committed meanwhile went uncounted, and a run
-- recording from several goroutines passed the bounds by as many. A
-- volatile function's statement reads with a snapshot of its own, taken
-- when it runs: after the lock.
create function lite_steps_room(job bigint, adding bigint, max_steps bigint, max_bytes bigint) returns boolean
language plpgsql volatile as $$
begin
    return (select count(*) < max_steps and coalesce(sum(octet_length(result)), 0) + adding <= max_bytes
        from lite_steps where job_id = job);
end
$$;
