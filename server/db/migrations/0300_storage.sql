-- Object storage: buckets, S3 access keys and the organization-wide storage ceiling.

-- The organization's storage ceiling and what the object store last reported about it. An
-- organization without a row has the default ceiling and nothing observed (quota-figures.ts).
CREATE TABLE storage_quotas (
  org_id uuid PRIMARY KEY REFERENCES orgs (id),
  -- The desired ceiling (setQuota); null means the platform default.
  hard_bytes bigint CHECK (hard_bytes > 0),
  -- What the object store last confirmed enforcing; null until observed.
  enforced_bytes bigint,
  enforced_objects bigint,
  -- The latest usage sample across all buckets (versions and delete markers included).
  usage_bytes bigint,
  usage_objects bigint,
  usage_measured_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE buckets (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  -- Unique within the organization, soft-deleted buckets included: a purged bucket's row is
  -- deleted, which frees its name.
  name text NOT NULL,
  state text NOT NULL CHECK (state IN ('creating', 'active', 'deleting', 'soft_deleted', 'error')),
  -- Desired values.
  versioning boolean NOT NULL,
  max_objects bigint CHECK (max_objects > 0),
  max_size_bytes bigint CHECK (max_size_bytes > 0),
  -- What the object store last reported (null: nothing observed). observed_quota is
  -- {"max_objects": …, "max_size_bytes": …}, whose members are null for "no cap".
  observed_versioning boolean,
  observed_exists boolean,
  observed_quota jsonb,
  observed_at timestamptz,
  -- The latest usage sample of this bucket (metering and the not-empty fallback).
  usage_bytes bigint,
  usage_objects bigint,
  operation_id uuid,
  soft_deleted_at timestamptz,
  purge_after timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name),
  CHECK ((state = 'soft_deleted') = (soft_deleted_at IS NOT NULL AND purge_after IS NOT NULL))
);
CREATE INDEX buckets_org_page ON buckets (org_id, created_at, id);
CREATE INDEX buckets_purge_due ON buckets (purge_after) WHERE state = 'soft_deleted';

-- S3 access keys. The secret is never stored here: only in the secret store, at secretstore_path.
CREATE TABLE s3_access_keys (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  state text NOT NULL CHECK (state IN ('issuing', 'active', 'revoking', 'revoked', 'error')),
  objectstore_access_key_id text,
  secretstore_path text,
  last_rotated_at timestamptz,
  operation_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX s3_access_keys_org_page ON s3_access_keys (org_id, created_at, id);
