-- Flow control per queue, as on SQLite (see migrations/sqlite): pause, a
-- cap on running jobs and a cap on starts per period, read by every lease
-- statement. A queue with no row is unpaused and unlimited. Hosts lease
-- at once here, so a lease locks the rows of the limited queues it may
-- take from before it counts (see lite/flow.go).
create table lite_queues (
    queue         text    collate "C" primary key,
    paused        boolean not null default false,
    max_running   bigint  not null default 0 check (max_running >= 0),
    rate          bigint  not null default 0 check (rate >= 0),
    rate_per_ms   bigint  not null default 0 check (rate_per_ms >= 0),
    window_start  bigint  not null default 0,
    window_starts bigint  not null default 0
);

-- Every lease path counts its starts here, in the transaction that
-- leases: a lease is the only change from available to running. Windows
-- are laid end to end from the queue's first start, as on SQLite.
create function lite_queues_count_start() returns trigger
language plpgsql as $$
begin
    update lite_queues set
        window_start  = case when new.leased_at >= window_start - 1000 and new.leased_at < window_start + rate_per_ms then window_start
                             when window_start = 0 or new.leased_at < window_start - 1000 then new.leased_at
                             else new.leased_at - (new.leased_at - window_start) % rate_per_ms end,
        window_starts = case when new.leased_at >= window_start - 1000 and new.leased_at < window_start + rate_per_ms then window_starts + 1 else 1 end
    where queue = new.queue and rate > 0;
    return null;
end
$$;
create trigger lite_queues_count_start after update of state on lite_jobs
    for each row when (new.state = 'running' and old.state = 'available')
    execute function lite_queues_count_start();
