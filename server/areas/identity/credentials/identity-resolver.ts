import type { Pool } from '../../../db/pool.ts';
import type { Principal, Role, Scope } from '../../../core/principal.ts';
import { hashApiKey, looksLikeApiKey, sameHash } from '../api-tokens/api-token-secrets.ts';
import type { CredentialCache } from './credential-cache.ts';
import { looksLikeJwt, type OidcVerifier } from './oidc.ts';

/** last_used_at is to the minute: a key's use is written at most this often by one process. */
const LAST_USED_RESOLUTION_MS = 60_000;
const MAX_TOUCHED = 100_000;

/** Where the credential cache keeps a key's principal: by its hash, never its secret. */
const cacheKeyOf = (hash: Buffer): string => hash.toString('base64');

/**
 * Turns a bearer credential into a principal. `undefined` means 401: missing, malformed,
 * unknown, expired or revoked. `'no_membership'` means a valid OIDC token whose subject is not a
 * member of the organization in the path: 403.
 */
export class IdentityResolver {
  private readonly pool: Pool;
  private readonly oidc: OidcVerifier | undefined;
  /** Keys already looked up (absent: every request asks the database). */
  private readonly cache: CredentialCache | undefined;
  /** When this process last wrote each key's last_used_at. */
  private readonly lastTouched = new Map<string, number>();

  constructor(pool: Pool, oidc: OidcVerifier | undefined, cache?: CredentialCache) {
    this.pool = pool;
    this.oidc = oidc;
    this.cache = cache;
  }

  async resolve(credential: string, pathOrgId: string | undefined): Promise<Principal | 'no_membership' | undefined> {
    if (looksLikeApiKey(credential)) return this.fromApiKey(credential);
    if (this.oidc && looksLikeJwt(credential)) return this.fromAccessToken(credential, pathOrgId);
    return undefined;
  }

  /**
   * Whether `credential` is an API key this process has verified and has heard no change of since
   * (see CredentialCache.wasVerified): a hash and a lookup, never the database. For the rate
   * limits only; `resolve` decides whether the key works.
   */
  isKnownApiKey(credential: string): boolean {
    if (!looksLikeApiKey(credential) || !this.cache) return false;
    const hash = cacheKeyOf(hashApiKey(credential));
    return this.cache.get(hash) !== undefined || this.cache.wasVerified(hash);
  }

  private async fromApiKey(secret: string): Promise<Principal | undefined> {
    const hash = hashApiKey(secret);
    const cacheKey = cacheKeyOf(hash);
    const cached = this.cache?.get(cacheKey);
    if (cached) {
      this.touch(cached.tokenId!);
      return cached;
    }
    const ticket = this.cache?.ticket() ?? 0;
    const { rows } = await this.pool.query<{
      id: string;
      org_id: string;
      member_id: string;
      scopes: Scope[];
      secret_hash: Buffer;
      usable: boolean;
      expires_at: Date | null;
      role: Role;
      subject: string;
      name: string;
    }>(
      `SELECT t.id, t.org_id, t.member_id, t.scopes, t.secret_hash, t.expires_at, t.name, m.role, m.subject,
              (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) AS usable
       FROM api_tokens t JOIN members m ON m.id = t.member_id
       WHERE t.secret_hash = $1`,
      [hash],
    );
    const key = rows[0];
    if (!key || !sameHash(key.secret_hash, hash) || !key.usable) {
      this.cache?.refused(cacheKey);
      return undefined;
    }
    const principal: Principal = {
      orgId: key.org_id,
      memberId: key.member_id,
      role: key.role,
      scopes: new Set(key.scopes),
      subject: key.subject,
      realm: 'api_key',
      tokenId: key.id,
      credentialName: key.name,
      expiresAt: key.expires_at,
    };
    this.cache?.put(ticket, cacheKey, principal, key.expires_at);
    this.touch(key.id);
    return principal;
  }

  /**
   * Records that a key was used: coarsely (to the minute), so at most once a minute per key and
   * process, and off the request path (not awaited; a failure only leaves the time older).
   */
  private touch(tokenId: string): void {
    const now = Date.now();
    const last = this.lastTouched.get(tokenId);
    if (last !== undefined && now - last < LAST_USED_RESOLUTION_MS) return;
    if (this.lastTouched.size >= MAX_TOUCHED) this.lastTouched.clear();
    this.lastTouched.set(tokenId, now);
    void this.pool
      .query(
        `UPDATE api_tokens SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
        [tokenId],
      )
      .catch(() => {});
  }

  /**
   * A path without an organization (getAccount) takes the one organization the token's subject is
   * a member of; a member of none, or of several, is `no_membership` there.
   */
  private async fromAccessToken(token: string, pathOrgId: string | undefined): Promise<Principal | 'no_membership' | undefined> {
    const verified = await this.oidc!.verify(token);
    if (!verified) return undefined;
    const { rows } = pathOrgId
      ? await this.pool.query<{ id: string; org_id: string; role: Role }>(
          'SELECT id, org_id, role FROM members WHERE org_id = $1 AND subject = $2 AND issuer = $3',
          [pathOrgId, verified.subject, verified.issuer],
        )
      : await this.pool.query<{ id: string; org_id: string; role: Role }>(
          'SELECT id, org_id, role FROM members WHERE subject = $1 AND issuer = $2 LIMIT 2',
          [verified.subject, verified.issuer],
        );
    const member = rows[0];
    if (!member || rows.length > 1) return 'no_membership';
    return {
      orgId: member.org_id,
      memberId: member.id,
      role: member.role,
      scopes: new Set<Scope>(['read', 'write']),
      subject: verified.subject,
      realm: verified.issuer,
      tokenId: null,
      credentialName: verified.subject,
      expiresAt: verified.expiresAt,
    };
  }
}
