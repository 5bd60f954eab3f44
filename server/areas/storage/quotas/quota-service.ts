import type { PoolClient } from '../../../db/pool.ts';
import { s3QuotaOf, setCeiling, type S3QuotaOut } from './s3-quota.ts';

/**
 * The organization-wide storage ceiling. Setting it takes effect at once in the API; the
 * reconciler hands it to the object store, which then reports it as enforced. A ceiling below
 * the latest measured usage is accepted, with a warning: the store stops new writes.
 */
export async function setStorageCeiling(
  tx: PoolClient,
  orgId: string,
  hardBytes: number,
): Promise<{ before: S3QuotaOut; after: S3QuotaOut }> {
  await tx.query('SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [orgId]);
  const before = await s3QuotaOf(tx, orgId);
  await setCeiling(tx, orgId, hardBytes);
  // Below a measured usage only: without a sample there is nothing to be below.
  const belowUsage = before.usage_bytes !== null && before.usage_bytes !== undefined && hardBytes < before.usage_bytes;
  return { before, after: await s3QuotaOf(tx, orgId, belowUsage ? 'below_current_usage' : null) };
}
