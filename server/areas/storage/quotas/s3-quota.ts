import type { components } from '../../../../generated/openapi.ts';
import type { Queryable } from '../../../db/pool.ts';
import type { EnforcedQuota, StorageUsage } from '../../../drivers/object-store.ts';
import { DEFAULT_HARD_BYTES, PLAN_MAX_OBJECTS, softBytesOf } from '../storage-limits.ts';

// The storage_quotas table: the organization's ceiling, what the object store confirmed
// enforcing, and the latest usage sample; and the S3 quota response made from them.

export type S3QuotaOut = components['schemas']['S3QuotaOut'];

interface QuotaRow {
  hard_bytes: number | null;
  enforced_bytes: number | null;
  enforced_objects: number | null;
  usage_bytes: number | null;
  usage_objects: number | null;
  /** Object storage suspended: the enrollment, or the billing account. */
  suspended: boolean;
}

const QUOTA_ROW = `
  SELECT q.hard_bytes, q.enforced_bytes, q.enforced_objects, q.usage_bytes, q.usage_objects,
         (o.enrollment_state = 'suspended' OR a.state IS NOT DISTINCT FROM 'suspended') AS suspended
  FROM orgs o
  LEFT JOIN storage_quotas q ON q.org_id = o.id
  LEFT JOIN billing_accounts a ON a.org_id = o.id`;

/** The organization-wide quota as getS3Quota shows it (`warning` is for setQuota's response). */
export async function s3QuotaOf(db: Queryable, orgId: string, warning: S3QuotaOut['warning'] = null): Promise<S3QuotaOut> {
  const { rows } = await db.query<QuotaRow>(`${QUOTA_ROW} WHERE o.id = $1`, [orgId]);
  const row = rows[0];
  const capBytes = row?.hard_bytes ?? DEFAULT_HARD_BYTES;
  const usageBytes = row?.usage_bytes ?? null;
  return {
    cap_bytes: capBytes,
    cap_objects: PLAN_MAX_OBJECTS,
    soft_bytes: softBytesOf(capBytes),
    enforced_bytes: row?.enforced_bytes ?? null,
    enforced_objects: row?.enforced_objects ?? null,
    usage_bytes: usageBytes,
    usage_objects: row?.usage_objects ?? null,
    frozen_reason: frozenReason(row?.suspended ?? false, usageBytes, capBytes),
    warning,
  };
}

/**
 * Why new writes stop: object storage suspended (the contract's only reason for that is a
 * suspended billing account), or measured usage at or above the ceiling.
 */
function frozenReason(suspended: boolean, usageBytes: number | null, capBytes: number): S3QuotaOut['frozen_reason'] {
  if (suspended) return 'billing_suspended';
  if (usageBytes !== null && usageBytes >= capBytes) return 'over_ceiling';
  return null;
}

/** The limits the object store should enforce for the organization. */
export async function desiredLimits(db: Queryable, orgId: string): Promise<EnforcedQuota> {
  const { rows } = await db.query<QuotaRow>(`${QUOTA_ROW} WHERE o.id = $1`, [orgId]);
  return {
    hardBytes: rows[0]?.hard_bytes ?? DEFAULT_HARD_BYTES,
    maxObjects: PLAN_MAX_OBJECTS,
    writesSuspended: rows[0]?.suspended ?? false,
  };
}

/** Sets the organization's ceiling (hard_bytes). */
export async function setCeiling(db: Queryable, orgId: string, hardBytes: number): Promise<void> {
  await db.query(
    `INSERT INTO storage_quotas (org_id, hard_bytes) VALUES ($1, $2)
     ON CONFLICT (org_id) DO UPDATE SET hard_bytes = EXCLUDED.hard_bytes, updated_at = now()`,
    [orgId, hardBytes],
  );
}

/** Records a usage sample and, when reported, the ceiling the object store enforces. */
export async function recordOrganizationObservation(
  db: Queryable,
  orgId: string,
  usage: StorageUsage,
  enforced: EnforcedQuota | null,
  measuredAt: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO storage_quotas (org_id, usage_bytes, usage_objects, usage_measured_at, enforced_bytes, enforced_objects)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (org_id) DO UPDATE SET usage_bytes = EXCLUDED.usage_bytes, usage_objects = EXCLUDED.usage_objects,
       usage_measured_at = EXCLUDED.usage_measured_at, enforced_bytes = EXCLUDED.enforced_bytes, enforced_objects = EXCLUDED.enforced_objects
     WHERE storage_quotas.usage_measured_at IS NULL OR storage_quotas.usage_measured_at <= EXCLUDED.usage_measured_at`,
    [orgId, usage.bytes, usage.objects, measuredAt, enforced?.hardBytes ?? null, enforced?.maxObjects ?? null],
  );
}

/** Organizations the object store holds something for, or whose ceiling was set. */
export async function organizationsWithStorage(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ org_id: string }>('SELECT org_id FROM buckets UNION SELECT org_id FROM storage_quotas');
  return rows.map((row) => row.org_id);
}
