-- A bucket that stops being served (its state leaves `active`: a delete, an error) or goes is
-- announced on commit, naming it (`bucket:<id>`), so that the S3 endpoint's cache of the buckets
-- it serves forgets it at once, in every process (drivers/embedded/s3/access.ts). Its desired
-- values, observations and usage samples change often and are not what the endpoint keeps. The
-- store's row announces itself through the same function (1081).
CREATE FUNCTION announce_bucket_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('buckets_changed', 'bucket:' || OLD.id);
  RETURN NULL;
END
$$;

CREATE TRIGGER buckets_served_changed AFTER UPDATE ON buckets
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.name IS DISTINCT FROM NEW.name OR OLD.org_id IS DISTINCT FROM NEW.org_id)
  EXECUTE FUNCTION announce_bucket_change();
CREATE TRIGGER buckets_removed AFTER DELETE ON buckets
  FOR EACH ROW EXECUTE FUNCTION announce_bucket_change();
