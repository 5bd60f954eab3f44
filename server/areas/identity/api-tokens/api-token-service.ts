import { createApiKeyRow } from '../organizations/organization-service.ts';
import type { Clock } from '../../../core/clock.ts';
import { fieldInvalid, forbidden, notFound } from '../../../core/errors.ts';
import type { Principal, Scope } from '../../../core/principal.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { lockToken, markRevoked, type TokenRow } from './api-token-rows.ts';

/** The rules of API keys: a key never holds a scope its creator lacks, and expires in the future. */
export function createApiTokenService(clock: Clock) {
  return {
    async create(
      tx: PoolClient,
      creator: Principal,
      request: { name: string; scopes?: Scope[]; expiresAt: string | null },
    ): Promise<{ token: TokenRow; secret: string }> {
      const scopes = [...new Set(request.scopes ?? ['read'])].sort() as Scope[];
      if (request.expiresAt !== null && Date.parse(request.expiresAt) <= clock.now().getTime()) {
        throw fieldInvalid('/expires_at', 'must be in the future');
      }
      const beyond = scopes.filter((scope) => !creator.scopes.has(scope));
      if (beyond.length > 0) {
        throw forbidden(
          `This credential has the ${[...creator.scopes].join(' and ')} scope only; it cannot create a key with scopes: ${beyond.join(', ')}.`,
        );
      }
      const key = await createApiKeyRow(tx, {
        orgId: creator.orgId,
        memberId: creator.memberId,
        name: request.name,
        scopes,
        expiresAt: request.expiresAt,
      });
      return { token: key.row as TokenRow, secret: key.secret };
    },

    async revoke(tx: PoolClient, orgId: string, tokenId: string): Promise<{ before: TokenRow; after: TokenRow }> {
      const before = await lockToken(tx, orgId, tokenId);
      if (!before) throw notFound(`No API key ${tokenId} in this organization.`);
      return { before, after: await markRevoked(tx, tokenId) };
    },
  };
}

export type ApiTokenService = ReturnType<typeof createApiTokenService>;
