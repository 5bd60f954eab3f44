-- Webhook attempts under way are limited per organization too (WEBHOOK_ORG_CONCURRENCY), besides
-- per endpoint and in all: without it, one organization's slow receivers (each attempt may take
-- the whole timeout) held every slot of the platform and everyone else's deliveries waited. The
-- claim counts an organization's attempts under way, and an endpoint's, on this index.
DROP INDEX webhook_deliveries_in_flight;
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (org_id, endpoint_id) WHERE in_flight;
