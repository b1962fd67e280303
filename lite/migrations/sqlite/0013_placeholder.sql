-- A placeholder for the migration another branch adds under this number: drop this file when merging it.
select 1;
