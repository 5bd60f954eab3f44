import type { Pool } from '../db/pool.ts';
import type { Principal, Role, Scope } from '../core/principal.ts';
import { hashApiKey, looksLikeApiKey, sameHash } from './api-keys.ts';
import { looksLikeJwt, type OidcVerifier } from './oidc.ts';

/**
 * Turns a bearer credential into a principal. `undefined` means 401: missing, malformed,
 * unknown, expired or revoked. `'no_membership'` means a valid OIDC token whose subject is not a
 * member of the organization in the path: 403.
 */
export class IdentityResolver {
  private readonly pool: Pool;
  private readonly oidc: OidcVerifier | undefined;

  constructor(pool: Pool, oidc: OidcVerifier | undefined) {
    this.pool = pool;
    this.oidc = oidc;
  }

  async resolve(credential: string, pathOrgId: string | undefined): Promise<Principal | 'no_membership' | undefined> {
    if (looksLikeApiKey(credential)) return this.fromApiKey(credential);
    if (this.oidc && looksLikeJwt(credential)) return this.fromAccessToken(credential, pathOrgId);
    return undefined;
  }

  private async fromApiKey(secret: string): Promise<Principal | undefined> {
    const hash = hashApiKey(secret);
    const { rows } = await this.pool.query<{
      id: string;
      org_id: string;
      member_id: string;
      scopes: Scope[];
      secret_hash: Buffer;
      usable: boolean;
      role: Role;
      subject: string;
    }>(
      `SELECT t.id, t.org_id, t.member_id, t.scopes, t.secret_hash, m.role, m.subject,
              (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) AS usable
       FROM api_tokens t JOIN members m ON m.id = t.member_id
       WHERE t.secret_hash = $1`,
      [hash],
    );
    const key = rows[0];
    if (!key || !sameHash(key.secret_hash, hash) || !key.usable) return undefined;
    // last_used_at is coarse (to the minute), so that most requests write nothing.
    void this.pool
      .query(
        `UPDATE api_tokens SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
        [key.id],
      )
      .catch(() => {});
    return {
      orgId: key.org_id,
      memberId: key.member_id,
      role: key.role,
      scopes: new Set(key.scopes),
      subject: key.subject,
      realm: 'api_key',
      tokenId: key.id,
    };
  }

  private async fromAccessToken(token: string, pathOrgId: string | undefined): Promise<Principal | 'no_membership' | undefined> {
    const verified = await this.oidc!.verify(token);
    if (!verified) return undefined;
    if (!pathOrgId) return 'no_membership';
    const { rows } = await this.pool.query<{ id: string; role: Role }>(
      'SELECT id, role FROM members WHERE org_id = $1 AND subject = $2 AND issuer = $3',
      [pathOrgId, verified.subject, verified.issuer],
    );
    const member = rows[0];
    if (!member) return 'no_membership';
    return {
      orgId: pathOrgId,
      memberId: member.id,
      role: member.role,
      scopes: new Set<Scope>(['read', 'write']),
      subject: verified.subject,
      realm: verified.issuer,
      tokenId: null,
    };
  }
}
