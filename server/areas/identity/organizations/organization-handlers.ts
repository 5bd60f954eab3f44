import type { OperationHandlers } from '../../../../generated/operations.ts';
import { iso } from '../../../core/clock.ts';
import { notFound } from '../../../core/errors.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import type { Pool } from '../../../db/pool.ts';
import type { AreaPorts } from '../../area.ts';
import { organizationById } from './organization-rows.ts';

/** getOrgContext: the organization, its object-storage figures (the storage area's) and enrollment. */
export function organizationHandlers({
  pool,
  ports,
}: {
  pool: Pool;
  ports: Pick<AreaPorts, 'storageQuotaOf'>;
}): Pick<OperationHandlers<RequestContext>, 'getOrgContext'> {
  return {
    async getOrgContext(_request, context) {
      const org = await organizationById(pool, context.principal.orgId);
      if (!org) throw notFound();
      return {
        status: 200,
        body: {
          name: org.name,
          org_id: org.id,
          quota: await ports.storageQuotaOf(pool, org.id),
          s3: { org_id: org.id, state: org.enrollment_state, created_at: iso(org.created_at), updated_at: iso(org.updated_at) },
        },
      };
    },
  };
}
