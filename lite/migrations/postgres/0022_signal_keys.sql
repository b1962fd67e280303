-- A signal may carry an idempotency key (Queue.SignalOnce): a sender that
-- delivers at least once (a webhook retried) sends it once per job, and
-- a duplicate is never left for a later await of the same name to
-- consume. The key stays with its signal, consumed or not, as long as the
-- job does.
alter table lite_signals add column idempotency_key text;
create unique index lite_signals_key on lite_signals (job_id, idempotency_key) where idempotency_key is not null;
