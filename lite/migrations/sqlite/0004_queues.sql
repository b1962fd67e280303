-- Flow control per queue: pause, a cap on running jobs and a cap on
-- starts per period, shared by every process on the file because every
-- lease statement reads this table (see lite/flow.go). A queue with no
-- row is unpaused and unlimited; a row whose settings all return to
-- their defaults is deleted, so a file that uses none of this has no
-- rows and its leases read an empty table.
--
-- The rate is counted in fixed windows of rate_per_ms, laid end to end
-- from the queue's first start (window_start = 0: none yet), so that a
-- worker waking late to a window shortens that window only and never
-- shifts the ones after it: window_start is when the current one opened
-- and window_starts how many jobs started in it. A start before
-- window_start by more than a second (the clock went back; within a
-- second is the skew of two hosts' clocks) opens a new window at that
-- start.
create table lite_queues (
    queue         text    primary key,
    paused        integer not null default 0 check (paused in (0, 1)),
    max_running   integer not null default 0 check (max_running >= 0),
    rate          integer not null default 0 check (rate >= 0),
    rate_per_ms   integer not null default 0 check (rate_per_ms >= 0),
    window_start  integer not null default 0,
    window_starts integer not null default 0
) strict;

-- Every lease path counts its starts here, in the statement that leases,
-- whichever statement that is: a lease is the only change from available
-- to running. A queue without a rate has nothing to count.
create trigger lite_queues_count_start after update of state on lite_jobs
    when new.state = 'running' and old.state = 'available'
begin
    update lite_queues set
        window_start  = case when new.leased_at >= window_start - 1000 and new.leased_at < window_start + rate_per_ms then window_start
                             when window_start = 0 or new.leased_at < window_start - 1000 then new.leased_at
                             else new.leased_at - (new.leased_at - window_start) % rate_per_ms end,
        window_starts = case when new.leased_at >= window_start - 1000 and new.leased_at < window_start + rate_per_ms then window_starts + 1 else 1 end
    where queue = new.queue and rate > 0;
end;
