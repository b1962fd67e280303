-- Outcomes counted per queue apart from the job rows, as on SQLite (see
-- migrations/sqlite). Hosts commit at once here, and a counter row is
-- locked from a trigger's update to its transaction's commit: each
-- server session counts into a shard of its own (its backend pid), so
-- the workers of several processes never wait on one row. Readers sum
-- the shards.
create table lite_counters (
    queue   text    collate "C" not null,
    counter text    not null check (counter in ('done', 'dead', 'cancelled', 'retried')),
    shard   integer not null default 0,
    n       bigint  not null,
    primary key (queue, counter, shard)
);

create function lite_counters_count() returns trigger
language plpgsql as $$
begin
    insert into lite_counters (queue, counter, shard, n)
    values (new.queue, case when new.state = 'available' then 'retried' else new.state end, pg_backend_pid() % 64, 1)
    on conflict (queue, counter, shard) do update set n = lite_counters.n + 1;
    return null;
end
$$;
create trigger lite_counters_count after update of state on lite_jobs
    for each row when (new.state <> old.state and (new.state in ('done', 'dead', 'cancelled')
        or (new.state = 'available' and old.state in ('dead', 'cancelled'))))
    execute function lite_counters_count();
