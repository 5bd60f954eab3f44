import { SYSTEM_ACTOR } from '../../../core/principal.ts';
import { recordAudit } from '../../../core/audit.ts';
import { withTransaction } from '../../../db/pool.ts';
import type { AreaDependencies, BackgroundTask } from '../../area.ts';
import type { Queryable } from '../../../db/pool.ts';
import type { BucketReport } from '../../../drivers/object-store.ts';
import {
  bucketsDueForPurge,
  bucketsOfOrganization,
  deleteBucketRow,
  recordBucketObservation,
  toBucketOut,
  updateBucket,
  type BucketRow,
} from './bucket-rows.ts';
import { announceQuotaWarnings } from '../quotas/quota-warnings.ts';
import { desiredLimits, organizationsWithStorage, recordOrganizationObservation } from '../quotas/s3-quota.ts';

/** Purges per run of the purge task; the rest wait for the next run. */
const PURGE_BATCH = 100;
/** Organizations reconciled at once: the store's latency adds up over many of them. */
const RECONCILE_CONCURRENCY = 4;

/**
 * The reconciler: for every organization with object storage, reads what the object store
 * holds (buckets, usage, the enforced ceiling) into the observed values and usage samples, and
 * hands the store the organization's limits (ceiling, object cap, writes suspended) when it
 * enforces others.
 */
export function storageReconciler({ pool, drivers, clock, config, log }: AreaDependencies): BackgroundTask {
  const objectStore = drivers.objectStore;

  async function reconcileOrganization(orgId: string): Promise<void> {
    // Stamped before the store is asked: an operation reporting after this is newer.
    const observedAt = clock.now();
    const report = await objectStore.describeOrganization(orgId);
    const held = new Map(report.buckets.map((bucket) => [bucket.bucketId, bucket]));

    const desired = await desiredLimits(pool, orgId);
    const enforced =
      report.enforced?.hardBytes === desired.hardBytes &&
      report.enforced.maxObjects === desired.maxObjects &&
      report.enforced.writesSuspended === desired.writesSuspended
        ? report.enforced
        : await objectStore.setOrganizationQuota({ orgId, ...desired });

    await withTransaction(pool, async (tx) => {
      for (const bucket of await bucketsOfOrganization(tx, orgId)) {
        const seen = held.get(bucket.id) ?? null;
        // A bucket whose creation has not run yet is not expected in the store: nothing to observe.
        if (seen === null && bucket.state === 'creating') continue;
        await recordBucketObservation(tx, bucket.id, seen, observedAt);
        await recordDirectChange(tx, bucket, seen);
      }
      await recordOrganizationObservation(tx, orgId, report.usage, enforced, observedAt);
      await announceQuotaWarnings(tx, orgId, report.usage.bytes, desired.hardBytes);
    });
  }

  return {
    name: 'storage-reconciler',
    intervalMs: config.intervals.reconcileMs,
    shared: true,
    async run(signal) {
      const organizations = await organizationsWithStorage(pool);
      for (let start = 0; start < organizations.length && !signal.aborted; start += RECONCILE_CONCURRENCY) {
        await Promise.all(
          organizations
            .slice(start, start + RECONCILE_CONCURRENCY)
            .map((orgId) =>
              reconcileOrganization(orgId).catch((error: unknown) =>
                log.warn({ reason: (error as Error).message, org_id: orgId }, 'reconciling object storage failed; tried again next run'),
              ),
            ),
        );
      }
    },
  };
}

/**
 * Records what was changed in the object store behind the platform's back (a client talking to
 * the store directly, as on the rgw driver, or its operator), so that the API and the store never
 * disagree for long: an active bucket the store no longer holds goes to `error` (it can then be
 * deleted, or given a quota, which creates it again), and versioning switched in the store becomes
 * the desired value. Each leaves an audit event by the platform. Only what two passes in a row
 * saw, with no change of the bucket's own since the first: a change in flight is not one of these.
 */
async function recordDirectChange(tx: Queryable, bucket: BucketRow, seen: BucketReport | null): Promise<void> {
  const settled = bucket.state === 'active' && bucket.observed_at !== null && bucket.updated_at < bucket.observed_at;
  if (!settled) return;
  const record = async (action: string, changes: Parameters<typeof updateBucket>[2]) => {
    const after = await updateBucket(tx, bucket.id, changes, 'active');
    if (!after) return;
    await recordAudit(tx, {
      orgId: bucket.org_id,
      action,
      resourceType: 'bucket',
      resourceId: bucket.id,
      before: toBucketOut(bucket),
      after: toBucketOut(after),
      actor: SYSTEM_ACTOR,
      result: 'succeeded',
    });
  };
  if (seen === null && bucket.observed_exists === false) await record('bucket.observed_missing', { state: 'error' });
  else if (seen && seen.versioning !== bucket.versioning && bucket.observed_versioning === seen.versioning)
    await record('bucket.set_versioning', { versioning: seen.versioning });
}

/**
 * Purges soft-deleted buckets whose retention is over: removed from the object store, then their
 * record goes (which frees the name), with an audit event by the platform.
 */
export function storagePurge({ pool, drivers, clock, config, log }: AreaDependencies): BackgroundTask {
  return {
    name: 'storage-purge',
    intervalMs: config.intervals.reconcileMs,
    async run(signal) {
      for (const bucket of await bucketsDueForPurge(pool, clock.now(), PURGE_BATCH)) {
        if (signal.aborted) return;
        try {
          await drivers.objectStore.purgeBucket({ orgId: bucket.org_id, bucketId: bucket.id, name: bucket.name });
          await withTransaction(pool, async (tx) => {
            const purged = await deleteBucketRow(tx, bucket.id, 'soft_deleted');
            if (!purged) return; // restored meanwhile, or purged by another process
            await recordAudit(tx, {
              orgId: purged.org_id,
              action: 'bucket.purge',
              resourceType: 'bucket',
              resourceId: purged.id,
              before: toBucketOut(purged),
              actor: SYSTEM_ACTOR,
              result: 'succeeded',
            });
          });
        } catch (error) {
          log.warn({ reason: (error as Error).message, bucket_id: bucket.id }, 'purging a bucket failed; tried again next run');
        }
      }
    },
  };
}
