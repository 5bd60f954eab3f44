import type { Pool } from '../../db/pool.ts';
import { PermanentBackendError } from '../errors.ts';
import type {
  BucketAddress,
  BucketCaps,
  BucketReport,
  EnforcedQuota,
  ObjectStoreDriver,
  OrganizationReport,
  SecretStore,
} from '../object-store.ts';
import { createAdminOps, type BucketStats, type RgwQuota } from './admin-ops.ts';
import { createBucketS3 } from './bucket-s3.ts';
import {
  GUARD_STATEMENT_ID,
  bucketGuardPolicy,
  customerAccessKeyOf,
  keyOfSecretPath,
  managementKeyOf,
  orgUserOf,
  platformUserOf,
  tenantOf,
  vaultAccessKeyOf,
  vaultUserOf,
} from './names.ts';
import { createSignedHttp, type RgwCredentials } from './signed-http.ts';

export interface RgwDriverOptions {
  /** Where the driver reaches the gateway (Admin Ops and S3). */
  endpoint: string;
  region: string;
  adminAccessKey: string;
  adminSecretKey: string;
  timeoutMs: number;
}

/**
 * The object store on a Ceph RADOS Gateway (names.ts says how organizations map onto RGW
 * tenants and users):
 * - a bucket is created by the tenant's `platform` user (versioning, quota and the policy that
 *   keeps `org`'s keys from deleting it set), then linked to `org`; soft delete links it back to `platform`, where `org`'s keys reach nothing; restore
 *   links it to `org` again; purge removes it with everything in it;
 * - the organization's ceiling is `org`'s user quota, byte-exact (`check_on_raw`: RGW otherwise
 *   counts each object in 4 KiB units); suspended writes are `org`'s op mask without `write`;
 * - customers' access keys are S3 keys of `org`; their secrets wait in the `vault` user (the
 *   secret store), so RGW keeps them, never the platform's database;
 * - usage is RGW's bucket stats (delete markers, which RGW does not count, are counted from a
 *   listing when nothing else is left); egress is the usage log's bytes sent for object reads.
 */
export function createRgwObjectStore(pool: Pool, options: RgwDriverOptions): ObjectStoreDriver {
  const http = createSignedHttp({ endpoint: options.endpoint, region: options.region, timeoutMs: options.timeoutMs });
  const admin = createAdminOps(http, { accessKeyId: options.adminAccessKey, secretAccessKey: options.adminSecretKey });
  const s3 = createBucketS3(http);

  interface OrgCredentials {
    org: RgwCredentials;
    platform: RgwCredentials;
  }
  const prepared = new Map<string, Promise<OrgCredentials>>();

  /** The organization's tenant and users, made on first use (once per process, repeatable). */
  const organization = (orgId: string): Promise<OrgCredentials> => {
    let ready = prepared.get(orgId);
    if (!ready) {
      ready = prepareOrganization(orgId);
      prepared.set(orgId, ready);
      ready.catch(() => prepared.delete(orgId));
    }
    return ready;
  };

  const prepareOrganization = async (orgId: string): Promise<OrgCredentials> => {
    const ensureUser = async (uid: string, displayName: string, maxBuckets: number, key: RgwCredentials | null, suspended = false) => {
      let user = await admin.getUser(uid);
      if (!user) {
        await admin.createUser(uid, { displayName, maxBuckets, suspended });
        user = await admin.getUser(uid);
      }
      if (key && !user?.keys.some((held) => held.access_key === key.accessKeyId && held.secret_key === key.secretAccessKey)) {
        await admin.putKey(uid, key.accessKeyId, key.secretAccessKey);
      }
    };
    const org = managementKeyOf(options.adminSecretKey, 'org', orgId);
    const platform = managementKeyOf(options.adminSecretKey, 'platform', orgId);
    // `org` creates no bucket itself (-1); `platform` creates them all, and holds soft-deleted ones.
    await ensureUser(orgUserOf(orgId), `organization ${orgId}`, -1, org);
    await ensureUser(platformUserOf(orgId), `platform for ${orgId}`, 100_000, platform);
    await ensureUser(vaultUserOf(orgId), `secrets of ${orgId}`, -1, null, true);
    return { org, platform };
  };

  /** The platform's bucket id of each of the organization's bucket names. */
  const bucketIdsOf = async (orgId: string): Promise<Map<string, string>> => {
    const { rows } = await pool.query<{ bucket_id: string; name: string }>('SELECT bucket_id, name FROM rgw_buckets WHERE org_id = $1', [
      orgId,
    ]);
    return new Map(rows.map((row) => [row.name, row.bucket_id]));
  };

  /** Records which bucket the name is; refused when another of the organization's buckets holds it. */
  const claimName = async (address: BucketAddress): Promise<void> => {
    await pool.query('INSERT INTO rgw_buckets (bucket_id, org_id, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
      address.bucketId,
      address.orgId,
      address.name,
    ]);
    const { rows } = await pool.query<{ bucket_id: string }>('SELECT bucket_id FROM rgw_buckets WHERE org_id = $1 AND name = $2', [
      address.orgId,
      address.name,
    ]);
    if (rows[0]?.bucket_id !== address.bucketId) throw new PermanentBackendError('object store', 'bucket name in use');
  };

  const statsOf = (address: BucketAddress) => admin.bucketStats(tenantOf(address.orgId), address.name);
  const existingStats = async (address: BucketAddress): Promise<BucketStats> => {
    const stats = await statsOf(address);
    if (!stats) throw new PermanentBackendError('object store', 'no such bucket');
    return stats;
  };

  const isSuspended = (orgId: string, stats: BucketStats) => stats.owner === platformUserOf(orgId);

  /** Buckets this process has seen guarded (names.ts, bucketGuardPolicy): checked once each, not at every pass. */
  const guarded = new Set<string>();
  /**
   * Gives the bucket the platform's guard unless it has it: as `platform` while that user owns it
   * (before the hand-over, or soft-deleted), else as `org`, which may still put a policy on a
   * bucket made before the guard existed (and never again once it is there).
   */
  const ensureGuard = async (orgId: string, stats: BucketStats): Promise<void> => {
    if (guarded.has(stats.id)) return;
    const credentials = await organization(orgId);
    const owner = isSuspended(orgId, stats) ? credentials.platform : credentials.org;
    const policy = await s3.getPolicy(owner, stats.bucket);
    if (!policy?.includes(GUARD_STATEMENT_ID)) await s3.putPolicy(owner, stats.bucket, bucketGuardPolicy(orgId, stats.bucket));
    guarded.add(stats.id);
  };

  /** The bucket as the store holds it (delete markers counted through S3, as the bucket's owner). */
  const reportOf = async (orgId: string, bucketId: string, stats: BucketStats): Promise<BucketReport> => {
    const credentials = await organization(orgId);
    const suspended = isSuspended(orgId, stats);
    let bytes = 0;
    let objects = 0;
    for (const category of Object.values(stats.usage)) {
      bytes += category?.size ?? 0;
      objects += category?.num_objects ?? 0;
    }
    // RGW counts object versions, not delete markers; a bucket holding nothing else still holds them.
    if (objects === 0) {
      const [owner, other] = suspended ? [credentials.platform, credentials.org] : [credentials.org, credentials.platform];
      // Linked to the other user since the stats were read (a create or delete running): ask that one.
      objects = await s3.deleteMarkers(owner, stats.bucket, 1000).catch(() => s3.deleteMarkers(other, stats.bucket, 1000));
    }
    return {
      bucketId,
      name: stats.bucket,
      versioning: await admin.versioningEnabled(stats),
      quota: capsOf(stats.bucket_quota),
      suspended,
      usage: { bytes, objects },
    };
  };

  const secrets: SecretStore = {
    async put(path, secret) {
      const key = secretKeyOf(path);
      await organization(key.orgId);
      await admin.putKey(vaultUserOf(key.orgId), vaultAccessKeyOf(key.keyId), secret);
    },
    async get(path) {
      const key = secretKeyOf(path);
      await organization(key.orgId);
      const vault = await admin.getUser(vaultUserOf(key.orgId));
      return vault?.keys.find((held) => held.access_key === vaultAccessKeyOf(key.keyId))?.secret_key ?? null;
    },
    async destroy(path) {
      const key = secretKeyOf(path);
      await admin.removeKey(vaultUserOf(key.orgId), vaultAccessKeyOf(key.keyId));
    },
  };

  return {
    secrets,

    async createBucket(spec) {
      await claimName(spec);
      const credentials = await organization(spec.orgId);
      let stats = await statsOf(spec);
      if (!stats) {
        // False: taken meanwhile (by another attempt of this very creation); the owner check below decides.
        await s3.createBucket(credentials.platform, spec.name);
        stats = await existingStats(spec);
      }
      if (stats.owner === platformUserOf(spec.orgId)) {
        // Made but not handed over yet (this attempt, or one that stopped halfway): finish the job.
        if (spec.versioning) await s3.setVersioning(credentials.platform, spec.name, true);
        await admin.setBucketQuota(stats.owner, spec.name, quotaOf(spec.quota));
        await ensureGuard(spec.orgId, stats);
        await admin.linkBucket(orgUserOf(spec.orgId), spec.name);
        stats = await existingStats(spec);
      } else if (stats.owner !== orgUserOf(spec.orgId)) {
        throw new PermanentBackendError('object store', 'bucket name in use');
      }
      return reportOf(spec.orgId, spec.bucketId, stats);
    },

    async suspendBucket(address) {
      const credentials = await organization(address.orgId);
      const stats = await existingStats(address);
      if (isSuspended(address.orgId, stats)) return reportOf(address.orgId, address.bucketId, stats);
      if (holdsObjects(stats) || (await s3.holdsAnything(credentials.org, address.name))) {
        throw new PermanentBackendError('object store', 'bucket not empty');
      }
      await admin.linkBucket(platformUserOf(address.orgId), address.name);
      // A write that slipped in before the hand-over: the bucket goes back, as it was.
      const after = await existingStats(address);
      if (holdsObjects(after) || (await s3.holdsAnything(credentials.platform, address.name))) {
        await admin.linkBucket(orgUserOf(address.orgId), address.name);
        throw new PermanentBackendError('object store', 'bucket not empty');
      }
      return reportOf(address.orgId, address.bucketId, after);
    },

    async resumeBucket(address) {
      await organization(address.orgId);
      let stats = await existingStats(address);
      if (isSuspended(address.orgId, stats)) {
        await ensureGuard(address.orgId, stats);
        await admin.linkBucket(orgUserOf(address.orgId), address.name);
        stats = await existingStats(address);
      }
      return reportOf(address.orgId, address.bucketId, stats);
    },

    async purgeBucket(address) {
      await admin.removeBucket(tenantOf(address.orgId), address.name);
      await pool.query('DELETE FROM rgw_buckets WHERE bucket_id = $1', [address.bucketId]);
    },

    async setBucketQuota({ quota, ...address }) {
      await organization(address.orgId);
      const stats = await existingStats(address);
      await admin.setBucketQuota(stats.owner, address.name, quotaOf(quota));
      return reportOf(address.orgId, address.bucketId, await existingStats(address));
    },

    async setBucketVersioning({ versioning, ...address }) {
      const credentials = await organization(address.orgId);
      const stats = await existingStats(address);
      // As the bucket's owner now: `org` while it is served, `platform` while it is soft-deleted.
      await s3.setVersioning(isSuspended(address.orgId, stats) ? credentials.platform : credentials.org, address.name, versioning);
      return reportOf(address.orgId, address.bucketId, await existingStats(address));
    },

    async describeBucket(address) {
      const stats = await statsOf(address);
      return stats ? reportOf(address.orgId, address.bucketId, stats) : null;
    },

    async describeOrganization(orgId): Promise<OrganizationReport> {
      await organization(orgId);
      const ids = await bucketIdsOf(orgId);
      const held = [...(await admin.bucketsOf(orgUserOf(orgId))), ...(await admin.bucketsOf(platformUserOf(orgId)))];
      // Only the platform's buckets: a bucket the store holds without a platform id is not one of them.
      const ours = held.filter((stats) => ids.has(stats.bucket));
      // Served buckets made before the guard get it here, once per process; should that fail, at the
      // next pass. Never one the platform's user holds: that one is being made or is soft-deleted,
      // and its creation or restore guards it before handing it over. A policy put here would race
      // that hand-over, and a policy write racing a link leaves the bucket with its new owner but
      // the previous owner's ACL (seen on Pacific 16.2.15; a second link repairs it): the
      // organization's keys are then refused everything in their own bucket (AccessDenied).
      const served = ours.filter((stats) => !isSuspended(orgId, stats));
      await Promise.all(served.map((stats) => ensureGuard(orgId, stats).catch(() => undefined)));
      const buckets = await Promise.all(ours.map((stats) => reportOf(orgId, ids.get(stats.bucket)!, stats)));
      const usage = buckets.reduce(
        (total, bucket) => ({ bytes: total.bytes + bucket.usage.bytes, objects: total.objects + bucket.usage.objects }),
        { bytes: 0, objects: 0 },
      );
      const quota = await admin.getUserQuota(orgUserOf(orgId));
      const user = await admin.getUser(orgUserOf(orgId));
      const enforced: EnforcedQuota | null = quota.enabled
        ? { hardBytes: quota.max_size, maxObjects: quota.max_objects, writesSuspended: !(user?.op_mask ?? '').includes('write') }
        : null;
      return { buckets, usage, enforced, egressBytes: await admin.bytesSentByObjectReads(orgUserOf(orgId)) };
    },

    async setOrganizationQuota({ orgId, hardBytes, maxObjects, writesSuspended }) {
      await organization(orgId);
      await admin.setUserQuota(orgUserOf(orgId), { enabled: true, check_on_raw: true, max_size: hardBytes, max_objects: maxObjects });
      // Reads and deletes always work; only new writes stop.
      await admin.setOpMask(orgUserOf(orgId), writesSuspended ? ['read', 'delete'] : ['read', 'write', 'delete']);
      return { hardBytes, maxObjects, writesSuspended };
    },

    async createAccessKey({ orgId, keyId, secret }) {
      await organization(orgId);
      const accessKeyId = customerAccessKeyOf(keyId);
      await admin.putKey(orgUserOf(orgId), accessKeyId, secret);
      return { accessKeyId };
    },

    async revokeAccessKey({ orgId, keyId }) {
      await admin.removeKey(orgUserOf(orgId), customerAccessKeyOf(keyId));
    },
  };
}

function secretKeyOf(path: string): { orgId: string; keyId: string } {
  const key = keyOfSecretPath(path);
  if (!key) throw new PermanentBackendError('object store', 'not a secret-store path of an access key');
  return key;
}

/** Versions of objects, or parts of unfinished multipart uploads, as RGW's stats count them. */
const holdsObjects = (stats: BucketStats): boolean => Object.values(stats.usage).some((category) => (category?.num_objects ?? 0) > 0);

/** Per-bucket caps as RGW keeps them: -1 for none, byte-exact (not in 4 KiB units). */
const quotaOf = (caps: BucketCaps): RgwQuota => ({
  enabled: caps.maxObjects !== null || caps.maxSizeBytes !== null,
  check_on_raw: true,
  max_size: caps.maxSizeBytes ?? -1,
  max_objects: caps.maxObjects ?? -1,
});

const capsOf = (quota: RgwQuota): BucketCaps =>
  quota.enabled
    ? { maxObjects: quota.max_objects < 0 ? null : quota.max_objects, maxSizeBytes: quota.max_size < 0 ? null : quota.max_size }
    : { maxObjects: null, maxSizeBytes: null };
