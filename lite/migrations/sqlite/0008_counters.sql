-- Outcomes counted per queue apart from the job rows, so that retention,
-- purge and delete never take them back: done, dead and cancelled count
-- the jobs that reached each state, retried those Retry started over.
-- A trigger counts them in the transaction of the state change, whatever
-- path made it; shard is always 0 here (one writer at a time).
create table lite_counters (
    queue   text    not null,
    counter text    not null check (counter in ('done', 'dead', 'cancelled', 'retried')),
    shard   integer not null default 0,
    n       integer not null,
    primary key (queue, counter, shard)
) strict;

create trigger lite_counters_count after update of state on lite_jobs
    when new.state <> old.state and (new.state in ('done', 'dead', 'cancelled')
        or (new.state = 'available' and old.state in ('dead', 'cancelled')))
begin
    insert into lite_counters (queue, counter, n)
    values (new.queue, case when new.state = 'available' then 'retried' else new.state end, 1)
    on conflict (queue, counter, shard) do update set n = n + 1;
end;
