-- Webhook deliveries are attempted by the events area's deliverer, no longer as jobs of the
-- operations engine: a delivery under way is leased to the process attempting it
--   lease_token        the deliverer that holds it (one per process), so that only it records
--                      the attempt;
--   lease_expires_at   renewed while the attempt runs; once it lapses (the process died), any
--                      deliverer makes the delivery due again and it is sent once more, with the
--                      same webhook-id.
ALTER TABLE webhook_deliveries
  ADD COLUMN lease_token uuid,
  ADD COLUMN lease_expires_at timestamptz;

-- Attempts the engine had under way are due again (a receiver may hear one twice, as after a
-- crash), and the engine's jobs are gone.
UPDATE webhook_deliveries SET in_flight = false, next_attempt_at = now() WHERE in_flight AND status = 'pending';
DELETE FROM operations WHERE type = 'webhook.deliver';
