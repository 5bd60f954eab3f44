import { findAccessKey } from '../areas/storage/access-keys.ts';
import { bucketOfOperation } from '../areas/storage/buckets.ts';
import type { Queryable } from '../db/pool.ts';
import type { StoredBucket } from '../drivers/embedded/rows.ts';
import type { EmbeddedObjectStore } from '../drivers/embedded/store.ts';
import { S3Error, accessDenied, noSuchBucket } from './errors.ts';

/** The caller of an S3 request, once its key is known and accepted. */
export interface Caller {
  orgId: string;
  keyId: string;
  secret: string;
}

/**
 * Who may do what on the S3 endpoint: the store knows the keys and buckets it holds; the
 * platform's records say whether each is in service. A key works only while the platform shows
 * it `active` (a revoke stops it at the request, before the store hears of it); a bucket serves
 * only while `active` (creating, deleting, soft-deleted or in error: NoSuchBucket).
 */
export function createAccess(platformDb: Queryable, store: EmbeddedObjectStore) {
  return {
    async caller(accessKeyId: string): Promise<Caller> {
      const credentials = await store.credentials(accessKeyId);
      const record = credentials && (await findAccessKey(platformDb, credentials.orgId, credentials.keyId));
      if (!credentials || record?.state !== 'active')
        throw new S3Error('InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.');
      return credentials;
    },

    /** The caller's bucket of that name, served; AccessDenied when the name is another organization's. */
    async bucket(caller: Caller, name: string): Promise<StoredBucket> {
      const bucket = await store.objects.bucketNamed(caller.orgId, name);
      if (bucket && !bucket.suspended) {
        const record = await bucketOfOperation(platformDb, caller.orgId, bucket.id);
        if (record?.state === 'active') return bucket;
      }
      if (!bucket && (await store.objects.nameHeldElsewhere(caller.orgId, name))) throw accessDenied();
      throw noSuchBucket(name);
    },

    /** The caller's buckets that are served. */
    async buckets(caller: Caller): Promise<StoredBucket[]> {
      const buckets = await store.objects.bucketsOf(caller.orgId);
      const served: StoredBucket[] = [];
      for (const bucket of buckets) {
        if ((await bucketOfOperation(platformDb, caller.orgId, bucket.id))?.state === 'active') served.push(bucket);
      }
      return served;
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
