-- Placeholder for migration 0004 (pause and limits), built on another
-- branch: that branch's 0004 replaces this file when the branches merge.
select 1;
