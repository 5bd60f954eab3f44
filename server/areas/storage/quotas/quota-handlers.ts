import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import type { ObjectStoreDriver } from '../../../drivers/object-store.ts';
import { setStorageCeiling } from './quota-service.ts';
import { desiredLimits, s3QuotaOf } from './s3-quota.ts';

/** Handlers of the organization's storage ceiling. */
export function quotaHandlers({
  pool,
  objectStore,
}: {
  pool: Pool;
  objectStore: ObjectStoreDriver;
}): Pick<OperationHandlers<RequestContext>, 'getS3Quota' | 'setQuota'> {
  return {
    getS3Quota: async (_request, context) => ({ status: 200, body: await s3QuotaOf(pool, context.principal.orgId) }),

    setQuota: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const { before, after } = await setStorageCeiling(tx, context.principal.orgId, request.body.hard_bytes);
        return {
          response: { status: 200 as const, body: after },
          audit: {
            resourceId: context.principal.orgId,
            before: { cap_bytes: before.cap_bytes },
            after: { cap_bytes: after.cap_bytes, warning: after.warning ?? null },
          },
          // The store enforces the new ceiling from the next write on, not from the reconciler's
          // next pass; should this fail, the reconciler hands it over then.
          afterCommit: async () => {
            const orgId = context.principal.orgId;
            await objectStore.setOrganizationQuota({ orgId, ...(await desiredLimits(pool, orgId)) });
          },
        };
      }),
  };
}
