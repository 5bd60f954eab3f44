import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { Clock } from '../../../core/clock.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { toOperationRef } from '../../../engine/operation-record.ts';
import type { BucketChange, BucketService } from './bucket-service.ts';
import { bucketsPage, toBucketOut } from './bucket-rows.ts';

type BucketOperations = 'createBucket' | 'listBuckets' | 'getBucket' | 'deleteBucket' | 'setBucketQuota' | 'restoreBucket';

/** Every change answers 202 with the bucket and the operation that carries it out. */
function accepted(change: BucketChange) {
  const bucket = toBucketOut(change.bucket);
  return {
    response: { status: 202 as const, body: { bucket, operation: toOperationRef(change.operation) } },
    audit: {
      resourceId: bucket.id,
      before: change.before ? toBucketOut(change.before) : null,
      after: bucket,
      operationId: change.operation.id,
    },
  };
}

/** Handlers of buckets: read the request, call the service, answer. */
export function bucketHandlers({
  pool,
  clock,
  buckets,
  cachesSynced,
}: {
  pool: Pool;
  clock: Clock;
  buckets: BucketService;
  /** Returns once every process has read what this one committed (DatabaseListener.sync). */
  cachesSynced: () => Promise<void>;
}): Pick<OperationHandlers<RequestContext>, BucketOperations> {
  const orgOf = (context: RequestContext) => context.principal.orgId;
  return {
    createBucket: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await buckets.create(tx, orgOf(context), request.body))),

    listBuckets: async (request, context) => ({ status: 200, body: await bucketsPage(pool, orgOf(context), clock.now(), request.query) }),

    getBucket: async (request, context) => ({
      status: 200,
      body: toBucketOut(await buckets.get(pool, orgOf(context), request.path.bucket_id)),
    }),

    async deleteBucket(request, context) {
      await buckets.assertDeletable(pool, orgOf(context), request.path.bucket_id, context.log);
      return performWrite(pool, context, async (tx) => ({
        ...accepted(await buckets.delete(tx, orgOf(context), request.path.bucket_id)),
        // Answered once no S3 endpoint serves the bucket from its cache (s3/access.ts): it is no longer active.
        afterCommit: cachesSynced,
      }));
    },

    setBucketQuota: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await buckets.setQuota(tx, orgOf(context), request.path.bucket_id, request.body))),

    restoreBucket: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await buckets.restore(tx, orgOf(context), request.path.bucket_id))),
  };
}
