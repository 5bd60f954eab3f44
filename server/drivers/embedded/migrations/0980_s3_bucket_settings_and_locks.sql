-- What S3 clients set on a bucket beyond its objects, and what protects or seals each version
-- (issue 28): default encryption, CORS, lifecycle rules and object lock on buckets; encryption,
-- retention and legal hold on versions; what an unfinished multipart upload will give its version.

ALTER TABLE store_buckets
  -- SSE-S3 for every write that asks for no encryption itself (PutBucketEncryption); null: none.
  ADD COLUMN default_encryption text CHECK (default_encryption IN ('AES256')),
  -- The CORS rules (PutBucketCors), as parsed: [{id, allowedOrigins, allowedMethods, allowedHeaders, exposeHeaders, maxAgeSeconds}].
  ADD COLUMN cors jsonb,
  -- The lifecycle rules (PutBucketLifecycleConfiguration), as parsed; the store's background run applies them.
  ADD COLUMN lifecycle jsonb,
  -- Object lock: set when the bucket is created with it, or turned on while versioning is enabled;
  -- never turned off (S3's rule). Versions of such a bucket may carry a retention and a legal hold.
  ADD COLUMN object_lock_enabled boolean NOT NULL DEFAULT false,
  -- The retention new versions get when their write names none: {"mode": "GOVERNANCE"|"COMPLIANCE", "days"|"years": n}.
  ADD COLUMN object_lock_default jsonb;

ALTER TABLE store_versions
  -- How the bytes are sealed at rest: null (plain), {"algorithm": "AES256"} (SSE-S3) or
  -- {"algorithm": "AES256", "customerKeyMd5": "…"} (SSE-C). Each segment names its wrapped data key.
  ADD COLUMN encryption jsonb,
  ADD COLUMN lock_mode text CHECK (lock_mode IN ('GOVERNANCE', 'COMPLIANCE')),
  ADD COLUMN lock_until timestamptz,
  ADD COLUMN legal_hold boolean NOT NULL DEFAULT false,
  ADD CHECK ((lock_mode IS NULL) = (lock_until IS NULL));

ALTER TABLE store_uploads
  ADD COLUMN encryption jsonb,
  -- {"mode", "until", "legalHold"}: the lock the completed version gets.
  ADD COLUMN lock jsonb;

-- The part's wrapped data key when it is sealed ({"by": "platform"|"customer", "key": "…"}).
ALTER TABLE store_parts ADD COLUMN sealing jsonb;

-- The buckets the lifecycle run visits.
CREATE INDEX store_buckets_with_lifecycle ON store_buckets (id) WHERE lifecycle IS NOT NULL AND NOT suspended;

-- A browser's CORS preflight carries no credentials: it finds the bucket by its name alone.
CREATE INDEX store_buckets_name ON store_buckets (name);
