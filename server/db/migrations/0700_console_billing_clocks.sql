-- Test clocks (core/test-clocks.ts): how far an organization's time was moved forward. Read only
-- when TEST_CLOCKS is on.
CREATE TABLE test_clocks (
  org_id uuid PRIMARY KEY REFERENCES orgs (id),
  offset_ms bigint NOT NULL CHECK (offset_ms >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Consoles are served by the platform's own gateway: the URL is made at collection from
-- PUBLIC_BASE_URL, and a session remembers the API key that collected it (revoking the key ends it).
ALTER TABLE console_sessions ALTER COLUMN gateway_url DROP NOT NULL;
ALTER TABLE console_sessions ADD COLUMN collected_by_token_id uuid;
ALTER TABLE console_sessions ADD COLUMN ended_at timestamptz;
ALTER TABLE console_sessions ADD COLUMN end_reason text;

-- Invoices are the platform's own: lines per meter, priced by the price list of the day, and
-- pages (HTML, PDF) the platform serves. Addresses invented by earlier versions are dropped.
ALTER TABLE invoices ADD COLUMN demo boolean NOT NULL DEFAULT false;
ALTER TABLE invoices ADD COLUMN issued_at timestamptz;
UPDATE invoices SET hosted_invoice_url = NULL, invoice_pdf = NULL, demo = (id LIKE 'in_demo_%');

CREATE TABLE invoice_lines (
  invoice_id text NOT NULL REFERENCES invoices (id),
  position integer NOT NULL,
  meter text NOT NULL,
  description text NOT NULL,
  quantity numeric NOT NULL,
  unit text NOT NULL,
  unit_amount_micro_eur bigint NOT NULL,
  amount_cents bigint NOT NULL,
  PRIMARY KEY (invoice_id, position)
);

-- Instance hours by size (vCPUs, memory, disk), shown on the invoice beside the priced meters.
CREATE TABLE usage_by_size (
  org_id uuid NOT NULL REFERENCES orgs (id),
  month date NOT NULL,
  size text NOT NULL,
  hours numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, month, size)
);

-- The last reading of each organization's cumulative egress counter (bytes served by the object
-- store): egress accrues by the increase between readings.
CREATE TABLE egress_readings (
  org_id uuid PRIMARY KEY REFERENCES orgs (id),
  counter_bytes numeric NOT NULL,
  read_at timestamptz NOT NULL
);

-- Secrets the platform makes for itself once and shares between its processes (the key that
-- signs invoice links).
CREATE TABLE platform_secrets (
  name text PRIMARY KEY,
  secret bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
