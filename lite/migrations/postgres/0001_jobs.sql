-- placeholder until the dialect branch lands
create table lite_jobs (
    id           bigint  generated always as identity primary key,
    queue        text    not null,
    kind         text    not null,
    payload      bytea   not null,
    priority     integer not null default 0,
    state        text    not null default 'available'
                 check (state in ('available', 'running', 'done', 'dead', 'cancelled')),
    run_at       bigint  not null,
    attempts     integer not null default 0,
    max_attempts integer not null check (max_attempts > 0),
    generation   bigint  not null default 0,
    lease_token  text,
    locked_by    text,
    leased_at    bigint,
    heartbeat_at bigint,
    unique_key   text,
    result       bytea,
    errors       jsonb   not null default '[]',
    created_at   bigint  not null,
    finished_at  bigint
);
