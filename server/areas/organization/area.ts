import type { Area, AreaDependencies } from '../area.ts';
import { organizationById } from './organization-rows.ts';
import { notFound } from '../../core/errors.ts';
import { iso, isoOrNull } from '../../core/clock.ts';
import type { Queryable } from '../../db/pool.ts';
import type { components } from '../../../generated/openapi.ts';

/** The organization's object-storage figures, as the storage area reckons them (null while not enrolled). */
export type StorageQuotaOf = (db: Queryable, orgId: string) => Promise<components['schemas']['QuotaOut'] | null>;

/**
 * getOrgContext: the organization, its object-storage figures (from the storage area) and
 * enrollment. getAccount: the organization the credential opens, and the credential, as
 * authentication found them.
 */
export function organizationArea({ pool }: AreaDependencies, storageQuotaOf: StorageQuotaOf): Area<'getOrgContext' | 'getAccount'> {
  return {
    executors: {},
    handlers: {
      async getAccount(_request, { principal }) {
        const org = await organizationById(pool, principal.orgId);
        if (!org) throw notFound();
        return {
          status: 200,
          body: {
            org_id: org.id,
            org_name: org.name,
            credential: {
              type: principal.tokenId === null ? 'oidc' : 'api_key',
              id: principal.tokenId,
              name: principal.credentialName,
              scopes: [...principal.scopes].sort(),
              expires_at: isoOrNull(principal.expiresAt),
            },
          },
        };
      },
      async getOrgContext(_request, context) {
        const org = await organizationById(pool, context.principal.orgId);
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
