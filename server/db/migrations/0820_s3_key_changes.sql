-- A change to an S3 access key's record (a revoke turns it from active to revoking) is announced
-- like an API key's, so that every process drops the S3 keys it cached (s3/access.ts) at once.
CREATE TRIGGER s3_access_keys_changed AFTER UPDATE OR DELETE ON s3_access_keys
  FOR EACH ROW EXECUTE FUNCTION announce_credential_change();
