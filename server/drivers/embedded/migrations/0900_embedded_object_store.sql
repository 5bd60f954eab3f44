-- The embedded object store (drivers/embedded/): what it holds about buckets, object versions,
-- multipart uploads, access keys and secrets. The bytes live in files under DATA_DIR/objects;
-- a version is visible once its row is committed, which happens only after its file is complete
-- and synced. Nothing of the API reads these tables: it asks the driver.

-- Per organization: running usage (every version and delete marker), bytes served, and the
-- limits the store enforces on new writes (null until the platform sets them).
CREATE TABLE store_orgs (
  org_id uuid PRIMARY KEY,
  usage_bytes bigint NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),
  usage_objects bigint NOT NULL DEFAULT 0 CHECK (usage_objects >= 0),
  egress_bytes bigint NOT NULL DEFAULT 0,
  hard_bytes bigint,
  max_objects bigint,
  writes_suspended boolean NOT NULL DEFAULT false
);

CREATE TABLE store_buckets (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES store_orgs (org_id),
  name text NOT NULL,
  versioning boolean NOT NULL,
  max_objects bigint,
  max_size_bytes bigint,
  -- Soft-deleted: kept with its settings, serving nothing.
  suspended boolean NOT NULL DEFAULT false,
  usage_bytes bigint NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),
  usage_objects bigint NOT NULL DEFAULT 0 CHECK (usage_objects >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name)
);

-- Object versions and delete markers. An unversioned bucket holds one version per key
-- (version_id 'null', as S3 names it). `segments` are the files holding the bytes, in order
-- (one for a simple upload, one per part for a multipart upload): [{"blob": name, "size": n}].
CREATE TABLE store_versions (
  bucket_id uuid NOT NULL REFERENCES store_buckets (id) ON DELETE CASCADE,
  key text NOT NULL,
  version_id text NOT NULL,
  seq bigserial NOT NULL,
  delete_marker boolean NOT NULL,
  size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
  etag text,
  content_type text,
  -- User metadata (x-amz-meta-*) and the stored representation headers (Content-Encoding…).
  headers jsonb NOT NULL DEFAULT '{}',
  -- {"crc32": base64, …} as verified at upload; "type" FULL_OBJECT or COMPOSITE for multipart.
  checksums jsonb NOT NULL DEFAULT '{}',
  segments jsonb NOT NULL DEFAULT '[]',
  last_modified timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (bucket_id, key, version_id)
);
-- Listing in key order, and the latest version of a key (highest seq).
CREATE INDEX store_versions_key_seq ON store_versions (bucket_id, key COLLATE "C", seq DESC);

CREATE TABLE store_uploads (
  upload_id text PRIMARY KEY,
  bucket_id uuid NOT NULL REFERENCES store_buckets (id) ON DELETE CASCADE,
  key text NOT NULL,
  content_type text,
  headers jsonb NOT NULL DEFAULT '{}',
  checksum_algorithm text,
  initiated timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX store_uploads_bucket ON store_uploads (bucket_id, key COLLATE "C", initiated);

-- Parts count against the quotas as reserved space until the upload completes or is aborted.
CREATE TABLE store_parts (
  upload_id text NOT NULL REFERENCES store_uploads (upload_id) ON DELETE CASCADE,
  part_number integer NOT NULL,
  blob text NOT NULL,
  size_bytes bigint NOT NULL,
  etag text NOT NULL,
  checksums jsonb NOT NULL DEFAULT '{}',
  last_modified timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upload_id, part_number)
);

-- Space held for a write whose bytes are streaming in: taken (under the organization's row
-- lock) before the first byte is stored, turned into a version or part when the write commits,
-- released when it fails. `instance` is the process streaming it; a reservation of a process
-- that is gone (its advisory lock is free) is swept with its file at the next sweep.
CREATE TABLE store_reservations (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  bucket_id uuid NOT NULL,
  bytes bigint NOT NULL,
  objects integer NOT NULL,
  blob text NOT NULL,
  instance integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX store_reservations_org ON store_reservations (org_id);

-- Files whose rows are gone (deleted versions, replaced parts), unlinked after the commit; what
-- a crash leaves here is unlinked by the next sweep.
CREATE TABLE store_garbage (
  blob text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Access keys the store accepts, with the secret sealed (AES-256-GCM under the store's key):
-- SigV4 needs the secret itself to check a signature, so a hash will not do.
CREATE TABLE store_access_keys (
  key_id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  access_key_id text NOT NULL UNIQUE,
  secret_sealed text NOT NULL,
  revoked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The secret store (a vault): path → sealed secret, never plain text.
CREATE TABLE store_secrets (
  path text PRIMARY KEY,
  sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
