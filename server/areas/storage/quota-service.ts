import type { RequestContext } from '../../core/request-context.ts';
import { performWrite } from '../../core/write.ts';
import type { AreaDependencies } from '../area.ts';
import { s3QuotaOf, setCeiling, type S3QuotaOut } from './s3-quota.ts';

/**
 * The organization-wide storage ceiling. Setting it takes effect at once in the API; the
 * reconciler hands it to the object store, which then reports it as enforced. A ceiling below
 * the latest measured usage is accepted, with a warning: the store stops new writes.
 */
export function quotaService({ pool }: AreaDependencies) {
  return {
    async get(context: RequestContext): Promise<S3QuotaOut> {
      return s3QuotaOf(pool, context.principal.orgId);
    },

    async set(context: RequestContext, hardBytes: number) {
      const orgId = context.principal.orgId;
      return performWrite(pool, context, async (tx) => {
        await tx.query('SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [orgId]);
        const before = await s3QuotaOf(tx, orgId);
        await setCeiling(tx, orgId, hardBytes);
        // Below a measured usage only: without a sample there is nothing to be below.
        const belowUsage = before.usage_bytes !== null && before.usage_bytes !== undefined && hardBytes < before.usage_bytes;
        const after = await s3QuotaOf(tx, orgId, belowUsage ? 'below_current_usage' : null);
        return {
          response: { status: 200 as const, body: after },
          audit: {
            action: 's3_quota.set',
            resourceType: 's3_quota',
            resourceId: orgId,
            before: { cap_bytes: before.cap_bytes },
            after: { cap_bytes: after.cap_bytes, warning: after.warning ?? null },
          },
        };
      });
    },
  };
}
