import { withTransaction, type Pool } from '../../db/pool.ts';
import type { StoreContext } from './write-path.ts';
import type { AuditStatement } from './s3/platform-port.ts';
import type { DefaultRetention } from './object-lock.ts';
import type { PublicAccessBlock } from './rows.ts';

/**
 * What S3 clients set on a bucket besides its objects, kept on the bucket's row (so that the
 * lookup every request makes brings it along): default encryption, CORS rules, lifecycle rules
 * object lock's default retention, the bucket policy and the public access block. The S3 endpoint parses and checks each; the store keeps
 * them as given. A bucket that is not there changes nothing (false). Each change commits with its
 * audit event (`audit`, the platform's statement), or not at all, and answers once no cache serves
 * the bucket as it was.
 */
export function bucketSettings(store: Pick<StoreContext, 'pool' | 'cachesSynced'>) {
  const set = (bucketId: string, column: string, value: unknown, audit: AuditStatement, extra = '') =>
    setBucketColumn(store, bucketId, column, value, audit, extra);
  return {
    setDefaultEncryption: (bucketId: string, algorithm: 'AES256' | null, audit: AuditStatement) =>
      set(bucketId, 'default_encryption', algorithm, audit),
    setCors: (bucketId: string, rules: unknown, audit: AuditStatement) => set(bucketId, 'cors', rules, audit),
    setLifecycle: (bucketId: string, rules: unknown, audit: AuditStatement) => set(bucketId, 'lifecycle', rules, audit),
    /** The policy document as given (checked by the S3 endpoint), or null to delete it. */
    setPolicy: (bucketId: string, policy: string | null, audit: AuditStatement) => set(bucketId, 'policy', policy, audit),
    setPublicAccessBlock: (bucketId: string, block: PublicAccessBlock | null, audit: AuditStatement) =>
      set(bucketId, 'public_access_block', block, audit),
    /** Only on a bucket with object lock: false otherwise. */
    setDefaultRetention: (bucketId: string, rule: DefaultRetention | null, audit: AuditStatement) =>
      set(bucketId, 'object_lock_default', rule, audit, 'AND object_lock_enabled'),
  };
}

/**
 * Sets one column of a bucket's row (`extra`: a further condition), with its audit event; whether
 * it changed. Answers once no S3 endpoint's cache serves the bucket as it was (the row's change is
 * announced: s3/access.ts).
 */
export async function setBucketColumn(
  { pool, cachesSynced }: Pick<StoreContext, 'pool' | 'cachesSynced'>,
  bucketId: string,
  column: string,
  value: unknown,
  audit: AuditStatement,
  extra = '',
): Promise<boolean> {
  const changed = await changeBucketRow(
    pool,
    `UPDATE store_buckets SET ${column} = $2 WHERE id = $1 ${extra}`,
    [bucketId, jsonb(value)],
    audit,
  );
  if (changed) await cachesSynced();
  return changed;
}

/** A setting as its column takes it: text as it is, anything else as JSON. */
export const jsonb = (value: unknown): unknown => (value === null || typeof value === 'string' ? value : JSON.stringify(value));

/** One change of a row of the store and its audit event, in one transaction; whether a row changed (no event otherwise). */
export async function changeBucketRow(pool: Pool, text: string, values: unknown[], audit: AuditStatement): Promise<boolean> {
  return withTransaction(
    pool,
    async (tx) => (await tx.query(text, values)).rowCount === 1,
    (changed) => (changed ? [audit] : []),
  );
}

export type BucketSettings = ReturnType<typeof bucketSettings>;
