-- State of the simulated object store and secret store (drivers/simulators/object-store.ts). In
-- production these are external systems; nothing of the API reads these tables.

-- The organization-wide limits the store enforces on new writes.
CREATE TABLE sim_objectstore_org_quotas (
  org_id uuid PRIMARY KEY,
  hard_bytes bigint NOT NULL,
  max_objects bigint NOT NULL,
  -- No new writes at all (object storage or billing suspended).
  writes_suspended boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Buckets, by the platform's bucket id (a repeated create finds the bucket it made).
CREATE TABLE sim_objectstore_buckets (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  name text NOT NULL,
  versioning boolean NOT NULL,
  max_objects bigint,
  max_size_bytes bigint,
  -- Soft-deleted: kept with its settings, serving nothing.
  suspended boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name)
);

-- Object versions and delete markers. An unversioned bucket holds one version per key
-- (version_id 'null', as S3 names it); a versioned one keeps every version and delete marker.
CREATE TABLE sim_objectstore_objects (
  bucket_id uuid NOT NULL REFERENCES sim_objectstore_buckets (id) ON DELETE CASCADE,
  key text NOT NULL,
  version_id text NOT NULL,
  delete_marker boolean NOT NULL,
  size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
  -- Orders the versions of a key: the highest is the latest.
  seq bigserial NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (bucket_id, key, version_id)
);

-- Access keys the store accepts. It keeps a hash of the secret to check signatures against.
CREATE TABLE sim_objectstore_access_keys (
  key_id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  access_key_id text NOT NULL UNIQUE,
  secret_sha256 bytea NOT NULL,
  revoked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The platform's secret store (a vault): path → secret.
CREATE TABLE sim_secret_store (
  path text PRIMARY KEY,
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
