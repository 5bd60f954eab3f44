import type { Clock } from '../../core/clock.ts';
import type { Queryable } from '../../db/pool.ts';
import { PermanentBackendError } from '../../drivers/errors.ts';
import type { BucketReport, ObjectStoreDriver } from '../../drivers/object-store.ts';
import type { Executor, ExecutorRegistry } from '../../engine/executor.ts';
import type { OperationRow } from '../../engine/operation-record.ts';
import { deleteAccessKeyRow, updateAccessKey, type AccessKeyRow, type AccessKeyState } from './access-keys.ts';
import { bucketOfOperation, deleteBucketRow, recordBucketObservation, updateBucket, type BucketQuota, type BucketRow } from './buckets.ts';
import { SOFT_DELETE_RETENTION_MS } from './limits.ts';

/** What a bucket operation brings back: the store's report, and when it was made. */
interface BucketOutcome {
  report: BucketReport;
  observedAt: Date;
}

/**
 * The executors of the six object-storage operation types. `perform` makes the object store
 * match the bucket's or key's desired values as they are when it runs (so a repeated attempt,
 * or a later change queued behind it, converges on the latest); `succeeded` records the
 * store's report as the observed values and moves the state on; `failed` leaves the resource
 * in `error`; `cancelled` undoes what the request changed. A state move applies only while the
 * resource is still in the state the request left it in.
 */
export function storageExecutors(pool: Queryable, objectStore: ObjectStoreDriver, clock: Clock): ExecutorRegistry {
  const bucketOf = async (operation: OperationRow): Promise<BucketRow> => {
    const bucket = await bucketOfOperation(pool, operation.org_id, operation.resource_id);
    // Only a cancel (before any attempt) or a purge (of a soft-deleted bucket) removes a row.
    if (!bucket) throw new Error(`bucket ${operation.resource_id} of ${operation.type} has no record`);
    return bucket;
  };
  const addressOf = (bucket: BucketRow) => ({ orgId: bucket.org_id, bucketId: bucket.id, name: bucket.name });
  const observed = async (report: Promise<BucketReport>): Promise<BucketOutcome> => ({ report: await report, observedAt: clock.now() });

  /** A bucket operation whose success leaves the bucket `to` and whose failure leaves it `error`. */
  const bucketExecutor = (
    from: BucketRow['state'],
    to: BucketRow['state'] | undefined,
    perform: (bucket: BucketRow) => Promise<BucketReport>,
    cancelled: (tx: Queryable, operation: OperationRow) => Promise<void>,
    extraOnSuccess: () => Partial<Pick<BucketRow, 'soft_deleted_at' | 'purge_after'>> = () => ({}),
  ): Executor<BucketOutcome> => ({
    async perform(operation) {
      return observed(perform(await bucketOf(operation)));
    },
    async succeeded(tx, operation, outcome) {
      await recordBucketObservation(tx, operation.resource_id, outcome.report, outcome.observedAt);
      if (to) await updateBucket(tx, operation.resource_id, { state: to, ...extraOnSuccess() }, from);
    },
    async failed(tx, operation) {
      await updateBucket(tx, operation.resource_id, { state: 'error' }, from);
    },
    cancelled,
  });

  const createBucket = bucketExecutor(
    'creating',
    'active',
    (bucket) => objectStore.createBucket({ ...addressOf(bucket), versioning: bucket.versioning, quota: { maxObjects: bucket.max_objects, maxSizeBytes: bucket.max_size_bytes } }),
    // Never created: the bucket goes, and with it its name and slot.
    async (tx, operation) => void (await deleteBucketRow(tx, operation.resource_id, 'creating')),
  );

  const deleteBucket = bucketExecutor(
    'deleting',
    'soft_deleted',
    (bucket) => objectStore.suspendBucket(addressOf(bucket)),
    async (tx, operation) => void (await updateBucket(tx, operation.resource_id, { state: 'active' }, 'deleting')),
    () => {
      const now = clock.now();
      return { soft_deleted_at: now, purge_after: new Date(now.getTime() + SOFT_DELETE_RETENTION_MS) };
    },
  );

  const restoreBucket = bucketExecutor(
    'creating',
    'active',
    (bucket) => objectStore.resumeBucket(addressOf(bucket)),
    async (tx, operation) => {
      const payload = operation.payload as { soft_deleted_at: string; purge_after: string };
      await updateBucket(tx, operation.resource_id, { state: 'soft_deleted', soft_deleted_at: new Date(payload.soft_deleted_at), purge_after: new Date(payload.purge_after) }, 'creating');
    },
  );

  const setBucketQuota = bucketExecutor(
    'active',
    undefined,
    (bucket) => objectStore.setBucketQuota({ ...addressOf(bucket), quota: { maxObjects: bucket.max_objects, maxSizeBytes: bucket.max_size_bytes } }),
    async (tx, operation) => {
      // Put the caps back, unless a later change has set them since.
      const { before } = operation.payload as { before: BucketQuota };
      const bucket = await bucketOfOperation(tx, operation.org_id, operation.resource_id);
      if (bucket?.operation_id === operation.id) await updateBucket(tx, operation.resource_id, { ...before });
    },
  );

  const accessKeyOf = async (operation: OperationRow): Promise<AccessKeyRow> => {
    const { rows } = await pool.query<AccessKeyRow>('SELECT * FROM s3_access_keys WHERE org_id = $1 AND id = $2', [operation.org_id, operation.resource_id]);
    if (!rows[0]) throw new Error(`access key ${operation.resource_id} of ${operation.type} has no record`);
    return rows[0];
  };

  const createAccessKey: Executor<{ accessKeyId: string }> = {
    async perform(operation) {
      const key = await accessKeyOf(operation);
      const secret = key.secretstore_path ? await objectStore.secrets.get(key.secretstore_path) : null;
      if (secret === null) throw new PermanentBackendError('object store', 'the secret of the key is not in the secret store');
      return objectStore.createAccessKey({ orgId: key.org_id, keyId: key.id, secret });
    },
    async succeeded(tx, operation, outcome) {
      await updateAccessKey(tx, operation.resource_id, { state: 'active', objectstore_access_key_id: outcome.accessKeyId }, 'issuing');
    },
    async failed(tx, operation) {
      await updateAccessKey(tx, operation.resource_id, { state: 'error' }, 'issuing');
    },
    async cancelled(tx, operation) {
      // Never issued: the key goes, and its secret with it once the key's record is gone.
      const key = await deleteAccessKeyRow(tx, operation.resource_id, 'issuing');
      const path = key?.secretstore_path;
      if (path) return () => objectStore.secrets.destroy(path);
    },
  };

  const revokeAccessKey: Executor<void> = {
    async perform(operation) {
      const key = await accessKeyOf(operation);
      await objectStore.revokeAccessKey({ orgId: key.org_id, keyId: key.id });
      if (key.secretstore_path) await objectStore.secrets.destroy(key.secretstore_path);
    },
    async succeeded(tx, operation) {
      await updateAccessKey(tx, operation.resource_id, { state: 'revoked', secretstore_path: null }, 'revoking');
    },
    async failed(tx, operation) {
      await updateAccessKey(tx, operation.resource_id, { state: 'error' }, 'revoking');
    },
    async cancelled(tx, operation) {
      const { previous_state: previous } = operation.payload as { previous_state: AccessKeyState };
      await updateAccessKey(tx, operation.resource_id, { state: previous }, 'revoking');
    },
  };

  return {
    'bucket.create': createBucket,
    'bucket.delete': deleteBucket,
    'bucket.restore': restoreBucket,
    'bucket.quota': setBucketQuota,
    'access_key.create': createAccessKey,
    'access_key.revoke': revokeAccessKey,
  };
}
