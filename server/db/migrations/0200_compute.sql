-- Compute: instances, SSH keys, public IPs, scheduled restarts and console sessions.

-- Instances. A deleted instance keeps its row (deleted_at set): its name is free again, it is no
-- longer listed or readable, but its scheduled restarts still name it ("the organization once had
-- this instance").
CREATE TABLE vms (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  name text NOT NULL,
  region_id text NOT NULL,
  -- The region's disk redundancy when the disk was made: the policy of allowed_actions follows it
  -- even if the catalogue file changes later.
  disk_redundancy text NOT NULL CHECK (disk_redundancy IN ('replicated', 'single_copy')),
  storage_pool_id text NOT NULL,
  network_profile_id text NOT NULL,
  image_id text NOT NULL,
  image_name text NOT NULL,
  vcpus integer NOT NULL,
  memory_mb integer NOT NULL,
  disk_gb integer NOT NULL,
  state text NOT NULL CHECK (state IN ('creating', 'running', 'stopped', 'rebooting', 'resizing', 'rebuilding', 'rescue', 'deleting', 'error')),
  desired_state text NOT NULL CHECK (desired_state IN ('running', 'stopped', 'rescue', 'deleted')),
  workload_type text NOT NULL DEFAULT 'customer' CHECK (workload_type IN ('customer', 'infra')),
  protected boolean NOT NULL DEFAULT false,
  -- Who switched protection on last ('owner' or 'operator'), for the wording of vm_protected.
  protected_by text CHECK (protected_by IN ('owner', 'operator')),
  -- The keys installed at creation (names and public key material), installed again at a rebuild
  -- even if the organization has deleted the key since.
  ssh_keys jsonb NOT NULL DEFAULT '[]',
  user_data_present boolean NOT NULL DEFAULT false,
  labels jsonb NOT NULL DEFAULT '{}',
  -- Inbound firewall rules as last set (setVmFirewall).
  firewall jsonb NOT NULL DEFAULT '[]',
  -- What the hypervisor last reported; null until it has (never defaulted).
  observed_status text,
  observed_addresses jsonb,
  observed_at timestamptz,
  error_class text,
  error_detail text,
  -- Since when the instance has been powered without interruption (metering); null when not.
  powered_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
-- A name is unique among the live instances of a region; a deleted instance frees it.
CREATE UNIQUE INDEX vms_live_name ON vms (org_id, region_id, name) WHERE deleted_at IS NULL;
CREATE INDEX vms_org_page ON vms (org_id, created_at, id) WHERE deleted_at IS NULL;

-- powered_since follows state in one place, whichever statement changes it: an instance is
-- billed while its guest runs, and each uninterrupted run is metered on its own so that the time
-- it spent stopped is never charged.
CREATE FUNCTION vms_powered_since() RETURNS trigger AS $$
BEGIN
  IF NEW.deleted_at IS NULL AND NEW.state IN ('running', 'rebooting', 'resizing', 'rebuilding', 'rescue') THEN
    IF TG_OP = 'INSERT' OR NEW.powered_since IS NULL THEN
      NEW.powered_since := now();
    END IF;
  ELSE
    NEW.powered_since := NULL;
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER vms_powered_since BEFORE INSERT OR UPDATE OF state, deleted_at ON vms
  FOR EACH ROW EXECUTE FUNCTION vms_powered_since();

-- SSH public keys of an organization. Deleting one removes the row: the name is free at once.
CREATE TABLE ssh_keys (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  name text NOT NULL,
  public_key text NOT NULL,
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name)
);
CREATE INDEX ssh_keys_org_page ON ssh_keys (org_id, created_at, id);

-- Public IPv4 addresses. A released one keeps its row (released_at set) but is gone for the API.
CREATE TABLE public_ips (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  region_id text NOT NULL,
  address text,
  state text NOT NULL CHECK (state IN ('pending', 'allocated', 'associating', 'associated', 'disassociating', 'releasing', 'error')),
  vm_id uuid REFERENCES vms (id),
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  released_at timestamptz
);
-- An instance holds at most one public IP.
CREATE UNIQUE INDEX public_ips_one_per_vm ON public_ips (vm_id) WHERE vm_id IS NOT NULL AND released_at IS NULL;
CREATE INDEX public_ips_org_page ON public_ips (org_id, created_at, id) WHERE released_at IS NULL;

-- Scheduled restarts.
CREATE TABLE scheduled_actions (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  vm_id uuid NOT NULL REFERENCES vms (id),
  action text NOT NULL DEFAULT 'reboot' CHECK (action IN ('reboot')),
  kind text NOT NULL CHECK (kind IN ('once', 'weekly', 'monthly')),
  run_at timestamptz,
  day_of_week integer CHECK (day_of_week BETWEEN 0 AND 6),
  day_of_month integer CHECK (day_of_month BETWEEN 1 AND 28),
  -- Wall-clock time in `timezone`, normalised to HH:MM or HH:MM:SS.
  time_of_day text,
  timezone text NOT NULL,
  state text NOT NULL CHECK (state IN ('scheduled', 'completed', 'cancelled')),
  next_run_at timestamptz,
  last_run_at timestamptz,
  last_outcome text CHECK (last_outcome IN ('queued', 'refused', 'missed')),
  last_outcome_detail text,
  last_operation_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'scheduled') = (next_run_at IS NOT NULL))
);
CREATE INDEX scheduled_actions_vm_page ON scheduled_actions (org_id, vm_id, created_at, id);
-- What the scheduler claims: due schedules, earliest first.
CREATE INDEX scheduled_actions_due ON scheduled_actions (next_run_at) WHERE state = 'scheduled';

-- Consoles prepared by vm.console operations. The URL handed out at collection is never stored:
-- only a hash of its single-use token, which the console gateway redeems once before it expires.
CREATE TABLE console_sessions (
  operation_id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs (id),
  vm_id uuid NOT NULL REFERENCES vms (id),
  console_type text NOT NULL CHECK (console_type IN ('vnc', 'serial')),
  -- The gateway's session endpoint (no secret in it); the token is appended at collection.
  gateway_url text NOT NULL,
  prepared_at timestamptz NOT NULL DEFAULT now(),
  collected_at timestamptz,
  token_hash bytea UNIQUE,
  token_expires_at timestamptz,
  redeemed_at timestamptz
);
