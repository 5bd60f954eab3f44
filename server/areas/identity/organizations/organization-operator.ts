import { recordAudit } from '../../../core/audit.ts';
import type { Actor, Role } from '../../../core/principal.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { addMember, createApiKeyRow, createOrganization, type NewOrganization } from './organization-service.ts';

/** An organization created by an operator (`npm run admin -- create-org`), with its audit event. */
export async function createOrganizationByOperator(tx: PoolClient, request: { name: string; actor: Actor }): Promise<NewOrganization> {
  const created = await createOrganization(tx, { name: request.name, ownerSubject: 'owner' });
  await recordAudit(tx, {
    orgId: created.orgId,
    action: 'org.create',
    resourceType: 'organization',
    resourceId: created.orgId,
    after: { name: request.name },
    actor: request.actor,
    result: 'succeeded',
  });
  return created;
}

/**
 * A member added by an operator (`npm run admin -- add-member`): the subject of an OIDC issuer,
 * with a role, and a read+write API key for them when asked; with its audit event.
 */
export async function addMemberByOperator(
  tx: PoolClient,
  request: { orgId: string; subject: string; issuer: string | null; role: Role; withApiKey: boolean; actor: Actor },
): Promise<Record<string, unknown>> {
  const { orgId, subject, issuer, role } = request;
  const memberId = await addMember(tx, { orgId, subject, issuer, role });
  await recordAudit(tx, {
    orgId,
    action: 'org.add_member',
    resourceType: 'membership',
    resourceId: memberId,
    after: { subject, issuer, role },
    actor: request.actor,
    result: 'succeeded',
  });
  const result: Record<string, unknown> = { member_id: memberId, org_id: orgId, subject, role };
  if (request.withApiKey) {
    const key = await createApiKeyRow(tx, { orgId, memberId, name: `${subject} key`, scopes: ['read', 'write'], expiresAt: null });
    result.api_key = key.secret;
  }
  return result;
}
