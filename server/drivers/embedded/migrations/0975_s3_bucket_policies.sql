-- Bucket policies, ACL grants and public access blocks through S3 (issue 28). A policy may deny a bucket's
-- own organization what its keys could otherwise do, and allow other organizations' keys the
-- object operations and listings it names (never the bucket's configuration); no request is
-- anonymous here, so nothing is public whatever a policy says.
ALTER TABLE store_buckets
  -- The policy document as the client gave it (GetBucketPolicy answers it byte for byte); null: none.
  ADD COLUMN policy text,
  -- {"blockPublicAcls", "ignorePublicAcls", "blockPublicPolicy", "restrictPublicBuckets"}; null: none set.
  ADD COLUMN public_access_block jsonb,
  -- The ACL as given: [{"grantee": "org:<id>" | "group:authenticated", "permission"}] (the owner's own included); null: the owner's FULL_CONTROL.
  ADD COLUMN acl jsonb,
  -- The LocationConstraint S3's CreateBucket named (always this endpoint's region); null: none named.
  ADD COLUMN location text;

-- A version's ACL grants, and those an unfinished multipart upload will give its version (as the bucket's).
ALTER TABLE store_versions ADD COLUMN acl jsonb;
ALTER TABLE store_uploads ADD COLUMN acl jsonb;

-- A key of another organization reaching a bucket by its name finds the buckets of that name by
-- 0980's store_buckets_name index (bucket names are per organization).
