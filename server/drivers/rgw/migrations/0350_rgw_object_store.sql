-- The rgw object-store driver's own record (drivers/rgw/object-store.ts): which RGW bucket is
-- which platform bucket. RGW knows a bucket by its tenant (the organization) and name; the
-- platform by its id. Nothing of the API reads this table.
CREATE TABLE rgw_buckets (
  bucket_id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name)
);
