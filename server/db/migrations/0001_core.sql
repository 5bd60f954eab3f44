-- Organizations, members and their API keys.
CREATE TABLE orgs (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  -- Object storage plan and override (the effective max_buckets folds the override in).
  plan_slug text NOT NULL DEFAULT 'standard',
  plan_max_buckets integer NOT NULL DEFAULT 10,
  max_buckets_override integer,
  scheduling_enabled boolean NOT NULL DEFAULT true,
  enrollment_state text NOT NULL DEFAULT 'active' CHECK (enrollment_state IN ('active', 'suspended')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  -- The subject of the member's OIDC tokens (or a name for members who only use API keys).
  subject text NOT NULL,
  -- The issuer whose tokens carry this subject; null when the member only uses API keys.
  issuer text,
  role text NOT NULL CHECK (role IN ('owner', 'member')),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, subject)
);

CREATE TABLE api_tokens (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  member_id uuid NOT NULL REFERENCES members (id),
  name text NOT NULL,
  scopes text[] NOT NULL,
  -- SHA-256 of the secret; the secret itself is never stored.
  secret_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_tokens_org_page ON api_tokens (org_id, created_at DESC, id DESC);

-- Idempotency-Key records: one per organization and key, kept at least 24 hours.
CREATE TABLE idempotency_keys (
  org_id uuid NOT NULL REFERENCES orgs (id),
  key text NOT NULL,
  -- SHA-256 of method, path and body: another request under the same key is refused.
  fingerprint bytea NOT NULL,
  state text NOT NULL CHECK (state IN ('processing', 'completed')),
  -- While processing: when another request may take the key over (the first one crashed).
  locked_until timestamptz,
  response_status integer,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (created_at);

-- Operations: the record of asynchronous work, and the durable work queue.
CREATE TABLE operations (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  type text NOT NULL,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  attempt integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  -- What the executor needs (for example the target size of a resize).
  payload jsonb NOT NULL DEFAULT '{}',
  -- What the executor produced that the API shows later (for example a console URL).
  result jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  error_class text,
  error_detail text,
  -- The worker holding the operation, and until when. A running operation whose lease has
  -- expired is claimed again: its worker crashed, or it is waiting to retry.
  lease_owner text,
  lease_expires_at timestamptz,
  CHECK ((finished_at IS NOT NULL) = (state IN ('succeeded', 'failed', 'cancelled')))
);
CREATE INDEX operations_org_page ON operations (org_id, created_at DESC, id DESC);
CREATE INDEX operations_resource ON operations (org_id, resource_type, resource_id);
CREATE INDEX operations_claimable ON operations (created_at) WHERE state IN ('queued', 'running');

-- Audit events: who did what, allowed or denied.
CREATE TABLE audit_events (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  ts timestamptz NOT NULL DEFAULT clock_timestamp(),
  action text NOT NULL,
  resource_type text NOT NULL,
  resource_id text,
  result text NOT NULL CHECK (result IN ('succeeded', 'denied', 'failed')),
  actor_sub text NOT NULL,
  actor_realm text NOT NULL,
  actor_token_id uuid,
  before jsonb,
  after jsonb,
  operation_id uuid,
  reason text,
  request_id text
);
CREATE INDEX audit_events_org_page ON audit_events (org_id, ts DESC, id DESC);

-- Billing: the account, metered usage and invoices.
CREATE TABLE billing_accounts (
  org_id uuid PRIMARY KEY REFERENCES orgs (id),
  state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'past_due', 'suspended')),
  billing_exempt boolean NOT NULL DEFAULT false,
  -- Up to 2^63-1 cents.
  spend_budget_cents bigint CHECK (spend_budget_cents > 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Usage accrued per organization, meter and calendar month (UTC), in the meter's unit.
CREATE TABLE usage_totals (
  org_id uuid NOT NULL REFERENCES orgs (id),
  month date NOT NULL,
  meter text NOT NULL,
  quantity numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, month, meter)
);

-- When each metered resource was last metered: usage accrues from there to now.
CREATE TABLE metering_cursors (
  org_id uuid NOT NULL REFERENCES orgs (id),
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  metered_until timestamptz NOT NULL,
  PRIMARY KEY (org_id, resource_type, resource_id)
);

CREATE TABLE invoices (
  id text PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  status text NOT NULL,
  currency text NOT NULL,
  amount_due_cents bigint NOT NULL,
  total_cents bigint NOT NULL,
  hosted_invoice_url text,
  invoice_pdf text,
  period_start timestamptz NOT NULL,
  period_end timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, period_start)
);
CREATE INDEX invoices_org_page ON invoices (org_id, period_start DESC, id DESC);
