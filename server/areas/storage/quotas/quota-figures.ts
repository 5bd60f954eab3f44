import type { components } from '../../../../generated/openapi.ts';
import type { Queryable } from '../../../db/pool.ts';
import { DEFAULT_HARD_BYTES, PLAN_MAX_OBJECTS, softBytesOf } from '../storage-limits.ts';

// An organization's object-storage figures: bucket slots and the storage ceiling. An
// organization that never used object storage has no storage rows: it gets the defaults.

type QuotaOut = components['schemas']['QuotaOut'];

export interface BucketSlots {
  /** Buckets holding a slot: every bucket that is not soft-deleted. */
  used: number;
  /** The effective ceiling: the live override when one is set, otherwise the plan's value. */
  max: number;
}

export async function bucketSlots(db: Queryable, orgId: string): Promise<BucketSlots> {
  return (await slotsOf(db, orgId)) ?? { used: 0, max: 0 };
}

/** The organization's storage ceiling (hard_bytes): the one set with setQuota, or the default. */
export async function ceilingBytes(db: Queryable, orgId: string): Promise<number> {
  const { rows } = await db.query<{ hard_bytes: number | null }>('SELECT hard_bytes FROM storage_quotas WHERE org_id = $1', [orgId]);
  return rows[0]?.hard_bytes ?? DEFAULT_HARD_BYTES;
}

/** The quota figures of the organization context; null for an unknown organization. */
export async function storageQuotaOf(db: Queryable, orgId: string): Promise<QuotaOut | null> {
  const slots = await slotsOf(db, orgId);
  if (!slots) return null;
  const hardBytes = await ceilingBytes(db, orgId);
  return {
    buckets_used: slots.used,
    hard_bytes: hardBytes,
    max_buckets: slots.max,
    max_objects: PLAN_MAX_OBJECTS,
    soft_bytes: softBytesOf(hardBytes),
  };
}

async function slotsOf(db: Queryable, orgId: string): Promise<BucketSlots | undefined> {
  const { rows } = await db.query<BucketSlots>(
    `SELECT (SELECT count(*) FROM buckets b WHERE b.org_id = o.id AND b.state <> 'soft_deleted')::int AS used,
            coalesce(o.max_buckets_override, o.plan_max_buckets) AS max
     FROM orgs o WHERE o.id = $1`,
    [orgId],
  );
  return rows[0];
}
