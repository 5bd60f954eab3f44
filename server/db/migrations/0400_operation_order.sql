-- Operations on one resource run in the order they were accepted, one at a time, so that the
-- backend ends in the state the API last promised. created_at cannot give that order: now() is
-- the start of the transaction, not the moment of acceptance. seq is taken when the operation is
-- inserted, and enqueueOperation serializes the inserts of one resource until commit, so for one
-- resource seq order is commit order.
ALTER TABLE operations ADD COLUMN seq bigint;
UPDATE operations o SET seq = numbered.n
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM operations) numbered
WHERE o.id = numbered.id;
ALTER TABLE operations ALTER COLUMN seq SET NOT NULL;
ALTER TABLE operations ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
SELECT setval(pg_get_serial_sequence('operations', 'seq'), coalesce((SELECT max(seq) FROM operations), 0) + 1, false);

-- The claim walks unfinished operations in seq order...
DROP INDEX operations_claimable;
CREATE INDEX operations_claimable ON operations (seq) WHERE state IN ('queued', 'running');
-- ...and takes one only when no earlier unfinished operation exists for its resource.
CREATE INDEX operations_unfinished_by_resource ON operations (org_id, resource_type, resource_id, seq) WHERE finished_at IS NULL;
