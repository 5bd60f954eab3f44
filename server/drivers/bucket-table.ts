// The bucket control plane the two stores of this repository keep alike, each in a table of its
// own: the embedded store (store_buckets) and the simulator (sim_objectstore_buckets). How a
// bucket is read (with its usage) and reported differs between them; the statements of the
// control plane, the refusals and the access key ids they hand out do not.
import { randomBytes } from 'node:crypto';
import type { Pool, Queryable } from '../db/pool.ts';
import { PermanentBackendError } from './errors.ts';
import type { BucketAddress, BucketCaps, BucketReport } from './object-store.ts';

const UNIQUE_VIOLATION = '23505';
const ACCESS_KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** A new S3 access key id: `AKCP` and 16 characters of [A-Z0-9], as AWS's ids look. */
export function newAccessKeyId(): string {
  return `AKCP${Array.from(randomBytes(16), (byte) => ACCESS_KEY_ALPHABET[byte % ACCESS_KEY_ALPHABET.length]).join('')}`;
}

/** Runs a bucket's INSERT; another bucket of the organization holding the name is the driver's permanent refusal. */
export async function insertingBucket(insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (error) {
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw new PermanentBackendError('object store', 'bucket name in use');
    throw error;
  }
}

export interface BucketTable<Row> {
  /** The bucket's row, or the driver's permanent refusal when the store has none. */
  existing: (db: Queryable, address: BucketAddress) => Promise<Row>;
  /** What the store holds of the bucket; null when it holds nothing. */
  describe: (address: BucketAddress) => Promise<BucketReport | null>;
  setQuota: (address: BucketAddress, quota: BucketCaps) => Promise<BucketReport>;
  /** Serves the bucket again (a restored soft delete). */
  resume: (address: BucketAddress) => Promise<BucketReport>;
}

export function bucketTable<Row>({
  pool,
  table,
  read,
  report,
}: {
  pool: Pool;
  table: 'store_buckets' | 'sim_objectstore_buckets';
  /** The bucket's row with its usage, if the store holds it. */
  read: (db: Queryable, bucketId: string) => Promise<Row | undefined>;
  report: (row: Row) => BucketReport;
}): BucketTable<Row> {
  const existing = async (db: Queryable, address: BucketAddress): Promise<Row> => {
    const row = await read(db, address.bucketId);
    if (!row) throw new PermanentBackendError('object store', 'no such bucket');
    return row;
  };
  return {
    existing,
    async describe(address) {
      const row = await read(pool, address.bucketId);
      return row ? report(row) : null;
    },
    async setQuota(address, quota) {
      await existing(pool, address);
      await pool.query(`UPDATE ${table} SET max_objects = $2, max_size_bytes = $3 WHERE id = $1`, [
        address.bucketId,
        quota.maxObjects,
        quota.maxSizeBytes,
      ]);
      return report(await existing(pool, address));
    },
    async resume(address) {
      const row = await existing(pool, address);
      await pool.query(`UPDATE ${table} SET suspended = false WHERE id = $1`, [address.bucketId]);
      return { ...report(row), suspended: false };
    },
  };
}
