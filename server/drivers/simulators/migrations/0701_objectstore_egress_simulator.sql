-- Bytes the simulated object store has served to clients, per organization (cumulative).
CREATE TABLE sim_objectstore_egress (
  org_id uuid PRIMARY KEY,
  bytes bigint NOT NULL DEFAULT 0
);
