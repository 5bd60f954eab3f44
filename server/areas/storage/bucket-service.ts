import { randomUUID } from 'node:crypto';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../core/clock.ts';
import { decodeCursor, DEFAULT_PAGE_SIZE, page } from '../../core/pagination.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { performWrite } from '../../core/write.ts';
import type { PoolClient } from '../../db/pool.ts';
import { enqueueOperation, recordFinishedOperation, toOperationRef, type OperationRow } from '../../engine/operation-record.ts';
import type { AreaDependencies } from '../area.ts';
import {
  bucketsPage,
  findBucket,
  findBucketByName,
  insertBucket,
  quotaOf,
  toBucketOut,
  updateBucket,
  type BucketOut,
  type BucketRow,
} from './buckets.ts';
import { bucketLimitReached, bucketNameTaken, bucketNotEmpty, bucketNotFound, bucketQuotaExceedsCeiling, bucketStateConflict } from './errors.ts';
import { bucketSlots, ceilingBytes } from './quota-figures.ts';

type BucketAccepted = components['schemas']['BucketAccepted'];

/**
 * States a delete or a quota change starts from. A bucket in error (its creation or a quota change
 * failed) can be deleted, or given a quota again, which also re-creates it in the store.
 */
const DELETABLE: readonly BucketRow['state'][] = ['active', 'error'];
const QUOTA_CHANGEABLE: readonly BucketRow['state'][] = ['active', 'error'];
type BucketCreateRequest = components['schemas']['BucketCreateRequest'];
type BucketQuotaRequest = components['schemas']['BucketQuotaRequest'];

/**
 * The rules of buckets: names unique within the organization (soft-deleted buckets included
 * until purged), a free slot for every bucket that is not soft-deleted, the spend budget, the
 * organization ceiling above per-bucket caps, and which state allows which change. Each change
 * queues the operation that carries it out in the object store.
 */
export function bucketService({ pool, clock, config, budget, drivers }: AreaDependencies) {
  const maxAttempts = config.engine.maxAttempts;

  const accepted = (bucket: BucketRow, operation: OperationRow): BucketAccepted => ({
    bucket: toBucketOut(bucket),
    operation: toOperationRef(operation),
  });

  /** Serializes the slot and name checks of one organization's concurrent creates and restores. */
  const lockOrganization = (tx: PoolClient, orgId: string) => tx.query('SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [orgId]);

  const existing = async (tx: PoolClient, orgId: string, bucketId: string): Promise<BucketRow> => {
    const bucket = await findBucket(tx, orgId, bucketId, clock.now(), { forUpdate: true });
    if (!bucket) throw bucketNotFound(bucketId);
    return bucket;
  };

  /**
   * Objects, versions and delete markers the store holds in the bucket now. If the store cannot
   * be asked, the latest usage sample stands in; without one the delete goes ahead, and the
   * store itself refuses to soft-delete a bucket that is not empty.
   */
  const objectsIn = async (bucket: BucketRow, context: RequestContext): Promise<number> => {
    try {
      const report = await drivers.objectStore.describeBucket({ orgId: bucket.org_id, bucketId: bucket.id, name: bucket.name });
      return report?.usage.objects ?? 0;
    } catch (error) {
      context.log.warn({ reason: (error as Error).message, bucket_id: bucket.id }, 'object store not reachable for the not-empty check; using the latest sample');
      return bucket.usage_objects ?? 0;
    }
  };

  return {
    async create(context: RequestContext, body: BucketCreateRequest) {
      const orgId = context.principal.orgId;
      return performWrite(pool, context, async (tx) => {
        await lockOrganization(tx, orgId);
        const taken = await findBucketByName(tx, orgId, body.name);
        if (taken) throw bucketNameTaken(body.name, taken.state === 'soft_deleted' && taken.purge_after ? iso(taken.purge_after) : null);
        const slots = await bucketSlots(tx, orgId);
        if (slots.used >= slots.max) throw bucketLimitReached(slots.max, false);
        await budget.assertCanCreateBillable(tx, orgId);

        const bucketId = randomUUID();
        await insertBucket(tx, { id: bucketId, orgId, name: body.name, versioning: body.versioning ?? false });
        const operation = await enqueueOperation(tx, { orgId, type: 'bucket.create', resourceType: 'bucket', resourceId: bucketId, maxAttempts });
        const bucket = (await updateBucket(tx, bucketId, { operation_id: operation.id }))!;
        const response = accepted(bucket, operation);
        return {
          response: { status: 202 as const, body: response },
          audit: { resourceId: bucketId, after: response.bucket, operationId: operation.id },
        };
      });
    },

    async list(context: RequestContext, query: { limit?: number; cursor?: string }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const after = decodeCursor('buckets', query.cursor);
      const rows = await bucketsPage(pool, context.principal.orgId, clock.now(), after, limit + 1);
      return page('buckets', rows, limit, (row) => ({ key: row.sort_key, id: row.id }), toBucketOut);
    },

    async get(context: RequestContext, bucketId: string): Promise<BucketOut> {
      const bucket = await findBucket(pool, context.principal.orgId, bucketId, clock.now());
      if (!bucket) throw bucketNotFound(bucketId);
      return toBucketOut(bucket);
    },

    async delete(context: RequestContext, bucketId: string) {
      const orgId = context.principal.orgId;
      const current = await findBucket(pool, orgId, bucketId, clock.now());
      if (!current) throw bucketNotFound(bucketId);
      if (!DELETABLE.includes(current.state)) throw bucketStateConflict(current.name, current.state, 'only an active bucket, or one in error, can be deleted');
      // Asked before the transaction: a backend call must not hold row locks open.
      if ((await objectsIn(current, context)) > 0) throw bucketNotEmpty(current.name);
      return performWrite(pool, context, async (tx) => {
        const before = await existing(tx, orgId, bucketId);
        if (!DELETABLE.includes(before.state)) throw bucketStateConflict(before.name, before.state, 'only an active bucket, or one in error, can be deleted');
        // The state a failed or cancelled delete goes back to.
        const payload = { previous_state: before.state };
        const operation = await enqueueOperation(tx, { orgId, type: 'bucket.delete', resourceType: 'bucket', resourceId: bucketId, maxAttempts, payload });
        const bucket = (await updateBucket(tx, bucketId, { state: 'deleting', operation_id: operation.id }))!;
        const response = accepted(bucket, operation);
        return {
          response: { status: 202 as const, body: response },
          audit: { resourceId: bucketId, before: toBucketOut(before), after: response.bucket, operationId: operation.id },
        };
      });
    },

    async restore(context: RequestContext, bucketId: string) {
      const orgId = context.principal.orgId;
      return performWrite(pool, context, async (tx) => {
        await lockOrganization(tx, orgId);
        const before = await existing(tx, orgId, bucketId);
        if (before.state !== 'soft_deleted') throw bucketStateConflict(before.name, before.state, 'only a soft-deleted bucket can be restored');
        const slots = await bucketSlots(tx, orgId);
        if (slots.used >= slots.max) throw bucketLimitReached(slots.max, true);
        // What a cancelled restore puts back.
        const payload = { soft_deleted_at: iso(before.soft_deleted_at!), purge_after: iso(before.purge_after!) };
        const operation = await enqueueOperation(tx, { orgId, type: 'bucket.restore', resourceType: 'bucket', resourceId: bucketId, maxAttempts, payload });
        const bucket = (await updateBucket(tx, bucketId, { state: 'creating', soft_deleted_at: null, purge_after: null, operation_id: operation.id }))!;
        const response = accepted(bucket, operation);
        return {
          response: { status: 202 as const, body: response },
          audit: { resourceId: bucketId, before: toBucketOut(before), after: response.bucket, operationId: operation.id },
        };
      });
    },

    async setQuota(context: RequestContext, bucketId: string, body: BucketQuotaRequest) {
      const orgId = context.principal.orgId;
      return performWrite(pool, context, async (tx) => {
        const before = await existing(tx, orgId, bucketId);
        if (typeof body.max_size_bytes === 'number') {
          const ceiling = await ceilingBytes(tx, orgId);
          if (body.max_size_bytes > ceiling) throw bucketQuotaExceedsCeiling(body.max_size_bytes, ceiling);
        }
        if (!QUOTA_CHANGEABLE.includes(before.state)) throw bucketStateConflict(before.name, before.state, 'the quota can only be changed on an active bucket, or one in error');
        if (body.max_objects === undefined && body.max_size_bytes === undefined) {
          // Nothing to change: answered like any quota change, with an operation already done.
          const operation = await recordFinishedOperation(tx, { orgId, type: 'bucket.quota', resourceType: 'bucket', resourceId: bucketId, maxAttempts });
          const response = accepted(before, operation);
          return {
            response: { status: 202 as const, body: response },
            audit: { resourceId: bucketId, before: response.bucket, after: response.bucket, operationId: operation.id },
          };
        }
        // A number sets a cap, null removes it, an omitted field stays as it is.
        const quota = {
          max_objects: body.max_objects === undefined ? before.max_objects : body.max_objects,
          max_size_bytes: body.max_size_bytes === undefined ? before.max_size_bytes : body.max_size_bytes,
        };
        // On a bucket in error, the operation first makes sure the store holds the bucket.
        const payload = { before: quotaOf(before), quota, previous_state: before.state };
        const operation = await enqueueOperation(tx, { orgId, type: 'bucket.quota', resourceType: 'bucket', resourceId: bucketId, maxAttempts, payload });
        const bucket = (await updateBucket(tx, bucketId, { ...quota, operation_id: operation.id }))!;
        const response = accepted(bucket, operation);
        return {
          response: { status: 202 as const, body: response },
          audit: { resourceId: bucketId, before: toBucketOut(before), after: response.bucket, operationId: operation.id },
        };
      });
    },
  };
}
