-- A signal wakes the job parked awaiting it by clearing its parked marker
-- and moving run_at to now; the job stays available, so the notify of
-- 0001 (a change of state to available) never fired, and workers on other
-- hosts found it only at their next poll. A job that leaves its park while
-- it stays available notifies channel lite_jobs as any newly available job
-- does. A lease also clears the marker, but its job is running by then.
create trigger lite_jobs_notify_unparked after update of parked on lite_jobs
    for each row when (old.parked is not null and new.parked is null and new.state = 'available')
    execute function lite_jobs_notify();
