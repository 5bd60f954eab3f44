import { PermanentBackendError, TransientBackendError } from '../errors.ts';
import type { RgwCredentials, RgwRequest, RgwResponse, SignedHttp } from './signed-http.ts';

/**
 * The RADOS Gateway's Admin Ops API (`/admin/user`, `/admin/bucket`, `/admin/usage`), as the
 * driver uses it. Each call is safe to repeat: "already exists" and "already gone" count as done.
 * An answer the driver does not expect is a PermanentBackendError naming the call and the HTTP
 * status (never the gateway's message).
 */
export interface UserInfo {
  tenant: string;
  user_id: string;
  suspended: number;
  max_buckets: number;
  keys: Array<{ user: string; access_key: string; secret_key: string }>;
  op_mask: string;
}

/** A quota as RGW keeps it: -1 is "no limit"; sizes in bytes. */
export interface RgwQuota {
  enabled: boolean;
  check_on_raw: boolean;
  max_size: number;
  max_objects: number;
}

export interface BucketStats {
  bucket: string;
  tenant: string;
  /** The bucket instance's id (changes when a bucket of the same name is made anew). */
  id: string;
  owner: string;
  usage: Record<string, { size?: number; num_objects?: number } | undefined>;
  bucket_quota: RgwQuota;
}

export interface AdminOps {
  getUser(uid: string): Promise<UserInfo | null>;
  /** Creates the user, or leaves an existing one as it is. */
  createUser(uid: string, options: { displayName: string; maxBuckets: number; suspended?: boolean }): Promise<void>;
  /** Sets the operations the user's keys may do (`read`, `write`, `delete`). */
  setOpMask(uid: string, ops: Array<'read' | 'write' | 'delete'>): Promise<void>;
  /** Adds the S3 key, or gives an existing one this secret. */
  putKey(uid: string, accessKey: string, secret: string): Promise<void>;
  removeKey(uid: string, accessKey: string): Promise<void>;
  getUserQuota(uid: string): Promise<RgwQuota>;
  setUserQuota(uid: string, quota: RgwQuota): Promise<void>;
  bucketStats(tenant: string, name: string): Promise<BucketStats | null>;
  bucketsOf(uid: string): Promise<BucketStats[]>;
  setBucketQuota(owner: string, name: string, quota: RgwQuota): Promise<void>;
  /** Whether versioning is enabled (not suspended, not off), from the bucket instance's metadata. */
  versioningEnabled(stats: BucketStats): Promise<boolean>;
  /** Makes `uid` the bucket's owner (the bucket is in that user's tenant). */
  linkBucket(uid: string, name: string): Promise<void>;
  /** Removes the bucket and everything in it; nothing to do when it is gone. */
  removeBucket(tenant: string, name: string): Promise<void>;
  /** Bytes the gateway has sent for the user's buckets' object reads, as its usage log holds them. */
  bytesSentByObjectReads(uid: string): Promise<number>;
}

export function createAdminOps(http: SignedHttp, admin: RgwCredentials): AdminOps {
  const call = (request: RgwRequest): Promise<RgwResponse> =>
    http.send(admin, { ...request, query: { ...(request.query ?? {}), format: 'json' } });

  const refused = (what: string, response: RgwResponse): PermanentBackendError =>
    new PermanentBackendError('object store', `${what} answered ${response.status}`);

  const expectOk = async (what: string, request: RgwRequest, alsoFine: (response: RgwResponse) => boolean = () => false) => {
    const response = await call(request);
    if (response.status >= 200 && response.status < 300) return response;
    if (alsoFine(response)) return response;
    throw refused(what, response);
  };

  const json = <T>(response: RgwResponse): T => {
    try {
      return JSON.parse(response.text) as T;
    } catch {
      // Not the gateway's JSON (a proxy's page, a cut answer): worth another attempt.
      throw new TransientBackendError('object store', 'unreadable answer');
    }
  };

  return {
    async getUser(uid) {
      const response = await call({ method: 'GET', path: '/admin/user', query: { uid } });
      if (response.status === 404) return null;
      if (response.status !== 200) throw refused('get user', response);
      return json<UserInfo>(response);
    },

    async createUser(uid, { displayName, maxBuckets, suspended = false }) {
      await expectOk(
        'create user',
        {
          method: 'PUT',
          path: '/admin/user',
          query: {
            uid,
            'display-name': displayName,
            'max-buckets': String(maxBuckets),
            'generate-key': 'false',
            ...(suspended ? { suspended: 'true' } : {}),
          },
        },
        (response) => response.status === 409 && response.code === 'UserAlreadyExists',
      );
    },

    async setOpMask(uid, ops) {
      await expectOk('modify user', { method: 'POST', path: '/admin/user', query: { uid, 'op-mask': ops.join(',') } });
    },

    async putKey(uid, accessKey, secret) {
      await expectOk('create key', {
        method: 'PUT',
        path: '/admin/user',
        query: { key: '', uid, 'key-type': 's3', 'access-key': accessKey, 'secret-key': secret },
      });
    },

    async removeKey(uid, accessKey) {
      // An unknown key is "InvalidAccessKeyId" (403); an unknown user 404: gone either way.
      await expectOk(
        'remove key',
        { method: 'DELETE', path: '/admin/user', query: { key: '', uid, 'access-key': accessKey } },
        (response) => response.status === 404 || response.code === 'InvalidAccessKeyId',
      );
    },

    async getUserQuota(uid) {
      const response = await expectOk('get quota', { method: 'GET', path: '/admin/user', query: { quota: '', uid, 'quota-type': 'user' } });
      return json<RgwQuota>(response);
    },

    async setUserQuota(uid, quota) {
      await expectOk('set quota', {
        method: 'PUT',
        path: '/admin/user',
        query: { quota: '', uid, 'quota-type': 'user' },
        body: JSON.stringify(quota),
      });
    },

    async bucketStats(tenant, name) {
      const response = await call({ method: 'GET', path: '/admin/bucket', query: { stats: 'true', bucket: `${tenant}/${name}` } });
      if (response.status === 404) return null;
      if (response.status !== 200) throw refused('bucket stats', response);
      return json<BucketStats>(response);
    },

    async bucketsOf(uid) {
      const response = await call({ method: 'GET', path: '/admin/bucket', query: { stats: 'true', uid } });
      if (response.status === 404) return [];
      if (response.status !== 200) throw refused('bucket list', response);
      return json<BucketStats[]>(response);
    },

    async setBucketQuota(owner, name, quota) {
      // A JSON body: without it, RGW reads missing fields as 0 (a size limit of nothing).
      await expectOk('set bucket quota', {
        method: 'PUT',
        path: '/admin/bucket',
        query: { quota: '', uid: owner, bucket: name },
        body: JSON.stringify(quota),
      });
    },

    async versioningEnabled(stats) {
      const response = await expectOk('bucket metadata', {
        method: 'GET',
        path: '/admin/metadata/bucket.instance',
        query: { key: `${stats.tenant}/${stats.bucket}:${stats.id}` },
      });
      const { data } = json<{ data?: { bucket_info?: { flags?: number } } }>(response);
      const flags = data?.bucket_info?.flags ?? 0;
      // RGW's BUCKET_VERSIONED and BUCKET_VERSIONS_SUSPENDED flags.
      return (flags & 0x2) !== 0 && (flags & 0x4) === 0;
    },

    async linkBucket(uid, name) {
      await expectOk('link bucket', { method: 'PUT', path: '/admin/bucket', query: { bucket: name, uid } });
    },

    async removeBucket(tenant, name) {
      await expectOk(
        'remove bucket',
        { method: 'DELETE', path: '/admin/bucket', query: { bucket: `${tenant}/${name}`, 'purge-objects': 'true' } },
        (response) => response.status === 404,
      );
    },

    async bytesSentByObjectReads(uid) {
      const response = await expectOk('usage', {
        method: 'GET',
        path: '/admin/usage',
        query: { uid, 'show-entries': 'false', 'show-summary': 'true' },
      });
      const { summary = [] } = json<{ summary?: Array<{ categories?: Array<{ category: string; bytes_sent?: number }> }> }>(response);
      let sent = 0;
      for (const entry of summary) {
        for (const category of entry.categories ?? []) if (category.category === 'get_obj') sent += category.bytes_sent ?? 0;
      }
      return sent;
    },
  };
}
