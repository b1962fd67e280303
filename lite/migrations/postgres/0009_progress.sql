-- A running job's progress and the latest lines of its log, each written
-- only under the job's current lease. progress is JSON text (a fraction
-- 0..1, or a small JSON value, at most 4 KiB); log_tail is the latest 64
-- KiB of log lines, each ending in a newline.
alter table lite_jobs add column progress text;
alter table lite_jobs add column progress_note text;
alter table lite_jobs add column log_tail text;
