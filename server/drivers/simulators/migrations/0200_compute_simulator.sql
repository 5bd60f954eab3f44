-- State of the simulated hypervisor (drivers/simulators/hypervisor.ts): what a real compute
-- backend would hold, kept here so that a restart does not forget it.
CREATE TABLE sim_servers (
  server_id uuid PRIMARY KEY,
  name text NOT NULL,
  region_id text NOT NULL,
  storage_pool_id text NOT NULL,
  network_profile_id text NOT NULL,
  console_type text NOT NULL,
  image_id text NOT NULL,
  vcpus integer NOT NULL,
  memory_mb integer NOT NULL,
  disk_gb integer NOT NULL,
  power text NOT NULL CHECK (power IN ('running', 'stopped', 'rescue', 'crashed')),
  ssh_keys jsonb NOT NULL DEFAULT '[]',
  firewall jsonb NOT NULL DEFAULT '[]',
  private_ipv4 text NOT NULL,
  public_ipv4 text,
  ipv6 text,
  boots integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Host numbers for the addresses of new servers and of allocated public IPs.
CREATE SEQUENCE sim_server_host_seq;
CREATE SEQUENCE sim_address_host_seq;

CREATE TABLE sim_addresses (
  address_id uuid PRIMARY KEY,
  region_id text NOT NULL,
  address text NOT NULL UNIQUE,
  server_id uuid,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sim_console_sessions (
  session_id uuid PRIMARY KEY,
  server_id uuid NOT NULL,
  console_type text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
