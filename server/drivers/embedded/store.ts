import { randomInt } from 'node:crypto';
import path from 'node:path';
import { DatabaseListener } from '../../db/listener.ts';
import { withTransaction, type Pool, type Queryable } from '../../db/pool.ts';
import { bucketTable, insertingBucket, newAccessKeyId } from '../bucket-table.ts';
import { PermanentBackendError } from '../errors.ts';
import type { BucketReport, EnforcedQuota, ObjectStoreDriver, OrganizationReport, SecretStore } from '../object-store.ts';
import type { FaultInjector } from '../simulators/faults.ts';
import { simulatedLatency } from '../simulators/latency.ts';
import { BlobFiles } from './blobs.ts';
import { bucketSettings } from './bucket-settings.ts';
import { lifecycleOperations } from './lifecycle.ts';
import { multipartOperations } from './multipart.ts';
import { objectLockOperations } from './object-lock.ts';
import { objectOperations } from './objects.ts';
import { bucketOf, num, type StoredBucket } from './rows.ts';
import { createObjectKeyring } from './sealing.ts';
import { createSecretBox, loadSecretBoxKey } from './secret-box.ts';
import { sweep } from './sweep.ts';
import { dropGarbage, markGarbage, type StoreContext } from './write-path.ts';

/** The advisory-lock namespace of store instances (the second key is the instance number). */
export const INSTANCE_LOCK_NAMESPACE = 7_361_205;

/**
 * The embedded object store: the object-store driver (buckets, versioning, quotas, access keys,
 * usage, soft deletion) over PostgreSQL metadata and files under DATA_DIR/objects, plus the data
 * plane the S3 endpoint (./s3/) serves. Driver calls may be failed by SIM_FAULTS rules
 * (`objectstore.<method>` and `secretstore.<method>`), as the simulator's are, for tests.
 */
export interface EmbeddedObjectStore extends ObjectStoreDriver {
  objects: ReturnType<typeof objectOperations>;
  multipart: ReturnType<typeof multipartOperations>;
  /** Default encryption, CORS, lifecycle rules and default retention of a bucket. */
  settings: ReturnType<typeof bucketSettings>;
  /** Object lock: turning it on for a bucket, and versions' retention and legal hold. */
  objectLock: ReturnType<typeof objectLockOperations>;
  /** Buckets' lifecycle rules, applied by the platform's background work. */
  lifecycle: ReturnType<typeof lifecycleOperations>;
  keys: {
    /** The key of an access key id, with its secret, unless revoked in the store. */
    lookup(accessKeyId: string): Promise<{ orgId: string; keyId: string; secret: string } | undefined>;
  };
  /** Where the bytes live. */
  dataRoot: string;
  /** Removes what crashed or failed writes left (also run at start and periodically). */
  sweep(): Promise<void>;
  close(): Promise<void>;
}

export interface EmbeddedStoreOptions {
  pool: Pool;
  dataDir: string;
  secretKey: string | undefined;
  faults: FaultInjector;
  /** Latency added to each driver call before its fault check, for tests (SIM_LATENCY_MS when set). */
  latencyMs?: [number, number];
  /** Multipart uploads begun longer ago than this are aborted by the sweep (default 7 days). */
  incompleteUploadRetentionMs?: number;
  /** How long a day of lifecycle rules lasts (default a day). */
  lifecycleDayMs?: number;
  /**
   * The process's listener (platform.ts), which holds the store's instance lock whenever it is
   * connected; it must be started before the store takes writes. Without one, the store opens its own.
   */
  listener?: DatabaseListener;
}

export const DEFAULT_INCOMPLETE_UPLOAD_RETENTION_MS = 7 * 86_400_000;

/**
 * For the listener the store opens itself (made without the platform's: the admin command), which
 * has no logger to write to; the platform's listener logs its lost connections.
 */
const quietLog = { info: () => {}, warn: () => {} };

const toReport = (row: StoredBucket): BucketReport => ({
  bucketId: row.id,
  name: row.name,
  versioning: row.versioning,
  quota: { maxObjects: row.max_objects, maxSizeBytes: row.max_size_bytes },
  suspended: row.suspended,
  usage: { bytes: row.usage_bytes, objects: row.usage_objects },
});

export async function createEmbeddedObjectStore({
  pool,
  dataDir,
  secretKey,
  faults,
  latencyMs = [0, 0],
  incompleteUploadRetentionMs = DEFAULT_INCOMPLETE_UPLOAD_RETENTION_MS,
  lifecycleDayMs = 86_400_000,
  listener,
}: EmbeddedStoreOptions): Promise<EmbeddedObjectStore> {
  const blobs = new BlobFiles(path.join(dataDir, 'objects'));
  await blobs.init();
  // One secret for the store: it seals the secrets, and object data keys are wrapped under a key derived from it.
  const storeKey = loadSecretBoxKey(dataDir, secretKey);
  const box = createSecretBox(storeKey);

  // This process's liveness, for the sweep of other processes' reservations: held as long as
  // the process lives, on a connection that takes it again when it is lost and comes back. While
  // it is lost, another process's sweep may take this process's reservations: a write whose
  // reservation went is refused as it commits (0940_swept_reservation_refused.sql).
  const instance = randomInt(1, 2 ** 31 - 1);
  const ownListener = listener ? undefined : new DatabaseListener(pool.options, quietLog, 'cloud-platform-store-lock');
  (listener ?? ownListener)!.holdLock(INSTANCE_LOCK_NAMESPACE, instance);
  await ownListener?.start();

  const processListener = (listener ?? ownListener)!;
  const context: StoreContext = {
    pool,
    blobs,
    instance,
    keyring: createObjectKeyring(storeKey),
    cachesSynced: () => processListener.sync(),
  };
  // Each driver call may be slowed (SIM_LATENCY_MS) and failed (SIM_FAULTS) as the simulators' are.
  const check = async (method: string, subject: string, backend: 'objectstore' | 'secretstore' = 'objectstore') => {
    await simulatedLatency(latencyMs);
    await faults.check(backend, 'object store', method, subject);
  };

  const bucketById = async (db: Queryable, bucketId: string): Promise<StoredBucket | undefined> => {
    const { rows } = await db.query<StoredBucket>('SELECT * FROM store_buckets WHERE id = $1', [bucketId]);
    return rows[0] && bucketOf(rows[0]);
  };
  const buckets = bucketTable<StoredBucket>({ pool, table: 'store_buckets', read: bucketById, report: toReport });
  const existingBucket = buckets.existing;

  /** Removes every upload of a bucket (their parts' files go as garbage). */
  const abortUploadsOf = async (bucketId: string) => {
    const freed = await withTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ blob: string }>(
        'SELECT p.blob FROM store_parts p JOIN store_uploads u USING (upload_id) WHERE u.bucket_id = $1',
        [bucketId],
      );
      const names = rows.map((row) => row.blob);
      await markGarbage(tx, names);
      await tx.query('DELETE FROM store_uploads WHERE bucket_id = $1', [bucketId]);
      return names;
    });
    await dropGarbage(context, freed);
  };

  const secrets: SecretStore = {
    async put(secretPath, secret) {
      await check('put', secretPath, 'secretstore');
      await pool.query(
        'INSERT INTO store_secrets (path, sealed) VALUES ($1, $2) ON CONFLICT (path) DO UPDATE SET sealed = EXCLUDED.sealed',
        [secretPath, box.seal(secret)],
      );
    },
    async get(secretPath) {
      await check('get', secretPath, 'secretstore');
      const { rows } = await pool.query<{ sealed: string }>('SELECT sealed FROM store_secrets WHERE path = $1', [secretPath]);
      return rows[0] ? box.open(rows[0].sealed) : null;
    },
    async destroy(secretPath) {
      await check('destroy', secretPath, 'secretstore');
      await pool.query('DELETE FROM store_secrets WHERE path = $1', [secretPath]);
    },
  };

  const store: EmbeddedObjectStore = {
    secrets,
    objects: objectOperations(context),
    multipart: multipartOperations(context),
    settings: bucketSettings(context),
    objectLock: objectLockOperations(context),
    lifecycle: lifecycleOperations(context, lifecycleDayMs),
    dataRoot: blobs.root,

    async createBucket(spec) {
      await check('createBucket', spec.name);
      await pool.query('INSERT INTO store_orgs (org_id) VALUES ($1) ON CONFLICT DO NOTHING', [spec.orgId]);
      await insertingBucket(() =>
        pool.query(
          `INSERT INTO store_buckets (id, org_id, name, versioning, versioning_configured, max_objects, max_size_bytes)
           VALUES ($1, $2, $3, $4, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
          [spec.bucketId, spec.orgId, spec.name, spec.versioning, spec.quota.maxObjects, spec.quota.maxSizeBytes],
        ),
      );
      return toReport(await existingBucket(pool, spec));
    },

    async suspendBucket(address) {
      await check('suspendBucket', address.name);
      const report = await withTransaction(pool, async (tx) => {
        await tx.query('SELECT 1 FROM store_buckets WHERE id = $1 FOR UPDATE', [address.bucketId]);
        const bucket = await existingBucket(tx, address);
        if (bucket.usage_objects > 0) throw new PermanentBackendError('object store', 'bucket not empty');
        await tx.query('UPDATE store_buckets SET suspended = true WHERE id = $1', [address.bucketId]);
        return toReport({ ...bucket, suspended: true });
      });
      await context.cachesSynced();
      await abortUploadsOf(address.bucketId);
      return report;
    },

    async resumeBucket(address) {
      await check('resumeBucket', address.name);
      return buckets.resume(address);
    },

    async purgeBucket(address) {
      await check('purgeBucket', address.name);
      await abortUploadsOf(address.bucketId);
      const freed = await withTransaction(pool, async (tx) => {
        const { rows } = await tx.query<StoredBucket>('SELECT * FROM store_buckets WHERE id = $1 FOR UPDATE', [address.bucketId]);
        const bucket = rows[0] && bucketOf(rows[0]);
        if (!bucket) return [];
        const segments = await tx.query<{ blob: string }>(
          `SELECT s->>'blob' AS blob FROM store_versions v, jsonb_array_elements(v.segments) s WHERE v.bucket_id = $1`,
          [bucket.id],
        );
        const names = segments.rows.map((row) => row.blob);
        await markGarbage(tx, names);
        await tx.query('UPDATE store_orgs SET usage_bytes = usage_bytes - $2, usage_objects = usage_objects - $3 WHERE org_id = $1', [
          bucket.org_id,
          bucket.usage_bytes,
          bucket.usage_objects,
        ]);
        await tx.query('DELETE FROM store_buckets WHERE id = $1', [bucket.id]);
        return names;
      });
      await dropGarbage(context, freed);
    },

    async setBucketQuota({ quota, ...address }) {
      await check('setBucketQuota', address.name);
      return buckets.setQuota(address, quota);
    },

    async setBucketVersioning({ versioning, ...address }) {
      await check('setBucketVersioning', address.name);
      await existingBucket(pool, address);
      // Under the bucket's lock, as writes take it: a write sees versioning as it was or as it is, whole.
      await withTransaction(pool, async (tx) => {
        await tx.query('SELECT 1 FROM store_buckets WHERE id = $1 FOR UPDATE', [address.bucketId]);
        await tx.query('UPDATE store_buckets SET versioning = $2, versioning_configured = true WHERE id = $1', [
          address.bucketId,
          versioning,
        ]);
      });
      await context.cachesSynced();
      return toReport(await existingBucket(pool, address));
    },

    async describeBucket(address) {
      await check('describeBucket', address.name);
      return buckets.describe(address);
    },

    async describeOrganization(orgId): Promise<OrganizationReport> {
      await check('describeOrganization', orgId);
      const buckets = (
        await pool.query<StoredBucket>('SELECT * FROM store_buckets WHERE org_id = $1 ORDER BY created_at', [orgId])
      ).rows.map((row) => toReport(bucketOf(row)));
      // One row, whose store_orgs columns are null when the organization has none yet.
      const { rows } = await pool.query<{
        usage_bytes: number | null;
        usage_objects: number | null;
        egress_bytes: number;
        hard_bytes: number | null;
        max_objects: number | null;
        writes_suspended: boolean | null;
      }>(
        // Egress is the folded figure plus the log not yet folded, read in one snapshot (a fold
        // moves bytes from one to the other in one transaction).
        `SELECT o.usage_bytes, o.usage_objects, o.hard_bytes, o.max_objects, o.writes_suspended,
           coalesce(o.egress_bytes, 0) + (SELECT coalesce(sum(bytes), 0) FROM store_egress WHERE org_id = $1)::bigint AS egress_bytes
         FROM (SELECT $1::uuid AS org_id) wanted LEFT JOIN store_orgs o USING (org_id)`,
        [orgId],
      );
      const row = rows[0]!;
      const enforced: EnforcedQuota | null =
        row.hard_bytes !== null && row.max_objects !== null
          ? { hardBytes: num(row.hard_bytes), maxObjects: num(row.max_objects), writesSuspended: row.writes_suspended === true }
          : null;
      return {
        buckets,
        usage: { bytes: num(row.usage_bytes ?? 0), objects: num(row.usage_objects ?? 0) },
        enforced,
        egressBytes: num(row.egress_bytes),
      };
    },

    async setOrganizationQuota({ orgId, hardBytes, maxObjects, writesSuspended }) {
      await check('setOrganizationQuota', orgId);
      await pool.query(
        `INSERT INTO store_orgs (org_id, hard_bytes, max_objects, writes_suspended) VALUES ($1, $2, $3, $4)
         ON CONFLICT (org_id) DO UPDATE SET hard_bytes = EXCLUDED.hard_bytes, max_objects = EXCLUDED.max_objects,
           writes_suspended = EXCLUDED.writes_suspended`,
        [orgId, hardBytes, maxObjects, writesSuspended],
      );
      return { hardBytes, maxObjects, writesSuspended };
    },

    async createAccessKey({ orgId, keyId, secret }) {
      await check('createAccessKey', keyId);
      const candidate = newAccessKeyId();
      await pool.query(
        `INSERT INTO store_access_keys (key_id, org_id, access_key_id, secret_sealed) VALUES ($1, $2, $3, $4)
         ON CONFLICT (key_id) DO NOTHING`,
        [keyId, orgId, candidate, box.seal(secret)],
      );
      const { rows } = await pool.query<{ access_key_id: string }>('SELECT access_key_id FROM store_access_keys WHERE key_id = $1', [
        keyId,
      ]);
      return { accessKeyId: rows[0]!.access_key_id };
    },

    async revokeAccessKey({ keyId }) {
      await check('revokeAccessKey', keyId);
      await pool.query('UPDATE store_access_keys SET revoked = true WHERE key_id = $1', [keyId]);
    },

    keys: {
      async lookup(accessKeyId) {
        const { rows } = await pool.query<{ org_id: string; key_id: string; secret_sealed: string }>(
          'SELECT org_id, key_id, secret_sealed FROM store_access_keys WHERE access_key_id = $1 AND NOT revoked',
          [accessKeyId],
        );
        const row = rows[0];
        return row && { orgId: row.org_id, keyId: row.key_id, secret: box.open(row.secret_sealed) };
      },
    },

    sweep: () => sweep(context, INSTANCE_LOCK_NAMESPACE, incompleteUploadRetentionMs),

    async close() {
      await ownListener?.stop();
    },
  };
  await store.sweep();
  return store;
}
