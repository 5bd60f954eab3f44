-- The event log and its webhooks (server/areas/events/).
--
-- events is an outbox: every change a user cares about writes its event in the transaction of the
-- change (core/events.ts, and the trigger on vms below), so that nothing is announced that did
-- not happen and nothing that happened goes unannounced. Ids are `evt_` and 32 hex digits.
CREATE TABLE events (
  id text PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  type text NOT NULL,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  -- The payload of the type, as the contract's webhooks section declares it.
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_org_page ON events (org_id, created_at DESC, id DESC);
CREATE INDEX events_org_type_page ON events (org_id, type, created_at DESC, id DESC);
CREATE INDEX events_org_resource_page ON events (org_id, resource_id, created_at DESC, id DESC);
-- The retention purge reads by age; events arrive in time order, so a block range index costs
-- next to nothing to keep.
CREATE INDEX events_age ON events USING brin (created_at);

-- Where an organization wants its events delivered. The signing secret is sealed (AES-256-GCM,
-- the secret store's key); after a rotation the previous one still signs until it expires.
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  url text NOT NULL,
  description text,
  -- The event types delivered; '*' is every type.
  event_types text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text CHECK (disabled_reason IN ('disabled_by_user', 'failing')),
  secret_sealed text NOT NULL,
  previous_secret_sealed text,
  previous_secret_expires_at timestamptz,
  -- The first failed attempt since the last success; null while the endpoint answers.
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (enabled = (disabled_reason IS NULL))
);
CREATE INDEX webhook_endpoints_org_page ON webhook_endpoints (org_id, created_at DESC, id DESC);

-- One event to one endpoint: its attempts, and when the next is due. A delivery waiting for its
-- next attempt has next_attempt_at; once that attempt is queued on the operations engine (a
-- `webhook.deliver` job) it is in_flight until the attempt is recorded.
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts jsonb NOT NULL DEFAULT '[]',
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  in_flight boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX webhook_deliveries_endpoint_page ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (endpoint_id) WHERE in_flight;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Fan-out: each new event becomes a delivery to every enabled endpoint that wants its type, in
-- the statement that writes the event (so in its transaction), and the dispatchers are woken.
-- A ping goes only to the endpoint tested, which writes its own delivery.
CREATE FUNCTION events_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, next_attempt_at)
  SELECT gen_random_uuid(), e.org_id, w.id, e.id, now()
  FROM new_events e
  JOIN webhook_endpoints w ON w.org_id = e.org_id AND w.enabled
  WHERE e.type <> 'ping' AND ('*' = ANY (w.event_types) OR e.type = ANY (w.event_types));
  IF FOUND THEN
    PERFORM pg_notify('webhook_deliveries_due', '');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER events_fan_out AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION events_fan_out();

-- instance.state_changed: an instance's state (or what the hypervisor reports of it) changes in
-- many places (requests, executors, the reconciler), and always in this table, so the event is
-- written here, by whichever statement changes it. `cloud_platform.event_log = off` (the
-- operator's EVENT_LOG=false, for measuring what the log costs) records nothing.
CREATE FUNCTION vms_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('cloud_platform.event_log', true) = 'off' THEN
    RETURN NULL;
  END IF;
  INSERT INTO events (id, org_id, type, resource_type, resource_id, data)
  VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), NEW.org_id, 'instance.state_changed', 'vm', NEW.id::text,
          jsonb_build_object(
            'vm_id', NEW.id, 'name', NEW.name,
            'state', NEW.state, 'previous_state', OLD.state, 'desired_state', NEW.desired_state,
            'observed_status', NEW.observed_status, 'previous_observed_status', OLD.observed_status));
  RETURN NULL;
END $$;
CREATE TRIGGER vms_state_changed AFTER UPDATE OF state, observed_status ON vms FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.observed_status IS DISTINCT FROM NEW.observed_status)
  EXECUTE FUNCTION vms_state_changed();

-- Thresholds already announced, so that each is announced once: the spend budget's (per month and
-- budget: a new budget is announced afresh) and the storage ceiling's (per ceiling, forgotten once
-- usage falls back below it).
CREATE TABLE budget_threshold_notices (
  org_id uuid NOT NULL REFERENCES orgs (id),
  month date NOT NULL,
  budget_cents bigint NOT NULL,
  threshold_percent integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, month, budget_cents, threshold_percent)
);
CREATE TABLE storage_quota_notices (
  org_id uuid NOT NULL REFERENCES orgs (id),
  hard_bytes bigint NOT NULL,
  level text NOT NULL CHECK (level IN ('soft_limit', 'ceiling')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, hard_bytes, level)
);
