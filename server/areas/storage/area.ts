import type { Area, AreaDependencies } from '../area.ts';
import { accessKeyService } from './access-key-service.ts';
import { bucketService } from './bucket-service.ts';
import { storageExecutors, type StorageOperationType } from './executors.ts';
import { quotaService } from './quota-service.ts';
import { storagePurge, storageReconciler } from './reconciler.ts';
import { storageUsage } from './usage.ts';

type StorageOperations =
  | 'createBucket'
  | 'listBuckets'
  | 'getBucket'
  | 'deleteBucket'
  | 'setBucketQuota'
  | 'restoreBucket'
  | 'createAccessKey'
  | 'listAccessKeys'
  | 'revokeAccessKey'
  | 'getS3Quota'
  | 'setQuota';

/**
 * Object storage: buckets (soft-deleted and purged after 30 days), S3 access keys, per-bucket
 * quotas and the organization-wide ceiling. Changes are carried out in the object store by
 * operations; the reconciler brings back what the store holds; stored bytes are metered.
 */
export function storageArea(deps: AreaDependencies): Area<StorageOperations, StorageOperationType> {
  const buckets = bucketService(deps);
  const accessKeys = accessKeyService(deps);
  const quota = quotaService(deps);

  return {
    executors: storageExecutors(deps.pool, deps.drivers.objectStore, deps.clock),
    usage: storageUsage,
    background: [storageReconciler(deps), storagePurge(deps)],
    handlers: {
      createBucket: (request, context) => buckets.create(context, request.body),
      listBuckets: async (request, context) => ({ status: 200, body: await buckets.list(context, request.query) }),
      getBucket: async (request, context) => ({ status: 200, body: await buckets.get(context, request.path.bucket_id) }),
      deleteBucket: (request, context) => buckets.delete(context, request.path.bucket_id),
      setBucketQuota: (request, context) => buckets.setQuota(context, request.path.bucket_id, request.body),
      restoreBucket: (request, context) => buckets.restore(context, request.path.bucket_id),
      createAccessKey: (_request, context) => accessKeys.create(context),
      listAccessKeys: async (request, context) => ({ status: 200, body: await accessKeys.list(context, request.query) }),
      revokeAccessKey: (request, context) => accessKeys.revoke(context, request.path.key_id),
      getS3Quota: async (_request, context) => ({ status: 200, body: await quota.get(context) }),
      setQuota: (request, context) => quota.set(context, request.body.hard_bytes),
    },
  };
}
