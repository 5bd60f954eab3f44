-- How a label filter finds its instances, read through the labels index or by walking the list.
--
-- The index without GIN's pending list (fastupdate). With it, new rows wait in an unordered list of
-- up to 4 MB (gin_pending_list_limit) until a vacuum merges them into the index, and every search
-- through the index reads that whole list first: 100,000 instances created between two autovacuum
-- runs all sat there (491 pages), and a label filter read through the index took 11 ms against
-- 1.1 ms for the unfiltered first page. Without it, each instance created inserts its few label
-- entries into the index at once.
ALTER INDEX vms_labels SET (fastupdate = off);
-- Turning it off leaves what is already pending there; merge it now.
SELECT gin_clean_pending_list('vms_labels'::regclass);

-- The planner's estimate of how many instances carry a label comes from the column's statistics.
-- With the default target (100), only 4 of 300 label sets made the most-common list and `@>` fell
-- back to a fixed guess (10 rows in 100,000): a label on 1% of the instances was read through the
-- index, its 1,000 rows fetched from across the table and sorted (2.8 ms), rather than by walking
-- the list in order until a page was full (1.9 ms). With 1000, ANALYZE keeps up to 1,000 label sets
-- and a histogram as long, and estimated that label at the 1,000 rows it has.
ALTER TABLE vms ALTER COLUMN labels SET STATISTICS 1000;
