import { randomUUID } from 'node:crypto';
import type { PoolClient, Queryable } from '../../../db/pool.ts';
import type { Role } from '../../../core/principal.ts';
import { generateApiKey } from '../api-tokens/api-token-secrets.ts';

export interface NewOrganization {
  orgId: string;
  memberId: string;
  /** The owner's first API key (read and write), shown once. */
  apiKey: string;
  apiKeyId: string;
}

/**
 * Creates an organization with its owner, the owner's first API key and its billing account:
 * nothing else, and no history (a demo history is the caller's explicit choice: billing's
 * `seedDemoHistory`). The tenancy every area relies on, hence here below the areas.
 */
export async function createOrganization(
  tx: PoolClient,
  options: { name: string; ownerSubject: string; ownerIssuer?: string | null },
): Promise<NewOrganization> {
  const orgId = randomUUID();
  await tx.query('INSERT INTO orgs (id, name) VALUES ($1, $2)', [orgId, options.name]);
  await tx.query('INSERT INTO billing_accounts (org_id) VALUES ($1)', [orgId]);
  const memberId = await addMember(tx, { orgId, subject: options.ownerSubject, issuer: options.ownerIssuer ?? null, role: 'owner' });
  const key = await createApiKeyRow(tx, { orgId, memberId, name: 'owner key', scopes: ['read', 'write'], expiresAt: null });
  return { orgId, memberId, apiKey: key.secret, apiKeyId: key.id };
}

export async function addMember(
  db: Queryable,
  member: { orgId: string; subject: string; issuer: string | null; role: Role },
): Promise<string> {
  const id = randomUUID();
  await db.query('INSERT INTO members (id, org_id, subject, issuer, role) VALUES ($1, $2, $3, $4, $5)', [
    id,
    member.orgId,
    member.subject,
    member.issuer,
    member.role,
  ]);
  return id;
}

/** An API key as stored, without its secret's hash (what the API shows of a key). */
export interface StoredApiKey {
  id: string;
  name: string;
  scopes: string[];
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** A new API key: its row (read back by the INSERT itself) and its secret, to be shown once. */
export async function createApiKeyRow(
  db: Queryable,
  key: { orgId: string; memberId: string; name: string; scopes: string[]; expiresAt: string | null },
): Promise<{ id: string; secret: string; row: StoredApiKey }> {
  const id = randomUUID();
  const { secret, hash } = generateApiKey();
  const { rows } = await db.query<StoredApiKey>({
    name: 'api-token-insert',
    text: `INSERT INTO api_tokens (id, org_id, member_id, name, scopes, secret_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
           RETURNING id, name, scopes, created_at, expires_at, last_used_at, revoked_at`,
    values: [id, key.orgId, key.memberId, key.name, key.scopes, hash, key.expiresAt],
  });
  return { id, secret, row: rows[0]! };
}

export async function organizationExists(db: Queryable): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM orgs LIMIT 1');
  return rows.length > 0;
}
