import type { NextFunction, Request, Response } from 'express';
import type { Pool } from '../db/pool.ts';
import type { IdentityResolver } from '../auth/identity.ts';
import { recordAudit } from '../core/audit.ts';
import { auditNames } from '../core/audit-names.ts';
import { actorOf, type Principal } from '../core/principal.ts';
import { ApiError, forbidden, unauthenticated } from './errors.ts';
import { stateOf, type RequestState } from './request-state.ts';

/** Bearer credential → principal, or 401. */
export function authenticate(identity: IdentityResolver) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const state = stateOf(res);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('Authorization') ?? '');
    if (!match) throw unauthenticated();
    const principal = await identity.resolve(match[1]!, state.route?.params.org);
    if (principal === undefined) throw unauthenticated('The credential is not valid: unknown, malformed, expired or revoked.');
    if (principal === 'no_membership') throw forbidden('This credential has no access to this organization.');
    state.principal = principal;
    state.log = state.log.child({ org_id: principal.orgId });
    next();
  };
}

/**
 * The credential may act on this path: its organization, and the scope the operation requires
 * (`read` for GET, `write` otherwise). A denied write leaves an audit event.
 */
export function authorize(pool: Pool) {
  return async (_req: Request, res: Response, next: NextFunction): Promise<void> => {
    const state = stateOf(res);
    const principal = state.principal!;
    const { route, params } = state.route!;
    if (params.org !== principal.orgId) {
      throw await denied(pool, state, principal, forbidden('This credential belongs to another organization.'));
    }
    if (!principal.scopes.has(route.scope)) {
      throw await denied(pool, state, principal, forbidden(`This credential has the ${[...principal.scopes].join(' and ')} scope only; this operation needs ${route.scope}.`));
    }
    next();
  };
}

async function denied(pool: Pool, state: RequestState, principal: Principal, error: ApiError): Promise<ApiError> {
  const names = auditNames[state.route!.operationId];
  if (names) {
    await recordAudit(pool, {
      orgId: principal.orgId,
      action: names.action,
      resourceType: names.resourceType,
      resourceId: names.idParam ? state.route!.params[names.idParam] : null,
      actor: actorOf(principal),
      result: 'denied',
      reason: `${error.code}: ${error.detail}`,
      requestId: state.requestId,
    });
    state.audited = true;
  }
  return error;
}
