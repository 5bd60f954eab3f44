-- Egress of the embedded store as a log: one row per response served, summed with
-- store_orgs.egress_bytes by whoever reads the figure, and folded into it by the sweep.
-- A served response used to add to store_orgs.egress_bytes directly. That row is the one every
-- write locks for its quota check until its bytes are on disk (store_write_snapshot), so each
-- GET's count waited for the writes in flight while it held one of the store's connections:
-- enough GETs during one slow flush took every connection, and every S3 request stalled.
-- No foreign key either: its check would take a share lock on that same row.
CREATE TABLE store_egress (
  org_id uuid NOT NULL,
  bytes bigint NOT NULL CHECK (bytes > 0)
);
CREATE INDEX store_egress_org ON store_egress (org_id);
