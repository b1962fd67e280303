-- Placeholder: 0016 is another branch's migration (restore, unique holds). This
-- file only keeps the versions counting up on branch h-durable; drop it
-- when merging that branch.
select 1;
