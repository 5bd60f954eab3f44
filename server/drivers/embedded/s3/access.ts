import type { CacheSection } from '../../../db/announced-cache.ts';
import type { StoredBucket } from '../rows.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import { S3Error, noSuchBucket } from './errors.ts';
import type { S3Platform } from './platform-port.ts';

/** The caller of an S3 request, once its key is known and accepted. */
export interface Caller {
  orgId: string;
  keyId: string;
  secret: string;
}

/**
 * Who may do what on the S3 endpoint: the store knows the keys and buckets it holds; the
 * platform (through its port) says whether each is in service. The two are asked at once, on
 * their own connections: every S3 request starts with these, and round trips are what a small
 * object's PUT or GET costs most. An accepted key is then kept in `keys` (a section of the
 * credential cache): the database announces every change of either record of a key, naming it,
 * and each process forgets that key on the announcement, so a revoke still stops the key at once
 * everywhere (the revoke's answer waits for the announcement to come back).
 */
export function createAccess(platform: S3Platform, store: EmbeddedObjectStore, keys?: CacheSection<Caller>) {
  return {
    async caller(accessKeyId: string): Promise<Caller> {
      const cached = keys?.get(accessKeyId);
      if (cached) return cached;
      const ticket = keys?.ticket() ?? 0;
      const [active, stored] = await Promise.all([platform.activeKey(accessKeyId), store.keys.lookup(accessKeyId)]);
      if (!active || !stored || stored.orgId !== active.orgId || stored.keyId !== active.keyId)
        throw new S3Error('InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.');
      const caller = { orgId: stored.orgId, keyId: stored.keyId, secret: stored.secret };
      // Forgotten when a change of this key (either record of it) is announced, and only then.
      keys?.put(ticket, accessKeyId, caller, [`s3_access_key:${stored.keyId}`]);
      return caller;
    },

    /**
     * The caller's bucket of that name, served. Names are the organization's own (as RGW's
     * tenants keep them): a name only another organization holds is NoSuchBucket, as any name
     * the caller has not made, so that no organization learns another's names.
     */
    async bucket(caller: Caller, name: string): Promise<StoredBucket> {
      const [activeId, stored] = await Promise.all([
        platform.activeBucketId(caller.orgId, name),
        store.objects.bucketNamed(caller.orgId, name),
      ]);
      if (stored && !stored.suspended && stored.id === activeId) return stored;
      throw noSuchBucket(name);
    },

    /** What the platform says of buckets (their lifecycle goes through it). */
    platform,

    /** The caller's buckets that are served. */
    async buckets(caller: Caller): Promise<StoredBucket[]> {
      const [active, stored] = await Promise.all([platform.activeBucketIds(caller.orgId), store.objects.bucketsOf(caller.orgId)]);
      return stored.filter((bucket) => active.has(bucket.id));
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
