import type { PoolClient } from '../../db/pool.ts';
import { StoreRefusal } from './refusals.ts';
import { bucketOf, num, versionOf, type StoredBucket, type StoredVersion } from './rows.ts';

/**
 * Quota checks of the write path. Every write takes the organization's row lock, then the
 * bucket's (always in that order), so that checks and usage changes of one organization are
 * serialized: concurrent writes cannot overshoot a limit together.
 */
export interface Locked {
  org: { usage_bytes: number; usage_objects: number; hard_bytes: number | null; max_objects: number | null; writes_suspended: boolean };
  bucket: StoredBucket;
  /** Read by `lockWithSnapshot` under the locks, in the same round trip (absent after `lockForWrite`). */
  snapshot?: Snapshot;
}

/** Space held by writes still streaming in and by parts of unfinished multipart uploads. */
export interface Held {
  orgBytes: number;
  orgObjects: number;
  bucketBytes: number;
  bucketObjects: number;
}

/** What a write reads once it holds the locks: the key's unversioned version and what others hold. */
export interface Snapshot {
  key: string | null;
  excludeUpload: string | null;
  current: StoredVersion | undefined;
  held: Held;
}

const lockedOrg = (org: Locked['org']): Locked['org'] => ({
  usage_bytes: num(org.usage_bytes),
  usage_objects: num(org.usage_objects),
  hard_bytes: org.hard_bytes === null ? null : num(org.hard_bytes),
  max_objects: org.max_objects === null ? null : num(org.max_objects),
  writes_suspended: org.writes_suspended,
});

export async function lockForWrite(tx: PoolClient, orgId: string, bucketId: string): Promise<Locked> {
  const orgs = await tx.query<Locked['org']>(
    'SELECT usage_bytes, usage_objects, hard_bytes, max_objects, writes_suspended FROM store_orgs WHERE org_id = $1 FOR UPDATE',
    [orgId],
  );
  const buckets = await tx.query<StoredBucket>('SELECT * FROM store_buckets WHERE id = $1 AND org_id = $2 FOR UPDATE', [bucketId, orgId]);
  const org = orgs.rows[0];
  const bucket = buckets.rows[0];
  if (!org || !bucket || bucket.suspended) throw new StoreRefusal('NoSuchBucket', 'The specified bucket does not exist');
  return { org: lockedOrg(org), bucket: bucketOf(bucket) };
}

/**
 * Whether a write failed because its reservation was swept (store_write_snapshot refuses it as it
 * commits, SQLSTATE CPS01: migrations/0940_swept_reservation_refused.sql). Another instance's sweep
 * takes a live instance's reservations only while that instance's lock connection is lost: an
 * outage of the database, not the write's fault. The write kept nothing, and sent again it
 * succeeds, so it is answered as an outage (503, retry), never as an internal error.
 */
export function isSweptReservation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'CPS01';
}

/**
 * `lockForWrite`, plus what the write then reads under the locks (the key's unversioned version
 * when `key` is given, and the space others hold), in one round trip: the database function
 * store_write_snapshot (migrations/0910_write_snapshot.sql) takes the same locks in the same
 * order and reads with a snapshot taken after them. `release`: the caller's own reservation,
 * deleted first (a committing write no longer holds space apart from what it commits).
 * `reserve`: a reservation inserted after the reads (not in `held`), in the same round trip; the
 * caller checks the limits before it commits, and a refusal rolls it back with the transaction.
 */
export async function lockWithSnapshot(
  tx: PoolClient,
  orgId: string,
  bucketId: string,
  options: {
    key?: string;
    excludeUpload?: string | null;
    release?: string;
    reserve?: { id: string; bytes: number; objects: number; blob: string; instance: number };
  } = {},
): Promise<Locked> {
  const key = options.key ?? null;
  const excludeUpload = options.excludeUpload ?? null;
  const { rows } = await tx.query<{ snapshot: SnapshotRow | null }>(
    'SELECT store_write_snapshot($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS snapshot',
    [
      orgId,
      bucketId,
      key,
      excludeUpload,
      options.release ?? null,
      options.reserve?.id ?? null,
      options.reserve?.bytes ?? null,
      options.reserve?.objects ?? null,
      options.reserve?.blob ?? null,
      options.reserve?.instance ?? null,
    ],
  );
  const row = rows[0]?.snapshot;
  if (!row || row.bucket.suspended) throw new StoreRefusal('NoSuchBucket', 'The specified bucket does not exist');
  return {
    org: lockedOrg(row.org),
    // Read as JSON: timestamps are text there.
    bucket: bucketOf({ ...row.bucket, created_at: new Date(row.bucket.created_at) }),
    snapshot: {
      key,
      excludeUpload,
      current: row.current ? versionOf({ ...row.current, last_modified: new Date(row.current.last_modified) }) : undefined,
      held: {
        orgBytes: num(row.held.orgBytes),
        orgObjects: num(row.held.orgObjects),
        bucketBytes: num(row.held.bucketBytes),
        bucketObjects: num(row.held.bucketObjects),
      },
    },
  };
}

interface SnapshotRow {
  org: Locked['org'];
  bucket: StoredBucket;
  current: StoredVersion | null;
  held: Held;
}

/** Space held by writes still streaming in and by parts of unfinished multipart uploads. */
export async function reservedSpace(tx: PoolClient, orgId: string, bucketId: string, excludeUpload: string | null = null): Promise<Held> {
  const { rows } = await tx.query<{ org_bytes: number; org_objects: number; bucket_bytes: number; bucket_objects: number }>(
    `SELECT coalesce(sum(bytes), 0)::bigint AS org_bytes, coalesce(sum(objects), 0)::bigint AS org_objects,
            coalesce(sum(bytes) FILTER (WHERE bucket_id = $2), 0)::bigint AS bucket_bytes,
            coalesce(sum(objects) FILTER (WHERE bucket_id = $2), 0)::bigint AS bucket_objects
     FROM (
       SELECT bucket_id, bytes, objects FROM store_reservations WHERE org_id = $1
       UNION ALL
       SELECT u.bucket_id, p.size_bytes, 0 FROM store_parts p JOIN store_uploads u USING (upload_id)
       JOIN store_buckets b ON b.id = u.bucket_id WHERE b.org_id = $1 AND u.upload_id IS DISTINCT FROM $3
     ) held`,
    [orgId, bucketId, excludeUpload],
  );
  const row = rows[0]!;
  return {
    orgBytes: num(row.org_bytes),
    orgObjects: num(row.org_objects),
    bucketBytes: num(row.bucket_bytes),
    bucketObjects: num(row.bucket_objects),
  };
}

/**
 * Refuses a write that would leave usage (plus what is already held) above a limit. `delta` is
 * the change this write makes (bytes and objects added, minus what it replaces). At or above
 * the organization's ceiling no write is taken at all, whatever it replaces: writes stop until
 * usage falls below it (deletes still work; they never come here).
 */
export function assertWithinLimits({ org, bucket }: Locked, held: Held, delta: { bytes: number; objects: number }): void {
  const refuse = (why: string): never => {
    throw new StoreRefusal('QuotaExceeded', why);
  };
  if (org.writes_suspended) refuse('Object storage of this organization is suspended: new writes are refused');
  if (bucket.max_size_bytes !== null && delta.bytes > 0 && bucket.usage_bytes + held.bucketBytes + delta.bytes > bucket.max_size_bytes)
    refuse(`The bucket's max_size_bytes (${bucket.max_size_bytes}) would be exceeded`);
  if (bucket.max_objects !== null && delta.objects > 0 && bucket.usage_objects + held.bucketObjects + delta.objects > bucket.max_objects)
    refuse(`The bucket's max_objects (${bucket.max_objects}) would be exceeded`);
  if (org.hard_bytes !== null) {
    if (org.usage_bytes >= org.hard_bytes) refuse(`The organization's storage ceiling (${org.hard_bytes} bytes) is reached`);
    if (delta.bytes > 0 && org.usage_bytes + held.orgBytes + delta.bytes > org.hard_bytes)
      refuse(`The organization's storage ceiling (${org.hard_bytes} bytes) would be exceeded`);
  }
  if (org.max_objects !== null && delta.objects > 0 && org.usage_objects + held.orgObjects + delta.objects > org.max_objects)
    refuse(`The organization's object cap (${org.max_objects}) would be exceeded`);
}

/** Moves the running usage of a bucket and its organization (one statement: both rows are locked by the caller). */
export async function addUsage(tx: PoolClient, orgId: string, bucketId: string, bytes: number, objects: number): Promise<void> {
  if (bytes === 0 && objects === 0) return;
  await tx.query(
    `WITH org AS (UPDATE store_orgs SET usage_bytes = usage_bytes + $3, usage_objects = usage_objects + $4 WHERE org_id = $1)
     UPDATE store_buckets SET usage_bytes = usage_bytes + $3, usage_objects = usage_objects + $4 WHERE id = $2`,
    [orgId, bucketId, bytes, objects],
  );
}
