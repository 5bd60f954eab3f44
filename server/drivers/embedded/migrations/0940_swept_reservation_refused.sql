-- A committing write whose reservation is gone is refused (SQLSTATE CPS01) instead of turned
-- into a version. Another process's sweep deletes the reservations of a process whose instance
-- lock it can take, and marks their files as garbage: that happens to a live process whose lock
-- connection was lost (a database restart, a network cut) until it holds the lock again. Its
-- writes in flight then name files the sweep removes; committed, they were versions without
-- their bytes. The rest of store_write_snapshot is as in 0910_write_snapshot.sql.
CREATE OR REPLACE FUNCTION store_write_snapshot(p_org uuid, p_bucket uuid, p_key text, p_exclude_upload text, p_release uuid,
  p_reserve uuid, p_bytes bigint, p_objects integer, p_blob text, p_instance integer)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  o store_orgs;
  b store_buckets;
  v store_versions;
  held jsonb;
BEGIN
  SELECT * INTO o FROM store_orgs WHERE org_id = p_org FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  SELECT * INTO b FROM store_buckets WHERE id = p_bucket AND org_id = p_org FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF p_release IS NOT NULL THEN
    DELETE FROM store_reservations WHERE id = p_release;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'the reservation of this write was swept: its blob is garbage'
        USING ERRCODE = 'CPS01';
    END IF;
  END IF;
  IF p_key IS NOT NULL AND NOT b.versioning THEN
    SELECT * INTO v FROM store_versions WHERE bucket_id = p_bucket AND key = p_key AND version_id = 'null';
  END IF;
  SELECT jsonb_build_object(
           'orgBytes', coalesce(sum(bytes), 0), 'orgObjects', coalesce(sum(objects), 0),
           'bucketBytes', coalesce(sum(bytes) FILTER (WHERE bucket_id = p_bucket), 0),
           'bucketObjects', coalesce(sum(objects) FILTER (WHERE bucket_id = p_bucket), 0))
    INTO held
    FROM (
      SELECT r.bucket_id, r.bytes, r.objects FROM store_reservations r WHERE r.org_id = p_org
      UNION ALL
      SELECT u.bucket_id, p.size_bytes, 0 FROM store_parts p JOIN store_uploads u USING (upload_id)
      JOIN store_buckets sb ON sb.id = u.bucket_id WHERE sb.org_id = p_org AND u.upload_id IS DISTINCT FROM p_exclude_upload
    ) s;
  IF p_reserve IS NOT NULL THEN
    INSERT INTO store_reservations (id, org_id, bucket_id, bytes, objects, blob, instance)
      VALUES (p_reserve, p_org, p_bucket, p_bytes, p_objects, p_blob, p_instance);
  END IF;
  RETURN jsonb_build_object(
    'org', to_jsonb(o),
    'bucket', to_jsonb(b),
    'current', CASE WHEN v.bucket_id IS NULL THEN NULL ELSE to_jsonb(v) END,
    'held', held);
END
$$;
