import type { Clock } from '../../../core/clock.ts';
import type { Queryable } from '../../../db/pool.ts';
import type { BucketReport, ObjectStoreDriver } from '../../../drivers/object-store.ts';
import { lockingRows, type Executor, type Executors } from '../../../engine/executor.ts';
import type { OperationRow } from '../../../engine/operation-record.ts';
import {
  bucketOfOperation,
  deleteBucketRow,
  recordBucketObservation,
  updateBucket,
  type BucketQuota,
  type BucketRow,
  type BucketState,
} from './bucket-rows.ts';
import { SOFT_DELETE_RETENTION_MS } from '../storage-limits.ts';
import { desiredLimits } from '../quotas/s3-quota.ts';

/** What a bucket operation brings back: the store's report, and when it was made. */
interface BucketOutcome {
  report: BucketReport;
  observedAt: Date;
}

/**
 * The executors of the four bucket operation types. `perform` makes the object store
 * match the bucket's desired values as they are when it runs (so a repeated attempt,
 * or a later change queued behind it, converges on the latest); `succeeded` records the
 * store's report as the observed values and moves the state on; `failed` leaves the resource
 * where a user can act on it (in `error` when the store may not hold what was asked, back where
 * it was when the store still holds it); `cancelled` undoes what the request changed. A state
 * move applies only while the resource is still in the state the request left it in.
 */
export function bucketExecutors(
  pool: Queryable,
  objectStore: ObjectStoreDriver,
  clock: Clock,
): Executors<'bucket.create' | 'bucket.delete' | 'bucket.restore' | 'bucket.quota'> {
  const bucketOf = async (operation: OperationRow): Promise<BucketRow> => {
    const bucket = await bucketOfOperation(pool, operation.org_id, operation.resource_id);
    // Only a cancel (before any attempt) or a purge (of a soft-deleted bucket) removes a row.
    if (!bucket) throw new Error(`bucket ${operation.resource_id} of ${operation.type} has no record`);
    return bucket;
  };
  const addressOf = (bucket: BucketRow) => ({ orgId: bucket.org_id, bucketId: bucket.id, name: bucket.name });
  const observed = async (report: Promise<BucketReport>): Promise<BucketOutcome> => ({ report: await report, observedAt: clock.now() });

  const quotaSpec = (bucket: BucketRow) => ({ maxObjects: bucket.max_objects, maxSizeBytes: bucket.max_size_bytes });
  const previousState = (operation: OperationRow) => (operation.payload as { previous_state?: BucketState }).previous_state;

  /** Gives the bucket back the state it had before the operation's request, if it is still `from`. */
  const putBack = (from: BucketState) => async (tx: Queryable, operation: OperationRow) =>
    void (await updateBucket(tx, operation.resource_id, { state: previousState(operation) ?? 'active' }, from));

  /** A bucket operation that records the store's report and moves the bucket from `from` to `to`. */
  const bucketExecutor = (
    from: BucketState,
    to: BucketState,
    perform: (bucket: BucketRow, operation: OperationRow) => Promise<BucketReport>,
    failed: (tx: Queryable, operation: OperationRow) => Promise<void>,
    cancelled: (tx: Queryable, operation: OperationRow) => Promise<void>,
    extraOnSuccess: () => Partial<Pick<BucketRow, 'soft_deleted_at' | 'purge_after'>> = () => ({}),
  ): Executor<BucketOutcome> => ({
    async perform(operation) {
      return observed(perform(await bucketOf(operation), operation));
    },
    async succeeded(tx, operation, outcome) {
      await recordBucketObservation(tx, operation.resource_id, outcome.report, outcome.observedAt);
      await updateBucket(tx, operation.resource_id, { state: to, ...extraOnSuccess() }, from);
    },
    failed: (tx, operation) => failed(tx, operation),
    cancelled,
  });

  // A creation that failed leaves the bucket in error: it can then be deleted, or given a quota
  // (which creates it in the store after all).
  const createBucket = bucketExecutor(
    'creating',
    'active',
    async (bucket) => {
      const report = await objectStore.createBucket({ ...addressOf(bucket), versioning: bucket.versioning, quota: quotaSpec(bucket) });
      // The organization's limits reach the store with its first bucket, not at the reconciler's
      // next pass; should this fail, that pass hands them over.
      await objectStore
        .setOrganizationQuota({ orgId: bucket.org_id, ...(await desiredLimits(pool, bucket.org_id)) })
        .catch(() => undefined);
      return report;
    },
    async (tx, operation) => void (await updateBucket(tx, operation.resource_id, { state: 'error' }, 'creating')),
    // Never created: the bucket goes, and with it its name and slot.
    async (tx, operation) => void (await deleteBucketRow(tx, operation.resource_id, 'creating')),
  );

  /**
   * Soft delete: the store keeps the bucket but serves nothing from it. A bucket the store never
   * held (its creation failed) has nothing to keep: its record goes, with its name and slot. A
   * delete that fails leaves the bucket as it was (the store still holds it).
   */
  const deleteBucket: Executor<BucketOutcome | { gone: true }> = {
    async perform(operation) {
      const bucket = await bucketOf(operation);
      if ((await objectStore.describeBucket(addressOf(bucket))) === null) return { gone: true };
      return observed(objectStore.suspendBucket(addressOf(bucket)));
    },
    async succeeded(tx, operation, outcome) {
      if ('gone' in outcome) {
        await deleteBucketRow(tx, operation.resource_id, 'deleting');
        return;
      }
      await recordBucketObservation(tx, operation.resource_id, outcome.report, outcome.observedAt);
      const now = clock.now();
      await updateBucket(
        tx,
        operation.resource_id,
        { state: 'soft_deleted', soft_deleted_at: now, purge_after: new Date(now.getTime() + SOFT_DELETE_RETENTION_MS) },
        'deleting',
      );
    },
    failed: putBack('deleting'),
    cancelled: putBack('deleting'),
  };

  /** A restore that fails or is cancelled leaves the bucket soft-deleted, as it was. */
  const keepSoftDeleted = async (tx: Queryable, operation: OperationRow) => {
    const payload = operation.payload as { soft_deleted_at: string; purge_after: string };
    await updateBucket(
      tx,
      operation.resource_id,
      { state: 'soft_deleted', soft_deleted_at: new Date(payload.soft_deleted_at), purge_after: new Date(payload.purge_after) },
      'creating',
    );
  };
  const restoreBucket = bucketExecutor(
    'creating',
    'active',
    (bucket) => objectStore.resumeBucket(addressOf(bucket)),
    keepSoftDeleted,
    keepSoftDeleted,
  );

  /**
   * The caps as they are when the attempt runs (a later change converges on the latest). On a
   * bucket in error the store may not hold it: it is created first (idempotent by bucket id).
   * Success makes the bucket active; failure leaves it in error, the desired caps as requested.
   */
  const setBucketQuota: Executor<BucketOutcome> = {
    async perform(operation) {
      const bucket = await bucketOf(operation);
      if (previousState(operation) === 'error') {
        await objectStore.createBucket({ ...addressOf(bucket), versioning: bucket.versioning, quota: quotaSpec(bucket) });
      }
      return observed(objectStore.setBucketQuota({ ...addressOf(bucket), quota: quotaSpec(bucket) }));
    },
    async succeeded(tx, operation, outcome) {
      await recordBucketObservation(tx, operation.resource_id, outcome.report, outcome.observedAt);
      await updateBucket(tx, operation.resource_id, { state: 'active' }, 'error');
    },
    async failed(tx, operation) {
      await updateBucket(tx, operation.resource_id, { state: 'error' }, 'active');
    },
    async cancelled(tx, operation) {
      // Put the caps back, unless a later change has set them since.
      const { before } = operation.payload as { before: BucketQuota };
      const bucket = await bucketOfOperation(tx, operation.org_id, operation.resource_id);
      if (bucket?.operation_id === operation.id) await updateBucket(tx, operation.resource_id, { ...before });
    },
  };

  return lockingRows('buckets', {
    'bucket.create': createBucket,
    'bucket.delete': deleteBucket,
    'bucket.restore': restoreBucket,
    'bucket.quota': setBucketQuota,
  });
}
