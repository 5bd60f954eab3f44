-- A credential change announces which credential changed (`api_token:<id>`, `member:<id>`,
-- `s3_access_key:<id>`), not only that one did: each process then forgets that credential alone
-- (db/announced-cache.ts). Announcing the table name made every process forget every cached key
-- whenever any tenant revoked a key or had an S3 key issued, and a working key behind an address
-- over its anonymous budget was refused (429) until it was looked up again.
-- The store's own record of an S3 key (store_access_keys, migration 0911) names the platform's key
-- by its key_id. IF branches rather than one CASE: a branch reads a column only of its own table.
CREATE OR REPLACE FUNCTION announce_credential_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed text;
BEGIN
  IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'api_tokens'
     AND (to_jsonb(OLD) - 'last_used_at') = (to_jsonb(NEW) - 'last_used_at') THEN
    RETURN NULL;
  END IF;
  IF TG_TABLE_NAME = 'api_tokens' THEN
    changed := 'api_token:' || (to_jsonb(OLD) ->> 'id');
  ELSIF TG_TABLE_NAME = 'members' THEN
    changed := 'member:' || (to_jsonb(OLD) ->> 'id');
  ELSIF TG_TABLE_NAME = 's3_access_keys' THEN
    changed := 's3_access_key:' || (to_jsonb(OLD) ->> 'id');
  ELSIF TG_TABLE_NAME = 'store_access_keys' THEN
    changed := 's3_access_key:' || (to_jsonb(OLD) ->> 'key_id');
  ELSE
    changed := TG_TABLE_NAME;
  END IF;
  PERFORM pg_notify('credentials_changed', changed);
  RETURN NULL;
END
$$;
