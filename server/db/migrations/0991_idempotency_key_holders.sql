-- Who holds an Idempotency-Key being processed: the server process (its instance number, whose
-- liveness its advisory lock tells: db/process-liveness.ts) and the request's own claim. A key
-- whose process died is taken over at once, rather than once `locked_until` lapses (a retry got
-- 409 idempotency_key_in_use for a minute after a SIGKILL); the claim makes the takeover safe: a
-- request whose key was taken over cannot complete it, and its change is rolled back (a
-- serialization failure: the client retries and finds the other request's answer).
-- Keys claimed by a process of an earlier version have neither, and lapse as they did.
ALTER TABLE idempotency_keys ADD COLUMN holder integer, ADD COLUMN claim uuid;

CREATE FUNCTION complete_idempotency_key(p_org_id uuid, p_key text, p_claim uuid, p_status integer, p_body text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE idempotency_keys SET state = 'completed', locked_until = NULL, response_status = p_status, response_body = p_body
  WHERE org_id = p_org_id AND key = p_key AND claim IS NOT DISTINCT FROM p_claim;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'the Idempotency-Key % was taken over by another request', p_key USING ERRCODE = 'serialization_failure';
  END IF;
END
$$;
