-- Bucket policies and public access blocks through S3 (issue 28). A policy may deny a bucket's
-- own organization what its keys could otherwise do, and allow other organizations' keys the
-- object operations and listings it names (never the bucket's configuration); no request is
-- anonymous here, so nothing is public whatever a policy says.
ALTER TABLE store_buckets
  -- The policy document as the client gave it (GetBucketPolicy answers it byte for byte); null: none.
  ADD COLUMN policy text,
  -- {"blockPublicAcls", "ignorePublicAcls", "blockPublicPolicy", "restrictPublicBuckets"}; null: none set.
  ADD COLUMN public_access_block jsonb;

-- A key of another organization reaching a bucket by its name looks among the buckets of that
-- name that have a policy (bucket names are per organization).
CREATE INDEX store_buckets_named_with_policy ON store_buckets (name) WHERE policy IS NOT NULL;
