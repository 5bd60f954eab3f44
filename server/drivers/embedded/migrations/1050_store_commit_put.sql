-- A PUT's commit in one statement. One organization's writes commit one after another under its
-- row lock (quota.ts), so a commit's round trips are what bounds the organization's small PUTs:
-- under load each one waits for the S3 thread's turn, about 2 ms here, while the database works
-- for a fifth of that. A plain PUT (no condition, no retention of its own) now takes the locks,
-- releases its reservation, checks the limits, replaces the unversioned key's version and moves
-- the usage in one call, as objects.ts `commitVersion` does in several.
--
-- The limits are those of quota.ts `assertWithinLimits`, with the same reasons (a test holds the
-- two to the same answers). A refusal raises, so that the write's savepoint rolls it back alone:
--   CPB01  the bucket is not there (NoSuchBucket)
--   CPQ01  a limit refuses the write (QuotaExceeded), the reason as the message
--   CPL01  the version it would replace is kept by object lock (AccessDenied)
CREATE FUNCTION store_limits_refusal(o jsonb, b jsonb, held jsonb, d_bytes bigint, d_objects bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF (o->>'writes_suspended')::boolean THEN
    RETURN 'Object storage of this organization is suspended: new writes are refused';
  END IF;
  IF b->>'max_size_bytes' IS NOT NULL AND d_bytes > 0
     AND (b->>'usage_bytes')::numeric + (held->>'bucketBytes')::numeric + d_bytes > (b->>'max_size_bytes')::numeric THEN
    RETURN format('The bucket''s max_size_bytes (%s) would be exceeded', b->>'max_size_bytes');
  END IF;
  IF b->>'max_objects' IS NOT NULL AND d_objects > 0
     AND (b->>'usage_objects')::numeric + (held->>'bucketObjects')::numeric + d_objects > (b->>'max_objects')::numeric THEN
    RETURN format('The bucket''s max_objects (%s) would be exceeded', b->>'max_objects');
  END IF;
  IF o->>'hard_bytes' IS NOT NULL THEN
    IF (o->>'usage_bytes')::numeric >= (o->>'hard_bytes')::numeric THEN
      RETURN format('The organization''s storage ceiling (%s bytes) is reached', o->>'hard_bytes');
    END IF;
    IF d_bytes > 0 AND (o->>'usage_bytes')::numeric + (held->>'orgBytes')::numeric + d_bytes > (o->>'hard_bytes')::numeric THEN
      RETURN format('The organization''s storage ceiling (%s bytes) would be exceeded', o->>'hard_bytes');
    END IF;
  END IF;
  IF o->>'max_objects' IS NOT NULL AND d_objects > 0
     AND (o->>'usage_objects')::numeric + (held->>'orgObjects')::numeric + d_objects > (o->>'max_objects')::numeric THEN
    RETURN format('The organization''s object cap (%s) would be exceeded', o->>'max_objects');
  END IF;
  RETURN NULL;
END
$$;

-- p_version: size_bytes, etag, content_type, headers, checksums, segments, tags, encryption, acl,
-- and version_id (used when the bucket is versioned; an unversioned bucket's version is 'null').
CREATE FUNCTION store_commit_put(p_org uuid, p_bucket uuid, p_key text, p_release uuid, p_version jsonb)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  snap jsonb;
  cur jsonb;
  d_bytes bigint;
  d_objects integer;
  refusal text;
  freed text[] := '{}';
  v store_versions;
BEGIN
  snap := store_write_snapshot(p_org, p_bucket, p_key, NULL, p_release, NULL, NULL, NULL, NULL, NULL);
  IF snap IS NULL OR (snap #>> '{bucket,suspended}')::boolean THEN
    RAISE EXCEPTION 'The specified bucket does not exist' USING ERRCODE = 'CPB01';
  END IF;
  cur := snap->'current';
  IF jsonb_typeof(cur) <> 'object' THEN cur := NULL; END IF;
  -- Only an unversioned bucket replaces a version, and object lock keeps versioning on: checked
  -- all the same, as objects.ts does (assertMayDelete without bypassing governance).
  IF cur IS NOT NULL THEN
    IF (cur->>'legal_hold')::boolean THEN
      RAISE EXCEPTION 'The object version is under a legal hold' USING ERRCODE = 'CPL01';
    END IF;
    IF cur->>'lock_mode' IS NOT NULL AND (cur->>'lock_until')::timestamptz > now() THEN
      RAISE EXCEPTION 'The object version is under % retention', cur->>'lock_mode' USING ERRCODE = 'CPL01';
    END IF;
  END IF;
  d_bytes := (p_version->>'size_bytes')::bigint - coalesce((cur->>'size_bytes')::bigint, 0);
  d_objects := CASE WHEN cur IS NULL THEN 1 ELSE 0 END;
  refusal := store_limits_refusal(snap->'org', snap->'bucket', snap->'held', d_bytes, d_objects);
  IF refusal IS NOT NULL THEN
    RAISE EXCEPTION USING MESSAGE = refusal, ERRCODE = 'CPQ01';
  END IF;
  IF cur IS NOT NULL THEN
    SELECT coalesce(array_agg(segment->>'blob'), '{}') INTO freed FROM jsonb_array_elements(cur->'segments') segment;
    DELETE FROM store_versions WHERE bucket_id = p_bucket AND key = p_key AND version_id = 'null';
    INSERT INTO store_garbage (blob) SELECT unnest(freed) ON CONFLICT DO NOTHING;
  END IF;
  UPDATE store_orgs SET usage_bytes = usage_bytes + d_bytes, usage_objects = usage_objects + d_objects WHERE org_id = p_org;
  UPDATE store_buckets SET usage_bytes = usage_bytes + d_bytes, usage_objects = usage_objects + d_objects WHERE id = p_bucket;
  INSERT INTO store_versions (bucket_id, key, version_id, delete_marker, size_bytes, etag, content_type, headers, checksums, segments,
    tags, encryption, lock_mode, lock_until, legal_hold, acl)
  VALUES (p_bucket, p_key, CASE WHEN (snap #>> '{bucket,versioning}')::boolean THEN p_version->>'version_id' ELSE 'null' END, false,
    (p_version->>'size_bytes')::bigint, p_version->>'etag', p_version->>'content_type', p_version->'headers', p_version->'checksums',
    p_version->'segments', p_version->'tags', nullif(p_version->'encryption', 'null'::jsonb), NULL, NULL, false,
    nullif(p_version->'acl', 'null'::jsonb))
  RETURNING * INTO v;
  RETURN jsonb_build_object('version', to_jsonb(v), 'freed', to_jsonb(freed));
END
$$;

-- The commits of a run of plain PUTs of one organization, in order, each alone: a refusal or an
-- error of one (its SQLSTATE and message) rolls back its own subtransaction and no other's. The
-- whole run is one round trip (org-write-groups.ts, `Batch`). p_items: [{bucket_id, key, release,
-- version}]; the answer: per item, in order, {committed: store_commit_put's answer} or {code, message}.
CREATE FUNCTION store_commit_puts(p_org uuid, p_items jsonb)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  item jsonb;
  outcomes jsonb := '[]';
BEGIN
  FOR item IN SELECT value FROM jsonb_array_elements(p_items) WITH ORDINALITY ORDER BY ordinality LOOP
    BEGIN
      outcomes := outcomes || jsonb_build_array(jsonb_build_object('committed',
        store_commit_put(p_org, (item->>'bucket_id')::uuid, item->>'key', (item->>'release')::uuid, item->'version')));
    EXCEPTION WHEN OTHERS THEN
      outcomes := outcomes || jsonb_build_array(jsonb_build_object('code', SQLSTATE, 'message', SQLERRM));
    END;
  END LOOP;
  RETURN outcomes;
END
$$;
