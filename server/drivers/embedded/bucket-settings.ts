import type { Pool } from '../../db/pool.ts';
import type { DefaultRetention } from './object-lock.ts';
import type { PublicAccessBlock } from './rows.ts';

/**
 * What S3 clients set on a bucket besides its objects, kept on the bucket's row (so that the
 * lookup every request makes brings it along): default encryption, CORS rules, lifecycle rules
 * object lock's default retention, the bucket policy and the public access block. The S3 endpoint parses and checks each; the store keeps
 * them as given. A bucket that is not there changes nothing (false).
 */
export function bucketSettings(pool: Pool) {
  const set = async (bucketId: string, column: string, value: unknown, extra = ''): Promise<boolean> => {
    const { rowCount } = await pool.query(`UPDATE store_buckets SET ${column} = $2 WHERE id = $1 ${extra}`, [
      bucketId,
      value === null || typeof value === 'string' ? value : JSON.stringify(value),
    ]);
    return rowCount === 1;
  };
  return {
    setDefaultEncryption: (bucketId: string, algorithm: 'AES256' | null) => set(bucketId, 'default_encryption', algorithm),
    setCors: (bucketId: string, rules: unknown) => set(bucketId, 'cors', rules),
    setLifecycle: (bucketId: string, rules: unknown) => set(bucketId, 'lifecycle', rules),
    /** The policy document as given (checked by the S3 endpoint), or null to delete it. */
    setPolicy: (bucketId: string, policy: string | null) => set(bucketId, 'policy', policy),
    setPublicAccessBlock: (bucketId: string, block: PublicAccessBlock | null) => set(bucketId, 'public_access_block', block),
    /** Only on a bucket with object lock: false otherwise. */
    setDefaultRetention: (bucketId: string, rule: DefaultRetention | null) =>
      set(bucketId, 'object_lock_default', rule, 'AND object_lock_enabled'),
  };
}

export type BucketSettings = ReturnType<typeof bucketSettings>;
