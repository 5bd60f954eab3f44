-- The store's own record of an S3 access key (revoked by the store) is announced too: the S3
-- endpoint caches keys only while both records accept them (s3/access.ts, migration 0820).
CREATE TRIGGER store_access_keys_changed AFTER UPDATE OR DELETE ON store_access_keys
  FOR EACH ROW EXECUTE FUNCTION announce_credential_change();
