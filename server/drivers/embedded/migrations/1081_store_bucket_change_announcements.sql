-- A change of a bucket's row in the store, other than its running usage, is announced on commit,
-- naming the bucket (`bucket:<id>`, by the function migration 1080 made for the platform's row),
-- so that the S3 endpoint's cache of the buckets it serves forgets it at once, in every process:
-- its policy, ACL, versioning, suspension… are read from the cache by every request. Usage moves
-- with every write and is never read from the cache (a quota is checked under the row's lock), so
-- a commit of writes announces nothing.
CREATE TRIGGER store_buckets_changed AFTER UPDATE ON store_buckets
  FOR EACH ROW WHEN ((to_jsonb(OLD) - 'usage_bytes' - 'usage_objects') IS DISTINCT FROM (to_jsonb(NEW) - 'usage_bytes' - 'usage_objects'))
  EXECUTE FUNCTION announce_bucket_change();
CREATE TRIGGER store_buckets_removed AFTER DELETE ON store_buckets
  FOR EACH ROW EXECUTE FUNCTION announce_bucket_change();
