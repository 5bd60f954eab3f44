-- What S3 clients set and read back beyond an object's bytes (issue 28).

-- Whether versioning was ever configured: S3 answers GetBucketVersioning with no status for a
-- bucket that never had it, and `Suspended` for one turned off since (whose kept versions stay).
ALTER TABLE store_buckets ADD COLUMN versioning_configured boolean NOT NULL DEFAULT false;
UPDATE store_buckets SET versioning_configured = versioning;

-- A bucket's TagSet: [["key", "value"], …] in key order; null when it has none.
ALTER TABLE store_buckets ADD COLUMN tags jsonb;
-- S3's ObjectOwnership of the bucket (BucketOwnerEnforced, BucketOwnerPreferred, ObjectWriter);
-- null when none was set. Every writer is the bucket owner's organization here, so the three
-- differ only in whether ACL requests are taken at all (BucketOwnerEnforced: not).
ALTER TABLE store_buckets ADD COLUMN ownership text;

-- An object version's tags (x-amz-tagging, PutObjectTagging), in key order.
ALTER TABLE store_versions ADD COLUMN tags jsonb NOT NULL DEFAULT '[]';
-- The tags a multipart upload gives the object it completes into.
ALTER TABLE store_uploads ADD COLUMN tags jsonb NOT NULL DEFAULT '[]';

-- Uploads completed lately: a repeated CompleteMultipartUpload (a client retrying after a lost
-- answer) is answered as the first one was, not with NoSuchUpload. Swept after a day.
CREATE TABLE store_completed_uploads (
  upload_id text PRIMARY KEY,
  bucket_id uuid NOT NULL REFERENCES store_buckets (id) ON DELETE CASCADE,
  key text NOT NULL,
  version_id text NOT NULL,
  etag text NOT NULL,
  checksums jsonb NOT NULL DEFAULT '{}',
  -- How the version is sealed at rest (0980's store_versions.encryption), answered again on a retry.
  encryption jsonb,
  completed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX store_completed_uploads_age ON store_completed_uploads (completed_at);
