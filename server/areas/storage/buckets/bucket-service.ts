import { randomUUID } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import { iso, type Clock } from '../../../core/clock.ts';
import type { PoolClient, Queryable } from '../../../db/pool.ts';
import type { ObjectStoreDriver } from '../../../drivers/object-store.ts';
import { enqueueOperation, recordFinishedOperation, type OperationRow } from '../../../engine/operation-record.ts';
import type { Logger } from '../../../logging.ts';
import type { BudgetGuard } from '../../area.ts';
import { findBucket, findBucketByName, insertBucket, quotaOf, updateBucket, type BucketRow } from './bucket-rows.ts';
import {
  bucketLimitReached,
  bucketNameTaken,
  bucketNotEmpty,
  bucketNotFound,
  bucketQuotaExceedsCeiling,
  bucketStateConflict,
} from '../storage-errors.ts';
import { bucketSlots, ceilingBytes } from '../quotas/quota-figures.ts';

type BucketCreateRequest = components['schemas']['BucketCreateRequest'];
type BucketQuotaRequest = components['schemas']['BucketQuotaRequest'];

/** A change of a bucket: the bucket after it, as it was before (null for a new one), and the operation carrying it out. */
export interface BucketChange {
  bucket: BucketRow;
  before: BucketRow | null;
  operation: OperationRow;
}

/**
 * States a delete or a quota change starts from. A bucket in error (its creation or a quota change
 * failed) can be deleted, or given a quota again, which also re-creates it in the store.
 */
const DELETABLE: readonly BucketRow['state'][] = ['active', 'error'];
const QUOTA_CHANGEABLE: readonly BucketRow['state'][] = ['active', 'error'];
/** Versioning changes on a bucket the store serves: a bucket in error may not be in the store at all. */
const VERSIONING_CHANGEABLE: readonly BucketRow['state'][] = ['active'];

/**
 * The rules of buckets: names unique within the organization (soft-deleted buckets included
 * until purged), a free slot for every bucket that is not soft-deleted, the spend budget, the
 * organization ceiling above per-bucket caps, and which state allows which change. Each change
 * queues the operation that carries it out in the object store.
 */
export function createBucketService({
  clock,
  maxAttempts,
  budget,
  objectStore,
}: {
  clock: Clock;
  maxAttempts: number;
  budget: BudgetGuard;
  objectStore: ObjectStoreDriver;
}) {
  /** Serializes the slot and name checks of one organization's concurrent creates and restores. */
  const lockOrganization = (tx: PoolClient, orgId: string) => tx.query('SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [orgId]);

  const existing = async (tx: PoolClient, orgId: string, bucketId: string): Promise<BucketRow> => {
    const bucket = await findBucket(tx, orgId, bucketId, clock.now(), { forUpdate: true });
    if (!bucket) throw bucketNotFound(bucketId);
    return bucket;
  };

  const assertDeletableState = (bucket: BucketRow) => {
    if (!DELETABLE.includes(bucket.state))
      throw bucketStateConflict(bucket.name, bucket.state, 'only an active bucket, or one in error, can be deleted');
  };

  return {
    async get(db: Queryable, orgId: string, bucketId: string): Promise<BucketRow> {
      const bucket = await findBucket(db, orgId, bucketId, clock.now());
      if (!bucket) throw bucketNotFound(bucketId);
      return bucket;
    },

    async create(tx: PoolClient, orgId: string, body: BucketCreateRequest): Promise<BucketChange> {
      await lockOrganization(tx, orgId);
      const taken = await findBucketByName(tx, orgId, body.name);
      if (taken) throw bucketNameTaken(body.name, taken.state === 'soft_deleted' && taken.purge_after ? iso(taken.purge_after) : null);
      const slots = await bucketSlots(tx, orgId);
      if (slots.used >= slots.max) throw bucketLimitReached(slots.max, false);
      await budget.assertCanCreateBillable(tx, orgId);
      const bucketId = randomUUID();
      await insertBucket(tx, { id: bucketId, orgId, name: body.name, versioning: body.versioning ?? false });
      const operation = await enqueueOperation(tx, {
        orgId,
        type: 'bucket.create',
        resourceType: 'bucket',
        resourceId: bucketId,
        maxAttempts,
      });
      return { bucket: (await updateBucket(tx, bucketId, { operation_id: operation.id }))!, before: null, operation };
    },

    /**
     * Before the transaction of a delete (a backend call must not hold row locks open): the
     * bucket must be in a deletable state and hold no object, version or delete marker. If the
     * store cannot be asked, the latest usage sample stands in; without one the delete goes
     * ahead, and the store itself refuses to soft-delete a bucket that is not empty.
     */
    async assertDeletable(db: Queryable, orgId: string, bucketId: string, log: Logger): Promise<void> {
      const current = await this.get(db, orgId, bucketId);
      assertDeletableState(current);
      let objects: number;
      try {
        objects = (await objectStore.describeBucket({ orgId, bucketId, name: current.name }))?.usage.objects ?? 0;
      } catch (error) {
        log.warn(
          { reason: (error as Error).message, bucket_id: bucketId },
          'object store not reachable for the not-empty check; using the latest sample',
        );
        objects = current.usage_objects ?? 0;
      }
      if (objects > 0) throw bucketNotEmpty(current.name);
    },

    async delete(tx: PoolClient, orgId: string, bucketId: string): Promise<BucketChange> {
      const before = await existing(tx, orgId, bucketId);
      assertDeletableState(before);
      // The state a failed or cancelled delete goes back to.
      const payload = { previous_state: before.state };
      const operation = await enqueueOperation(tx, {
        orgId,
        type: 'bucket.delete',
        resourceType: 'bucket',
        resourceId: bucketId,
        maxAttempts,
        payload,
      });
      return { bucket: (await updateBucket(tx, bucketId, { state: 'deleting', operation_id: operation.id }))!, before, operation };
    },

    async restore(tx: PoolClient, orgId: string, bucketId: string): Promise<BucketChange> {
      await lockOrganization(tx, orgId);
      const before = await existing(tx, orgId, bucketId);
      if (before.state !== 'soft_deleted')
        throw bucketStateConflict(before.name, before.state, 'only a soft-deleted bucket can be restored');
      const slots = await bucketSlots(tx, orgId);
      if (slots.used >= slots.max) throw bucketLimitReached(slots.max, true);
      // What a cancelled restore puts back.
      const payload = { soft_deleted_at: iso(before.soft_deleted_at!), purge_after: iso(before.purge_after!) };
      const operation = await enqueueOperation(tx, {
        orgId,
        type: 'bucket.restore',
        resourceType: 'bucket',
        resourceId: bucketId,
        maxAttempts,
        payload,
      });
      const bucket = (await updateBucket(tx, bucketId, {
        state: 'creating',
        soft_deleted_at: null,
        purge_after: null,
        operation_id: operation.id,
      }))!;
      return { bucket, before, operation };
    },

    /**
     * Turns versioning on or off (S3's PutBucketVersioning: Enabled or Suspended; the versions
     * kept stay): the desired value, which the caller then hands to the store (there is no
     * operation type for it in /v1). The bucket's row stays locked until the transaction ends.
     */
    async setVersioning(
      tx: PoolClient,
      orgId: string,
      bucketId: string,
      versioning: boolean,
    ): Promise<{ bucket: BucketRow; before: BucketRow }> {
      const before = await existing(tx, orgId, bucketId);
      if (!VERSIONING_CHANGEABLE.includes(before.state))
        throw bucketStateConflict(before.name, before.state, 'versioning can only be changed on an active bucket');
      return { bucket: (await updateBucket(tx, bucketId, { versioning }))!, before };
    },

    async setQuota(tx: PoolClient, orgId: string, bucketId: string, body: BucketQuotaRequest): Promise<BucketChange> {
      const before = await existing(tx, orgId, bucketId);
      if (typeof body.max_size_bytes === 'number') {
        const ceiling = await ceilingBytes(tx, orgId);
        if (body.max_size_bytes > ceiling) throw bucketQuotaExceedsCeiling(body.max_size_bytes, ceiling);
      }
      if (!QUOTA_CHANGEABLE.includes(before.state))
        throw bucketStateConflict(before.name, before.state, 'the quota can only be changed on an active bucket, or one in error');
      if (body.max_objects === undefined && body.max_size_bytes === undefined) {
        // Nothing to change: answered like any quota change, with an operation already done.
        const operation = await recordFinishedOperation(tx, {
          orgId,
          type: 'bucket.quota',
          resourceType: 'bucket',
          resourceId: bucketId,
          maxAttempts,
        });
        return { bucket: before, before, operation };
      }
      // A number sets a cap, null removes it, an omitted field stays as it is.
      const quota = {
        max_objects: body.max_objects === undefined ? before.max_objects : body.max_objects,
        max_size_bytes: body.max_size_bytes === undefined ? before.max_size_bytes : body.max_size_bytes,
      };
      // On a bucket in error, the operation first makes sure the store holds the bucket.
      const payload = { before: quotaOf(before), quota, previous_state: before.state };
      const operation = await enqueueOperation(tx, {
        orgId,
        type: 'bucket.quota',
        resourceType: 'bucket',
        resourceId: bucketId,
        maxAttempts,
        payload,
      });
      return { bucket: (await updateBucket(tx, bucketId, { ...quota, operation_id: operation.id }))!, before, operation };
    },
  };
}

export type BucketService = ReturnType<typeof createBucketService>;
