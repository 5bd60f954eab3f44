import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { toApiTokenOut, tokensPage } from './api-token-rows.ts';
import type { ApiTokenService } from './api-token-service.ts';

type ApiTokenOperations = 'createApiToken' | 'listApiTokens' | 'revokeApiToken';

/** Handlers of API keys: read the request, call the service, answer. */
export function apiTokenHandlers({
  pool,
  tokens,
  credentialsChanged = async () => {},
}: {
  pool: Pool;
  tokens: ApiTokenService;
  /** Called once a change of a key has committed, with the credentials it changed; the answer waits for it. */
  credentialsChanged?: (tags: readonly string[]) => Promise<void>;
}): Pick<OperationHandlers<RequestContext>, ApiTokenOperations> {
  return {
    createApiToken: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const created = await tokens.create(tx, context.principal, {
          name: request.body.name,
          scopes: request.body.scopes,
          expiresAt: request.body.expires_at ?? null,
        });
        const token = toApiTokenOut(created.token);
        return {
          response: { status: 201 as const, body: { token, secret: created.secret } },
          // The secret is never stored: a replay returns the key without it.
          replayBody: { token },
          audit: { resourceId: token.id, after: token },
          events: [{ orgId: context.principal.orgId, type: 'api_key.created', resourceId: token.id, data: { api_key: token } }],
        };
      }),

    listApiTokens: async (request, context) => ({ status: 200, body: await tokensPage(pool, context.principal.orgId, request.query) }),

    revokeApiToken: async (request, context) => {
      const answer = await performWrite(pool, context, async (tx) => {
        const { before, after } = await tokens.revoke(tx, context.principal.orgId, request.path.token_id);
        const token = toApiTokenOut(after);
        return {
          response: { status: 200 as const, body: token },
          audit: { resourceId: token.id, before: toApiTokenOut(before), after: token },
          // Revoking a revoked key changes nothing, and announces nothing.
          events:
            before.revoked_at === null
              ? [{ orgId: context.principal.orgId, type: 'api_key.revoked' as const, resourceId: token.id, data: { api_key: token } }]
              : [],
        };
      });
      // Other processes hear of it from the database (NOTIFY on commit). The answer waits until
      // the announcement is back here: by then it has reached every process that listens, so a
      // client told "revoked" finds the key refused whichever process it asks next.
      await credentialsChanged([`api_token:${request.path.token_id}`]);
      return answer;
    },
  };
}
