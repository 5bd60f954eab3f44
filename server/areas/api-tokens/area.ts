import type { components } from '../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../core/clock.ts';
import { keysetPage } from '../../core/pagination.ts';
import type { Scope } from '../../core/principal.ts';
import { performWrite } from '../../core/write.ts';
import { fieldInvalid, forbidden, notFound } from '../../core/errors.ts';
import type { Area, AreaDependencies } from '../area.ts';
import { createApiKeyRow } from '../../auth/organizations.ts';

type ApiTokenOut = components['schemas']['ApiTokenOut'];

interface TokenRow {
  id: string;
  name: string;
  scopes: Scope[];
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const toApiTokenOut = (row: TokenRow): ApiTokenOut => ({
  id: row.id,
  name: row.name,
  scopes: row.scopes,
  created_at: iso(row.created_at),
  expires_at: isoOrNull(row.expires_at),
  last_used_at: isoOrNull(row.last_used_at),
  revoked_at: isoOrNull(row.revoked_at),
});

/** API keys: created with a secret shown once, listed as metadata, revoked at once. */
export function apiTokensArea({ pool, clock }: AreaDependencies): Area<'createApiToken' | 'listApiTokens' | 'revokeApiToken'> {
  return {
    executors: {},
    handlers: {
      async createApiToken(request, context) {
        const { name, expires_at: expiresAt = null } = request.body;
        const scopes = [...new Set(request.body.scopes ?? ['read'])].sort() as Scope[];
        if (expiresAt !== null && Date.parse(expiresAt) <= clock.now().getTime()) {
          throw fieldInvalid('/expires_at', 'must be in the future');
        }
        const beyond = scopes.filter((scope) => !context.principal.scopes.has(scope));
        if (beyond.length > 0) {
          throw forbidden(`This credential has the ${[...context.principal.scopes].join(' and ')} scope only; it cannot create a key with scopes: ${beyond.join(', ')}.`);
        }
        return performWrite(pool, context, async (tx) => {
          const key = await createApiKeyRow(tx, { orgId: context.principal.orgId, memberId: context.principal.memberId, name, scopes, expiresAt });
          const { rows } = await tx.query<TokenRow>('SELECT * FROM api_tokens WHERE id = $1', [key.id]);
          const token = toApiTokenOut(rows[0]!);
          return {
            response: { status: 201 as const, body: { token, secret: key.secret } },
            // The secret is never stored: a replay returns the key without it.
            replayBody: { token },
            audit: { resourceId: key.id, after: token },
          };
        });
      },

      async listApiTokens(request, context) {
        const list = { name: 'api-tokens', from: 'api_tokens WHERE org_id = $1', params: [context.principal.orgId], sortColumn: 'created_at', order: 'newest first' } as const;
        return { status: 200, body: await keysetPage(pool, list, request.query, toApiTokenOut) };
      },

      async revokeApiToken(request, context) {
        return performWrite(pool, context, async (tx) => {
          const before = await tx.query<TokenRow>('SELECT * FROM api_tokens WHERE org_id = $1 AND id = $2 FOR UPDATE', [context.principal.orgId, request.path.token_id]);
          if (!before.rows[0]) throw notFound(`No API key ${request.path.token_id} in this organization.`);
          const { rows } = await tx.query<TokenRow>(
            'UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *',
            [request.path.token_id],
          );
          const token = toApiTokenOut(rows[0]!);
          return {
            response: { status: 200 as const, body: token },
            audit: { resourceId: token.id, before: toApiTokenOut(before.rows[0]!), after: token },
          };
        });
      },
    },
  };
}
