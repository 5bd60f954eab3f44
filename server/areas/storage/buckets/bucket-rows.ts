import type { components } from '../../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Queryable } from '../../../db/pool.ts';
import { updateRow } from '../../../db/update-row.ts';
import type { BucketReport } from '../../../drivers/object-store.ts';

// The buckets table: rows, their API shape, and every query on them.

export type BucketOut = components['schemas']['BucketOut'];
export type BucketState = BucketOut['state'];
export type BucketQuota = components['schemas']['BucketQuotaOut'];

export interface BucketRow {
  id: string;
  org_id: string;
  name: string;
  state: BucketState;
  versioning: boolean;
  max_objects: number | null;
  max_size_bytes: number | null;
  observed_versioning: boolean | null;
  observed_exists: boolean | null;
  observed_quota: BucketQuota | null;
  observed_at: Date | null;
  usage_bytes: number | null;
  usage_objects: number | null;
  operation_id: string | null;
  soft_deleted_at: Date | null;
  purge_after: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const quotaOf = (row: Pick<BucketRow, 'max_objects' | 'max_size_bytes'>): BucketQuota => ({
  max_objects: row.max_objects,
  max_size_bytes: row.max_size_bytes,
});

export const toBucketOut = (row: BucketRow): BucketOut => ({
  id: row.id,
  name: row.name,
  state: row.state,
  versioning: row.versioning,
  quota: quotaOf(row),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  observed_versioning: row.observed_versioning,
  observed_exists: row.observed_exists,
  observed_quota: row.observed_quota,
  observed_at: isoOrNull(row.observed_at),
  operation_id: row.operation_id,
  soft_deleted_at: isoOrNull(row.soft_deleted_at),
  purge_after: isoOrNull(row.purge_after),
});

/**
 * A soft-deleted bucket past its purge_after is purged, whether or not the purge task has
 * removed its row yet: reads and restores treat it as gone ($now is the time of the request).
 */
const NOT_PURGED = (now: string) => `NOT (state = 'soft_deleted' AND purge_after <= ${now})`;

export async function findBucket(
  db: Queryable,
  orgId: string,
  bucketId: string,
  now: Date,
  options: { forUpdate?: boolean } = {},
): Promise<BucketRow | undefined> {
  const { rows } = await db.query<BucketRow>(
    `SELECT * FROM buckets WHERE org_id = $1 AND id = $2 AND ${NOT_PURGED('$3')} ${options.forUpdate ? 'FOR UPDATE' : ''}`,
    [orgId, bucketId, now],
  );
  return rows[0];
}

/** The bucket holding a name in the organization, soft-deleted ones included until purged. */
export async function findBucketByName(db: Queryable, orgId: string, name: string): Promise<BucketRow | undefined> {
  const { rows } = await db.query<BucketRow>('SELECT * FROM buckets WHERE org_id = $1 AND name = $2', [orgId, name]);
  return rows[0];
}

/** The record the operation engine works on (the operation names the organization). */
export async function bucketOfOperation(db: Queryable, orgId: string, bucketId: string): Promise<BucketRow | undefined> {
  const { rows } = await db.query<BucketRow>('SELECT * FROM buckets WHERE org_id = $1 AND id = $2', [orgId, bucketId]);
  return rows[0];
}

/** A page of the organization's buckets (soft-deleted ones until purged), oldest first. */
export function bucketsPage(db: Queryable, orgId: string, now: Date, query: { cursor?: string; limit?: number }) {
  return keysetPage(
    db,
    {
      name: 'buckets',
      from: `buckets WHERE org_id = $1 AND ${NOT_PURGED('$2')}`,
      params: [orgId, now],
      sortColumn: 'created_at',
      order: 'oldest first',
    },
    query,
    toBucketOut,
  );
}

export async function insertBucket(db: Queryable, bucket: { id: string; orgId: string; name: string; versioning: boolean }): Promise<void> {
  await db.query(`INSERT INTO buckets (id, org_id, name, state, versioning) VALUES ($1, $2, $3, 'creating', $4)`, [
    bucket.id,
    bucket.orgId,
    bucket.name,
    bucket.versioning,
  ]);
}

/** The desired values and state a change may set. */
export interface BucketChanges {
  state?: BucketState;
  versioning?: boolean;
  operation_id?: string;
  max_objects?: number | null;
  max_size_bytes?: number | null;
  soft_deleted_at?: Date | null;
  purge_after?: Date | null;
}

const CHANGEABLE: ReadonlyArray<keyof BucketChanges> = [
  'state',
  'versioning',
  'operation_id',
  'max_objects',
  'max_size_bytes',
  'soft_deleted_at',
  'purge_after',
];

/**
 * Changes a bucket's desired values or state (and so its updated_at). With `onlyIn`, only while
 * the bucket is in that state: an operation finishing late never undoes a later change.
 * Returns the updated row, or undefined when nothing matched.
 */
export async function updateBucket(
  db: Queryable,
  bucketId: string,
  changes: BucketChanges,
  onlyIn?: BucketState,
): Promise<BucketRow | undefined> {
  return updateRow<BucketRow>(db, 'buckets', bucketId, changes, CHANGEABLE, onlyIn);
}

/** Removes a bucket record: a create cancelled before it ran, or a purge. */
export async function deleteBucketRow(db: Queryable, bucketId: string, onlyIn: BucketState): Promise<BucketRow | undefined> {
  const { rows } = await db.query<BucketRow>('DELETE FROM buckets WHERE id = $1 AND state = $2 RETURNING *', [bucketId, onlyIn]);
  return rows[0];
}

/**
 * Records what the object store reported about a bucket at `observedAt` (a null report: the
 * store does not hold it). An observation older than the one recorded is dropped, so that a
 * slow reconciler pass cannot overwrite what an operation has just reported.
 */
export async function recordBucketObservation(
  db: Queryable,
  bucketId: string,
  report: BucketReport | null,
  observedAt: Date,
): Promise<void> {
  await db.query(
    `UPDATE buckets SET observed_exists = $2, observed_versioning = $3, observed_quota = $4, observed_at = $5,
            usage_bytes = $6, usage_objects = $7
     WHERE id = $1 AND (observed_at IS NULL OR observed_at <= $5)`,
    [
      bucketId,
      report !== null,
      report?.versioning ?? null,
      report ? JSON.stringify({ max_objects: report.quota.maxObjects, max_size_bytes: report.quota.maxSizeBytes }) : null,
      observedAt,
      report?.usage.bytes ?? null,
      report?.usage.objects ?? null,
    ],
  );
}

/** Every bucket of an organization the store should hold (for the reconciler). */
export async function bucketsOfOrganization(db: Queryable, orgId: string): Promise<BucketRow[]> {
  // By id: the reconciler updates them in this order, the order every transaction that locks
  // several buckets takes (engine/executor.ts lockingRows).
  const { rows } = await db.query<BucketRow>('SELECT * FROM buckets WHERE org_id = $1 ORDER BY id', [orgId]);
  return rows;
}

/** Soft-deleted buckets whose retention is over. */
export async function bucketsDueForPurge(db: Queryable, now: Date, limit: number): Promise<BucketRow[]> {
  const { rows } = await db.query<BucketRow>(
    `SELECT * FROM buckets WHERE state = 'soft_deleted' AND purge_after <= $1 ORDER BY purge_after LIMIT $2`,
    [now, limit],
  );
  return rows;
}
