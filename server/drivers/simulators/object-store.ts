import { createHash, randomBytes } from 'node:crypto';
import { withTransaction, type PoolClient, type Queryable } from '../../db/pool.ts';
import { bucketTable, insertingBucket, newAccessKeyId } from '../bucket-table.ts';
import { PermanentBackendError } from '../errors.ts';
import type { BucketReport, EnforcedQuota, ObjectStoreDriver, OrganizationReport, SecretStore } from '../object-store.ts';
import type { SimulatorDependencies } from './dependencies.ts';
import { simulatedLatency } from './latency.ts';

/**
 * A simulated S3-compatible object store and secret store, kept in the sim_objectstore_* and
 * sim_secret_store tables. It holds real object versions and delete markers, so that usage,
 * emptiness and quotas behave as they would: a versioned bucket keeps every version and delete
 * marker until each is deleted by its version id.
 *
 * Besides the driver, it offers what a client of the S3 endpoint would do (put and delete
 * objects, list versions): not part of the driver, used by tests and demonstrations.
 */
export interface ObjectStoreSimulator extends ObjectStoreDriver {
  putObject(request: { orgId: string; bucket: string; key: string; sizeBytes: number }): Promise<{ versionId: string }>;
  /** Without a version id: a delete marker (versioned bucket) or removal (unversioned). With one: that version goes for good. */
  deleteObject(request: {
    orgId: string;
    bucket: string;
    key: string;
    versionId?: string;
  }): Promise<{ versionId: string; deleteMarker: boolean }>;
  listObjectVersions(request: { orgId: string; bucket: string }): Promise<ObjectVersion[]>;
  /** Serves the object's current version to a client: its bytes count as the organization's egress. */
  getObject(request: { orgId: string; bucket: string; key: string }): Promise<{ sizeBytes: number }>;
  /** Whether the store accepts this access key id with this secret. */
  acceptsCredentials(accessKeyId: string, secret: string): Promise<boolean>;
}

export interface ObjectVersion {
  key: string;
  versionId: string;
  deleteMarker: boolean;
  sizeBytes: number;
}

/** An S3 write refused by the store, for the reason given (what S3 would answer with an error code). */
export class WriteRefusedError extends Error {
  readonly reason: 'no_such_bucket' | 'no_such_key' | 'bucket_quota_exceeded' | 'organization_quota_exceeded' | 'writes_suspended';

  constructor(reason: 'no_such_bucket' | 'no_such_key' | 'bucket_quota_exceeded' | 'organization_quota_exceeded' | 'writes_suspended') {
    super(`write refused: ${reason}`);
    this.reason = reason;
  }
}

interface BucketRecord {
  id: string;
  org_id: string;
  name: string;
  versioning: boolean;
  max_objects: number | null;
  max_size_bytes: number | null;
  suspended: boolean;
  usage_bytes: number;
  usage_objects: number;
}

const BUCKET_WITH_USAGE = `
  SELECT b.id, b.org_id, b.name, b.versioning, b.max_objects, b.max_size_bytes, b.suspended,
         coalesce(sum(o.size_bytes), 0)::bigint AS usage_bytes, count(o.key)::bigint AS usage_objects
  FROM sim_objectstore_buckets b LEFT JOIN sim_objectstore_objects o ON o.bucket_id = b.id`;

const toReport = (row: BucketRecord): BucketReport => ({
  bucketId: row.id,
  name: row.name,
  versioning: row.versioning,
  quota: { maxObjects: row.max_objects, maxSizeBytes: row.max_size_bytes },
  suspended: row.suspended,
  usage: { bytes: Number(row.usage_bytes), objects: Number(row.usage_objects) },
});

export function createObjectStoreSimulator({ pool, latencyMs, faults }: SimulatorDependencies): ObjectStoreSimulator {
  /** Every driver call takes a backend's time and may be failed by a SIM_FAULTS rule. */
  const backendCall = async (method: string, subject: string): Promise<void> => {
    await simulatedLatency(latencyMs);
    await faults.check('objectstore', 'object store', method, subject);
  };

  const bucketById = async (db: Queryable, bucketId: string): Promise<BucketRecord | undefined> => {
    const { rows } = await db.query<BucketRecord>(`${BUCKET_WITH_USAGE} WHERE b.id = $1 GROUP BY b.id`, [bucketId]);
    return rows[0];
  };

  const buckets = bucketTable<BucketRecord>({ pool, table: 'sim_objectstore_buckets', read: bucketById, report: toReport });
  const existingBucket = buckets.existing;

  /** A bucket as an S3 client addresses it: by name, within its organization. */
  const servedBucket = async (tx: PoolClient, orgId: string, name: string): Promise<BucketRecord> => {
    const { rows } = await tx.query<{ id: string }>(
      'SELECT id FROM sim_objectstore_buckets WHERE org_id = $1 AND name = $2 AND NOT suspended FOR UPDATE',
      [orgId, name],
    );
    const bucket = rows[0] && (await bucketById(tx, rows[0].id));
    if (!bucket) throw new WriteRefusedError('no_such_bucket');
    return bucket;
  };

  const secrets: SecretStore = {
    async put(path, secret) {
      await simulatedLatency(latencyMs);
      await faults.check('secretstore', 'object store', 'put', path);
      await pool.query(
        `INSERT INTO sim_secret_store (path, secret) VALUES ($1, $2) ON CONFLICT (path) DO UPDATE SET secret = EXCLUDED.secret`,
        [path, secret],
      );
    },
    async get(path) {
      await simulatedLatency(latencyMs);
      await faults.check('secretstore', 'object store', 'get', path);
      const { rows } = await pool.query<{ secret: string }>('SELECT secret FROM sim_secret_store WHERE path = $1', [path]);
      return rows[0]?.secret ?? null;
    },
    async destroy(path) {
      await simulatedLatency(latencyMs);
      await faults.check('secretstore', 'object store', 'destroy', path);
      await pool.query('DELETE FROM sim_secret_store WHERE path = $1', [path]);
    },
  };

  return {
    secrets,

    async createBucket(spec) {
      await backendCall('createBucket', spec.name);
      await insertingBucket(() =>
        pool.query(
          `INSERT INTO sim_objectstore_buckets (id, org_id, name, versioning, max_objects, max_size_bytes)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
          [spec.bucketId, spec.orgId, spec.name, spec.versioning, spec.quota.maxObjects, spec.quota.maxSizeBytes],
        ),
      );
      return toReport(await existingBucket(pool, spec));
    },

    async suspendBucket(address) {
      await backendCall('suspendBucket', address.name);
      return withTransaction(pool, async (tx) => {
        await tx.query('SELECT 1 FROM sim_objectstore_buckets WHERE id = $1 FOR UPDATE', [address.bucketId]);
        const bucket = await existingBucket(tx, address);
        if (Number(bucket.usage_objects) > 0) throw new PermanentBackendError('object store', 'bucket not empty');
        await tx.query('UPDATE sim_objectstore_buckets SET suspended = true WHERE id = $1', [address.bucketId]);
        return toReport({ ...bucket, suspended: true });
      });
    },

    async resumeBucket(address) {
      await backendCall('resumeBucket', address.name);
      return buckets.resume(address);
    },

    async purgeBucket(address) {
      await backendCall('purgeBucket', address.name);
      await pool.query('DELETE FROM sim_objectstore_buckets WHERE id = $1', [address.bucketId]);
    },

    async setBucketQuota({ quota, ...address }) {
      await backendCall('setBucketQuota', address.name);
      return buckets.setQuota(address, quota);
    },

    async setBucketVersioning({ versioning, ...address }) {
      await backendCall('setBucketVersioning', address.name);
      await existingBucket(pool, address);
      await pool.query('UPDATE sim_objectstore_buckets SET versioning = $2 WHERE id = $1', [address.bucketId, versioning]);
      return toReport(await existingBucket(pool, address));
    },

    async describeBucket(address) {
      await backendCall('describeBucket', address.name);
      return buckets.describe(address);
    },

    async describeOrganization(orgId): Promise<OrganizationReport> {
      await backendCall('describeOrganization', orgId);
      const buckets = (
        await pool.query<BucketRecord>(`${BUCKET_WITH_USAGE} WHERE b.org_id = $1 GROUP BY b.id ORDER BY b.created_at`, [orgId])
      ).rows.map(toReport);
      const { rows } = await pool.query<{ hard_bytes: number; max_objects: number; writes_suspended: boolean }>(
        'SELECT hard_bytes, max_objects, writes_suspended FROM sim_objectstore_org_quotas WHERE org_id = $1',
        [orgId],
      );
      const enforced: EnforcedQuota | null = rows[0]
        ? { hardBytes: Number(rows[0].hard_bytes), maxObjects: Number(rows[0].max_objects), writesSuspended: rows[0].writes_suspended }
        : null;
      const usage = buckets.reduce(
        (total, bucket) => ({ bytes: total.bytes + bucket.usage.bytes, objects: total.objects + bucket.usage.objects }),
        { bytes: 0, objects: 0 },
      );
      const { rows: egress } = await pool.query<{ bytes: string }>('SELECT bytes::text FROM sim_objectstore_egress WHERE org_id = $1', [
        orgId,
      ]);
      return { buckets, usage, enforced, egressBytes: Number(egress[0]?.bytes ?? 0) };
    },

    async setOrganizationQuota({ orgId, hardBytes, maxObjects, writesSuspended }) {
      await backendCall('setOrganizationQuota', orgId);
      await pool.query(
        `INSERT INTO sim_objectstore_org_quotas (org_id, hard_bytes, max_objects, writes_suspended) VALUES ($1, $2, $3, $4)
         ON CONFLICT (org_id) DO UPDATE SET hard_bytes = EXCLUDED.hard_bytes, max_objects = EXCLUDED.max_objects,
           writes_suspended = EXCLUDED.writes_suspended, updated_at = now()`,
        [orgId, hardBytes, maxObjects, writesSuspended],
      );
      return { hardBytes, maxObjects, writesSuspended };
    },

    async createAccessKey({ orgId, keyId, secret }) {
      await backendCall('createAccessKey', keyId);
      const candidate = newAccessKeyId();
      await pool.query(
        `INSERT INTO sim_objectstore_access_keys (key_id, org_id, access_key_id, secret_sha256) VALUES ($1, $2, $3, $4)
         ON CONFLICT (key_id) DO NOTHING`,
        [keyId, orgId, candidate, sha256(secret)],
      );
      const { rows } = await pool.query<{ access_key_id: string }>(
        'SELECT access_key_id FROM sim_objectstore_access_keys WHERE key_id = $1',
        [keyId],
      );
      return { accessKeyId: rows[0]!.access_key_id };
    },

    async revokeAccessKey({ keyId }) {
      await backendCall('revokeAccessKey', keyId);
      await pool.query('UPDATE sim_objectstore_access_keys SET revoked = true WHERE key_id = $1', [keyId]);
    },

    async putObject({ orgId, bucket: name, key, sizeBytes }) {
      return withTransaction(pool, async (tx) => {
        const bucket = await servedBucket(tx, orgId, name);
        // An unversioned bucket replaces the key's one version; a versioned one adds a version.
        const replaced = bucket.versioning
          ? { bytes: 0, objects: 0 }
          : await usageOf(
              tx,
              'SELECT coalesce(sum(size_bytes), 0)::bigint AS bytes, count(*)::bigint AS objects FROM sim_objectstore_objects WHERE bucket_id = $1 AND key = $2',
              [bucket.id, key],
            );
        const bucketBytes = Number(bucket.usage_bytes) - replaced.bytes + sizeBytes;
        const bucketObjects = Number(bucket.usage_objects) - replaced.objects + 1;
        if (
          (bucket.max_size_bytes !== null && bucketBytes > bucket.max_size_bytes) ||
          (bucket.max_objects !== null && bucketObjects > bucket.max_objects)
        ) {
          throw new WriteRefusedError('bucket_quota_exceeded');
        }
        const { rows } = await tx.query<{ hard_bytes: number; max_objects: number; writes_suspended: boolean }>(
          'SELECT hard_bytes, max_objects, writes_suspended FROM sim_objectstore_org_quotas WHERE org_id = $1',
          [orgId],
        );
        const ceiling = rows[0];
        if (ceiling?.writes_suspended) throw new WriteRefusedError('writes_suspended');
        if (ceiling) {
          const organization = await usageOf(
            tx,
            `SELECT coalesce(sum(o.size_bytes), 0)::bigint AS bytes, count(o.key)::bigint AS objects
             FROM sim_objectstore_objects o JOIN sim_objectstore_buckets b ON b.id = o.bucket_id WHERE b.org_id = $1`,
            [orgId],
          );
          // At or over the ceiling, new writes stop until usage falls below it.
          if (
            organization.bytes >= Number(ceiling.hard_bytes) ||
            organization.bytes - replaced.bytes + sizeBytes > Number(ceiling.hard_bytes)
          ) {
            throw new WriteRefusedError('organization_quota_exceeded');
          }
          if (organization.objects - replaced.objects + 1 > Number(ceiling.max_objects))
            throw new WriteRefusedError('organization_quota_exceeded');
        }
        const versionId = bucket.versioning ? randomBytes(12).toString('hex') : 'null';
        if (!bucket.versioning) await tx.query('DELETE FROM sim_objectstore_objects WHERE bucket_id = $1 AND key = $2', [bucket.id, key]);
        await tx.query(
          'INSERT INTO sim_objectstore_objects (bucket_id, key, version_id, delete_marker, size_bytes) VALUES ($1, $2, $3, false, $4)',
          [bucket.id, key, versionId, sizeBytes],
        );
        return { versionId };
      });
    },

    async deleteObject({ orgId, bucket: name, key, versionId }) {
      return withTransaction(pool, async (tx) => {
        const bucket = await servedBucket(tx, orgId, name);
        if (versionId !== undefined) {
          const { rows } = await tx.query<{ delete_marker: boolean }>(
            'DELETE FROM sim_objectstore_objects WHERE bucket_id = $1 AND key = $2 AND version_id = $3 RETURNING delete_marker',
            [bucket.id, key, versionId],
          );
          return { versionId, deleteMarker: rows[0]?.delete_marker ?? false };
        }
        if (!bucket.versioning) {
          await tx.query('DELETE FROM sim_objectstore_objects WHERE bucket_id = $1 AND key = $2', [bucket.id, key]);
          return { versionId: 'null', deleteMarker: false };
        }
        // Deleting in a versioned bucket hides the object behind a delete marker; its versions stay.
        const markerId = randomBytes(12).toString('hex');
        await tx.query(
          'INSERT INTO sim_objectstore_objects (bucket_id, key, version_id, delete_marker, size_bytes) VALUES ($1, $2, $3, true, 0)',
          [bucket.id, key, markerId],
        );
        return { versionId: markerId, deleteMarker: true };
      });
    },

    async listObjectVersions({ orgId, bucket: name }) {
      const { rows } = await pool.query<{ key: string; version_id: string; delete_marker: boolean; size_bytes: number }>(
        `SELECT o.key, o.version_id, o.delete_marker, o.size_bytes FROM sim_objectstore_objects o
         JOIN sim_objectstore_buckets b ON b.id = o.bucket_id WHERE b.org_id = $1 AND b.name = $2 ORDER BY o.key, o.seq DESC`,
        [orgId, name],
      );
      return rows.map((row) => ({
        key: row.key,
        versionId: row.version_id,
        deleteMarker: row.delete_marker,
        sizeBytes: Number(row.size_bytes),
      }));
    },

    async getObject({ orgId, bucket: name, key }) {
      return withTransaction(pool, async (tx) => {
        const bucket = await servedBucket(tx, orgId, name);
        const { rows } = await tx.query<{ size_bytes: string; delete_marker: boolean }>(
          'SELECT size_bytes::text, delete_marker FROM sim_objectstore_objects WHERE bucket_id = $1 AND key = $2 ORDER BY seq DESC LIMIT 1',
          [bucket.id, key],
        );
        const current = rows[0];
        if (!current || current.delete_marker) throw new WriteRefusedError('no_such_key');
        const sizeBytes = Number(current.size_bytes);
        await tx.query(
          `INSERT INTO sim_objectstore_egress (org_id, bytes) VALUES ($1, $2)
           ON CONFLICT (org_id) DO UPDATE SET bytes = sim_objectstore_egress.bytes + EXCLUDED.bytes`,
          [orgId, sizeBytes],
        );
        return { sizeBytes };
      });
    },

    async acceptsCredentials(accessKeyId, secret) {
      const { rows } = await pool.query<{ secret_sha256: Buffer; revoked: boolean }>(
        'SELECT secret_sha256, revoked FROM sim_objectstore_access_keys WHERE access_key_id = $1',
        [accessKeyId],
      );
      return rows[0] !== undefined && !rows[0].revoked && rows[0].secret_sha256.equals(sha256(secret));
    },
  };
}

async function usageOf(db: Queryable, sql: string, values: unknown[]): Promise<{ bytes: number; objects: number }> {
  const { rows } = await db.query<{ bytes: number; objects: number }>(sql, values);
  return { bytes: Number(rows[0]?.bytes ?? 0), objects: Number(rows[0]?.objects ?? 0) };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
