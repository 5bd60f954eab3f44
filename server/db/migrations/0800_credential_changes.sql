-- A change to an API key or a member (a revocation, a role, a removal) is announced on commit, so
-- that every process drops the credentials it cached (auth/credential-cache.ts) at once. The
-- coarse last_used_at is not a change worth announcing: it is written while keys are used.
CREATE FUNCTION announce_credential_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'api_tokens'
     AND (to_jsonb(OLD) - 'last_used_at') = (to_jsonb(NEW) - 'last_used_at') THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('credentials_changed', TG_TABLE_NAME);
  RETURN NULL;
END
$$;

CREATE TRIGGER api_tokens_changed AFTER UPDATE OR DELETE ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION announce_credential_change();
CREATE TRIGGER members_changed AFTER UPDATE OR DELETE ON members
  FOR EACH ROW EXECUTE FUNCTION announce_credential_change();
