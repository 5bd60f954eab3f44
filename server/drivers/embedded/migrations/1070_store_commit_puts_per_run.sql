-- A run of plain PUTs locks, sums and counts once, not once per PUT. store_commit_puts (1050)
-- called store_commit_put for each item, which locked the organization and the bucket again,
-- summed the space every write in flight holds again, and moved the organization's and the
-- bucket's usage with an UPDATE each: under load the two rows' updates walked a chain of the
-- versions every earlier item of the transaction had left (0.1 and 0.2 ms), and the sum read
-- the organization's reservations (0.2 ms), together a third of an item's time.
--
-- Now the organization's row is locked once, and each bucket's the first time an item names it,
-- outside the items' subtransactions so that a refused item does not give its lock back. The space
-- held by the organization's other writes is summed once, per bucket, at the start; every
-- item then checks its limits (store_limits_refusal, as before) against the usage and the held
-- space as the items before it left them, counted here; the usage is moved once per row at the
-- end. Each item still commits or fails alone, in its own subtransaction, and the counts take its
-- changes only once nothing in it can fail any more. The answers are those of 1050.

-- The space the organization's writes in flight hold, per bucket: reservations, and the parts of
-- multipart uploads not yet completed (all but p_exclude_upload's, the upload completing). As
-- store_write_snapshot sums it (0940, restated below to use it).
CREATE FUNCTION store_held_space(p_org uuid, p_exclude_upload text DEFAULT NULL)
RETURNS TABLE (bucket_id uuid, bytes bigint, objects bigint) LANGUAGE sql STABLE AS $$
  SELECT r.bucket_id, r.bytes, r.objects::bigint FROM store_reservations r WHERE r.org_id = p_org
  UNION ALL
  SELECT u.bucket_id, p.size_bytes, 0 FROM store_parts p JOIN store_uploads u USING (upload_id)
  JOIN store_buckets sb ON sb.id = u.bucket_id WHERE sb.org_id = p_org AND u.upload_id IS DISTINCT FROM p_exclude_upload
$$;

-- As in 0940, with the held space summed by store_held_space.
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
    FROM store_held_space(p_org, p_exclude_upload);
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

CREATE OR REPLACE FUNCTION store_commit_puts(p_org uuid, p_items jsonb)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  o store_orgs;
  b store_buckets;
  cur store_versions;
  v store_versions;
  item jsonb;
  outcomes jsonb := '[]';
  item_bucket uuid;
  -- The space held in each bucket, by id: [bytes, objects].
  held_by_bucket jsonb;
  -- Per bucket named so far (by id): its row as locked, the space others hold in it, and what
  -- this run's committed items moved.
  buckets jsonb := '{}';
  state jsonb;
  org_bytes bigint := 0;
  org_objects bigint := 0;
  org_held_bytes numeric;
  org_held_objects numeric;
  released store_reservations;
  d_bytes bigint;
  d_objects integer;
  refusal text;
  freed text[];
BEGIN
  SELECT * INTO o FROM store_orgs WHERE org_id = p_org FOR UPDATE;
  SELECT coalesce(jsonb_object_agg(h.bucket_id, jsonb_build_array(h.bytes, h.objects)), '{}'),
         coalesce(sum(h.bytes), 0), coalesce(sum(h.objects), 0)
    INTO held_by_bucket, org_held_bytes, org_held_objects
    FROM (SELECT s.bucket_id, sum(s.bytes) AS bytes, sum(s.objects) AS objects FROM store_held_space(p_org) s GROUP BY s.bucket_id) h;
  FOR item IN SELECT value FROM jsonb_array_elements(p_items) WITH ORDINALITY ORDER BY ordinality LOOP
    item_bucket := (item->>'bucket_id')::uuid;
    state := buckets->(item_bucket::text);
    IF state IS NULL AND o.org_id IS NOT NULL THEN
      SELECT * INTO b FROM store_buckets sb WHERE sb.id = item_bucket AND sb.org_id = p_org FOR UPDATE;
      IF FOUND THEN
        state := jsonb_build_object('row', to_jsonb(b), 'd_bytes', 0, 'd_objects', 0,
          'held_bytes', coalesce(held_by_bucket #> ARRAY[b.id::text, '0'], '0'),
          'held_objects', coalesce(held_by_bucket #> ARRAY[b.id::text, '1'], '0'));
        buckets := buckets || jsonb_build_object(item_bucket::text, state);
      END IF;
    END IF;
    BEGIN
      IF state IS NULL OR (state #>> '{row,suspended}')::boolean THEN
        RAISE EXCEPTION 'The specified bucket does not exist' USING ERRCODE = 'CPB01';
      END IF;
      released := NULL;
      IF item->>'release' IS NOT NULL THEN
        DELETE FROM store_reservations WHERE id = (item->>'release')::uuid RETURNING * INTO released;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'the reservation of this write was swept: its blob is garbage' USING ERRCODE = 'CPS01';
        END IF;
      END IF;
      cur := NULL;
      IF NOT (state #>> '{row,versioning}')::boolean THEN
        SELECT * INTO cur FROM store_versions sv WHERE sv.bucket_id = item_bucket AND sv.key = item->>'key' AND sv.version_id = 'null';
      END IF;
      -- Only an unversioned bucket replaces a version, and object lock keeps versioning on:
      -- checked all the same, as objects.ts does (assertMayDelete without bypassing governance).
      IF cur.bucket_id IS NOT NULL THEN
        IF cur.legal_hold THEN
          RAISE EXCEPTION 'The object version is under a legal hold' USING ERRCODE = 'CPL01';
        END IF;
        IF cur.lock_mode IS NOT NULL AND cur.lock_until > now() THEN
          RAISE EXCEPTION 'The object version is under % retention', cur.lock_mode USING ERRCODE = 'CPL01';
        END IF;
      END IF;
      d_bytes := (item #>> '{version,size_bytes}')::bigint - coalesce(cur.size_bytes, 0);
      d_objects := CASE WHEN cur.bucket_id IS NULL THEN 1 ELSE 0 END;
      -- The rows as this run has moved them, and the space others hold without this write's own.
      refusal := store_limits_refusal(
        to_jsonb(o) || jsonb_build_object('usage_bytes', o.usage_bytes + org_bytes, 'usage_objects', o.usage_objects + org_objects),
        (state->'row') || jsonb_build_object(
          'usage_bytes', (state #>> '{row,usage_bytes}')::bigint + (state->>'d_bytes')::bigint,
          'usage_objects', (state #>> '{row,usage_objects}')::bigint + (state->>'d_objects')::bigint),
        jsonb_build_object(
          'orgBytes', org_held_bytes - coalesce(released.bytes, 0), 'orgObjects', org_held_objects - coalesce(released.objects, 0),
          'bucketBytes', (state->>'held_bytes')::numeric - coalesce(released.bytes, 0),
          'bucketObjects', (state->>'held_objects')::numeric - coalesce(released.objects, 0)),
        d_bytes, d_objects);
      IF refusal IS NOT NULL THEN
        RAISE EXCEPTION USING MESSAGE = refusal, ERRCODE = 'CPQ01';
      END IF;
      freed := '{}';
      IF cur.bucket_id IS NOT NULL THEN
        SELECT coalesce(array_agg(segment->>'blob'), '{}') INTO freed FROM jsonb_array_elements(cur.segments) segment;
        DELETE FROM store_versions sv WHERE sv.bucket_id = cur.bucket_id AND sv.key = cur.key AND sv.version_id = 'null';
        INSERT INTO store_garbage (blob) SELECT unnest(freed) ON CONFLICT DO NOTHING;
      END IF;
      INSERT INTO store_versions (bucket_id, key, version_id, delete_marker, size_bytes, etag, content_type, headers, checksums, segments,
        tags, encryption, lock_mode, lock_until, legal_hold, acl)
      VALUES (item_bucket, item->>'key',
        CASE WHEN (state #>> '{row,versioning}')::boolean THEN item #>> '{version,version_id}' ELSE 'null' END, false,
        (item #>> '{version,size_bytes}')::bigint, item #>> '{version,etag}', item #>> '{version,content_type}',
        item #> '{version,headers}', item #> '{version,checksums}', item #> '{version,segments}', item #> '{version,tags}',
        nullif(item #> '{version,encryption}', 'null'::jsonb), NULL, NULL, false, nullif(item #> '{version,acl}', 'null'::jsonb))
      RETURNING * INTO v;
      -- Nothing of this item can fail from here: the counts take it.
      org_bytes := org_bytes + d_bytes;
      org_objects := org_objects + d_objects;
      org_held_bytes := org_held_bytes - coalesce(released.bytes, 0);
      org_held_objects := org_held_objects - coalesce(released.objects, 0);
      state := state || jsonb_build_object(
        'd_bytes', (state->>'d_bytes')::bigint + d_bytes, 'd_objects', (state->>'d_objects')::bigint + d_objects,
        'held_bytes', (state->>'held_bytes')::numeric - coalesce(released.bytes, 0),
        'held_objects', (state->>'held_objects')::numeric - coalesce(released.objects, 0));
      buckets := buckets || jsonb_build_object(item_bucket::text, state);
      outcomes := outcomes || jsonb_build_array(jsonb_build_object('committed',
        jsonb_build_object('version', to_jsonb(v), 'freed', to_jsonb(freed))));
    EXCEPTION WHEN OTHERS THEN
      outcomes := outcomes || jsonb_build_array(jsonb_build_object('code', SQLSTATE, 'message', SQLERRM));
    END;
  END LOOP;
  IF org_bytes <> 0 OR org_objects <> 0 THEN
    UPDATE store_orgs SET usage_bytes = usage_bytes + org_bytes, usage_objects = usage_objects + org_objects WHERE org_id = p_org;
  END IF;
  UPDATE store_buckets sb SET usage_bytes = sb.usage_bytes + (moved.value->>'d_bytes')::bigint,
                              usage_objects = sb.usage_objects + (moved.value->>'d_objects')::bigint
    FROM jsonb_each(buckets) moved
    WHERE sb.id = moved.key::uuid AND ((moved.value->>'d_bytes')::bigint <> 0 OR (moved.value->>'d_objects')::bigint <> 0);
  RETURN outcomes;
END
$$;

DROP FUNCTION store_commit_put(uuid, uuid, text, uuid, jsonb);
