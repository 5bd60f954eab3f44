import type { OperationHandlers } from '../../../../generated/operations.ts';
import { isoOrNull } from '../../../core/clock.ts';
import { notFound } from '../../../core/errors.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import type { Pool } from '../../../db/pool.ts';
import { organizationById } from '../organizations/organization-rows.ts';

/** getAccount: the organization the credential opens, and the credential itself, as authentication found them. */
export function accountHandlers({ pool }: { pool: Pool }): Pick<OperationHandlers<RequestContext>, 'getAccount'> {
  return {
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
  };
}
