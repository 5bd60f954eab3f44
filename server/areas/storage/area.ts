import type { Area, AreaDependencies } from '../area.ts';
import { accessKeyHandlers } from './access-key-handlers.ts';
import { createAccessKeyService } from './access-key-service.ts';
import { bucketHandlers } from './bucket-handlers.ts';
import { createBucketService } from './bucket-service.ts';
import { storageExecutors, type StorageOperationType } from './executors.ts';
import { quotaHandlers } from './quota-handlers.ts';
import { storagePurge, storageReconciler } from './reconciler.ts';
import { egressCounters } from './egress.ts';
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
export function storageArea(
  deps: AreaDependencies,
  accessKeysChanged?: () => Promise<void>,
): Area<StorageOperations, StorageOperationType> {
  const { pool, clock, config, budget, drivers } = deps;
  const maxAttempts = config.engine.maxAttempts;
  const buckets = createBucketService({ clock, maxAttempts, budget, objectStore: drivers.objectStore });
  const accessKeys = createAccessKeyService({ maxAttempts, objectStore: drivers.objectStore });

  return {
    executors: storageExecutors(pool, drivers.objectStore, clock),
    usage: { ...storageUsage, meteredCounters: egressCounters(drivers.objectStore) },
    background: [storageReconciler(deps), storagePurge(deps)],
    handlers: {
      ...bucketHandlers({ pool, clock, buckets }),
      ...accessKeyHandlers({ pool, accessKeys, accessKeysChanged }),
      ...quotaHandlers({ pool, objectStore: drivers.objectStore }),
    },
  };
}
