import type { NextFunction, Request, Response } from 'express';
import type { IdentityResolver } from '../areas/identity/credentials/identity-resolver.ts';
import type { AuditNameTable } from '../core/audit-names.ts';
import { forbidden } from '../core/errors.ts';
import { RequestAudit } from '../core/request-audit.ts';
import { unauthenticated } from './errors.ts';
import { stateOf } from './request-state.ts';

/** The credential of a `Bearer` Authorization header, however spaced and cased; undefined for any other. */
export function bearerCredential(req: Request): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(req.get('Authorization') ?? '')?.[1];
}

/** Bearer credential → principal, or 401. Operations that take no credential (health probes) pass. */
export function authenticate(identity: IdentityResolver, auditNames: AuditNameTable) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const state = stateOf(res);
    if (state.route!.route.scope === 'none') return next();
    const credential = bearerCredential(req);
    if (credential === undefined) throw unauthenticated();
    const principal = await identity.resolve(credential, state.route?.params.org);
    if (principal === undefined) throw unauthenticated('The credential is not valid: unknown, malformed, expired or revoked.');
    if (principal === 'no_membership') {
      throw forbidden(
        state.route!.params.org === undefined
          ? "This token's subject is a member of no organization, or of several; address one by its path (/v1/orgs/{org})."
          : 'This credential has no access to this organization.',
      );
    }
    state.principal = principal;
    const { operationId, params } = state.route!;
    state.audit = new RequestAudit({ id: operationId, auditNames: auditNames[operationId] }, params, principal, state.requestId);
    next();
  };
}

/**
 * The credential may act on this path: its organization, and the scope the operation requires
 * (`read` for GET, `write` otherwise). A denied write leaves its audit event through the error
 * handler, like every refused write.
 */
export function authorize(_req: Request, res: Response, next: NextFunction): void {
  const state = stateOf(res);
  const { route, params } = state.route!;
  if (route.scope === 'none') return next();
  const principal = state.principal!;
  // A path without an organization (getAccount) answers for the credential's own.
  if (params.org !== undefined && params.org !== principal.orgId) throw forbidden('This credential belongs to another organization.');
  if (!principal.scopes.has(route.scope)) {
    throw forbidden(`This credential has the ${[...principal.scopes].join(' and ')} scope only; this operation needs ${route.scope}.`);
  }
  next();
}
