import type { Area, AreaDependencies } from '../area.ts';
import { notFound } from '../../core/errors.ts';
import { iso } from '../../core/clock.ts';
import { storageQuotaOf } from '../storage/quota-figures.ts';

/** getOrgContext: the organization, its object-storage figures and enrollment. */
export function organizationArea({ pool }: AreaDependencies): Area<'getOrgContext'> {
  return {
    executors: {},
    handlers: {
      async getOrgContext(_request, context) {
        const { rows } = await pool.query<{ id: string; name: string; enrollment_state: 'active' | 'suspended'; created_at: Date; updated_at: Date }>(
          'SELECT id, name, enrollment_state, created_at, updated_at FROM orgs WHERE id = $1',
          [context.principal.orgId],
        );
        const org = rows[0];
        if (!org) throw notFound();
        return {
          status: 200,
          body: {
            name: org.name,
            org_id: org.id,
            quota: await storageQuotaOf(pool, org.id),
            s3: { org_id: org.id, state: org.enrollment_state, created_at: iso(org.created_at), updated_at: iso(org.updated_at) },
          },
        };
      },
    },
  };
}
