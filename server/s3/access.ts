import { bucketOfOperation } from '../areas/storage/buckets.ts';
import type { CacheSection } from '../auth/credential-cache.ts';
import type { Queryable } from '../db/pool.ts';
import { bucketOf, type StoredBucket } from '../drivers/embedded/rows.ts';
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
 *
 * Each is read in one statement with the platform's record (the store's tables live in the
 * platform's database): every S3 request starts with these, and round trips are what a small
 * object's PUT or GET costs most. An accepted key is then kept in `keys` (a section of the
 * credential cache): the database announces every change of either record of a key (migrations
 * 0820 and 0911) and each process forgets its cached keys on the announcement, so a revoke still
 * stops the key at once everywhere (the revoke's answer waits for the announcement to come back;
 * see auth/credential-cache.ts).
 */
export function createAccess(platformDb: Queryable, store: EmbeddedObjectStore, keys?: CacheSection<Caller>) {
  return {
    async caller(accessKeyId: string): Promise<Caller> {
      const cached = keys?.get(accessKeyId);
      if (cached) return cached;
      const ticket = keys?.ticket() ?? 0;
      const { rows } = await platformDb.query<{ org_id: string; key_id: string; secret_sealed: string }>(
        `SELECT k.org_id, k.key_id, k.secret_sealed FROM store_access_keys k
         JOIN s3_access_keys a ON a.org_id = k.org_id AND a.id = k.key_id
         WHERE k.access_key_id = $1 AND NOT k.revoked AND a.state = 'active'`,
        [accessKeyId],
      );
      const row = rows[0];
      if (!row) throw new S3Error('InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.');
      const caller = { orgId: row.org_id, keyId: row.key_id, secret: store.openSecret(row.secret_sealed) };
      keys?.put(ticket, accessKeyId, caller);
      return caller;
    },

    /** The caller's bucket of that name, served; AccessDenied when the name is another organization's. */
    async bucket(caller: Caller, name: string): Promise<StoredBucket> {
      const { rows } = await platformDb.query<StoredBucket & { platform_state: string | null }>(
        `SELECT s.*, b.state AS platform_state FROM store_buckets s LEFT JOIN buckets b ON b.org_id = s.org_id AND b.id = s.id
         WHERE s.org_id = $1 AND s.name = $2`,
        [caller.orgId, name],
      );
      const row = rows[0];
      if (row && !row.suspended && row.platform_state === 'active') {
        const { platform_state: _state, ...bucket } = row;
        return bucketOf(bucket);
      }
      if (!row && (await store.objects.nameHeldElsewhere(caller.orgId, name))) throw accessDenied();
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
