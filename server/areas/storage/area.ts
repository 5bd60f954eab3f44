import { budgetOf, defineArea, type AreaDependencies } from '../area.ts';
import { accessKeyExecutors } from './access-keys/access-key-executors.ts';
import { accessKeyHandlers } from './access-keys/access-key-handlers.ts';
import { createAccessKeyService } from './access-keys/access-key-service.ts';
import { storagePurge, storageReconciler } from './buckets/bucket-reconciler.ts';
import { bucketExecutors } from './buckets/bucket-executors.ts';
import { bucketHandlers } from './buckets/bucket-handlers.ts';
import { createBucketService } from './buckets/bucket-service.ts';
import { quotaHandlers } from './quotas/quota-handlers.ts';
import { storageQuotaOf } from './quotas/quota-figures.ts';
import { s3Port } from './s3-port.ts';
import { startS3Thread } from './s3-thread.ts';
import { egressCounters } from './storage-egress.ts';
import { storageUsage } from './storage-metering.ts';

/**
 * Object storage: buckets (soft-deleted and purged after 30 days), S3 access keys, per-bucket
 * quotas and the organization-wide ceiling. Changes are carried out in the object store by
 * operations; the reconciler brings back what the store holds; stored bytes are metered. With
 * the embedded store, the area serves its S3 endpoint, which asks the platform through s3-port.ts.
 */
export function storageArea(deps: AreaDependencies) {
  const { pool, clock, config, drivers, credentials, embeddedStore, listener, log, ports, apiActivity } = deps;
  const cachesSynced = () => listener.sync();
  const maxAttempts = config.engine.maxAttempts;
  const buckets = createBucketService({ clock, maxAttempts, budget: budgetOf(ports), objectStore: drivers.objectStore });
  const accessKeys = createAccessKeyService({ maxAttempts, objectStore: drivers.objectStore });

  return defineArea({
    handlers: {
      ...bucketHandlers({ pool, clock, buckets, cachesSynced }),
      // S3 keys are cached in a section of the credential cache: a revoke's answer waits for the announcement.
      ...accessKeyHandlers({ pool, accessKeys, accessKeysChanged: (tags) => credentials.changed(tags) }),
      ...quotaHandlers({ pool, objectStore: drivers.objectStore }),
    },
    auditNames: {
      createBucket: { action: 'bucket.create', resourceType: 'bucket' },
      deleteBucket: { action: 'bucket.delete', resourceType: 'bucket', idParam: 'bucket_id' },
      setBucketQuota: { action: 'bucket.set_quota', resourceType: 'bucket', idParam: 'bucket_id' },
      restoreBucket: { action: 'bucket.restore', resourceType: 'bucket', idParam: 'bucket_id' },
      createAccessKey: { action: 'access_key.create', resourceType: 'access_key' },
      revokeAccessKey: { action: 'access_key.revoke', resourceType: 'access_key', idParam: 'key_id' },
      setQuota: { action: 's3_quota.set', resourceType: 's3_quota' },
    },
    executors: { ...bucketExecutors(pool, drivers.objectStore, clock), ...accessKeyExecutors(pool, drivers.objectStore) },
    usage: { ...storageUsage, meteredCounters: egressCounters(drivers.objectStore) },
    background: [
      storageReconciler(deps),
      storagePurge(deps),
      ...(embeddedStore
        ? [
            { name: 'object-store-sweep', intervalMs: config.intervals.objectStoreSweepMs, run: () => embeddedStore.sweep() },
            // S3 lifecycle rules (RGW runs its own): expired versions go, and their bytes leave the metered usage.
            {
              name: 'object-store-lifecycle',
              intervalMs: config.intervals.lifecycleMs,
              run: (signal: AbortSignal) => embeddedStore.lifecycle.run(signal),
            },
          ]
        : []),
    ],
    provides: { storageQuotaOf },
    // The S3 endpoint runs in a thread of its own (s3-thread.ts): S3 bodies never wait on, nor delay, the API.
    start: async () =>
      embeddedStore &&
      startS3Thread({
        config,
        connectionString: (pool.options as { connectionString: string }).connectionString,
        platform: s3Port({ pool, buckets, objectStore: drivers.objectStore, clock, cachesSynced, log: log.child({ component: 's3' }) }),
        apiActivity: apiActivity?.buffer,
        log: log.child({ component: 's3' }),
      }),
  });
}
