import type { components } from '../../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Scope } from '../../../core/principal.ts';
import type { Queryable } from '../../../db/pool.ts';

type ApiTokenOut = components['schemas']['ApiTokenOut'];

/** An API key as stored: never its secret, only the secret's hash (auth/api-keys.ts). */
export interface TokenRow {
  id: string;
  name: string;
  scopes: Scope[];
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export const toApiTokenOut = (row: TokenRow): ApiTokenOut => ({
  id: row.id,
  name: row.name,
  scopes: row.scopes,
  created_at: iso(row.created_at),
  expires_at: isoOrNull(row.expires_at),
  last_used_at: isoOrNull(row.last_used_at),
  revoked_at: isoOrNull(row.revoked_at),
});

/** The organization's key, locked for a change. */
export async function lockToken(db: Queryable, orgId: string, tokenId: string): Promise<TokenRow | undefined> {
  return (await db.query<TokenRow>('SELECT * FROM api_tokens WHERE org_id = $1 AND id = $2 FOR UPDATE', [orgId, tokenId])).rows[0];
}

/** Revoked once: revoking again keeps the first revocation time. */
export async function markRevoked(db: Queryable, tokenId: string): Promise<TokenRow> {
  return (await db.query<TokenRow>('UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *', [tokenId]))
    .rows[0]!;
}

/** A page of the organization's keys, newest first. */
export function tokensPage(db: Queryable, orgId: string, query: { cursor?: string; limit?: number }) {
  return keysetPage(
    db,
    { name: 'api-tokens', from: 'api_tokens WHERE org_id = $1', params: [orgId], sortColumn: 'created_at', order: 'newest first' },
    query,
    toApiTokenOut,
  );
}
