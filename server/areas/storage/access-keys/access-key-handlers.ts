import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { toOperationRef } from '../../../engine/operation-record.ts';
import type { AccessKeyService } from './access-key-service.ts';
import { accessKeysPage, toAccessKeyOut } from './access-key-rows.ts';

/** Handlers of S3 access keys: read the request, call the service, answer. */
export function accessKeyHandlers({
  pool,
  accessKeys,
  accessKeysChanged = async () => {},
}: {
  pool: Pool;
  accessKeys: AccessKeyService;
  /** After a revoke commits: resolves once every process has heard of it (S3 keys are cached; see s3/access.ts). */
  accessKeysChanged?: (tags: readonly string[]) => Promise<void>;
}): Pick<OperationHandlers<RequestContext>, 'createAccessKey' | 'listAccessKeys' | 'revokeAccessKey'> {
  const orgOf = (context: RequestContext) => context.principal.orgId;
  return {
    async createAccessKey(_request, context) {
      const issued = await accessKeys.issueSecret(orgOf(context));
      return performWrite(pool, context, async (tx) => {
        const change = await accessKeys.create(tx, orgOf(context), issued);
        const accessKey = toAccessKeyOut(change.accessKey);
        const withoutSecret = { access_key: accessKey, operation: toOperationRef(change.operation), secret_access_key: null };
        return {
          response: { status: 202 as const, body: { ...withoutSecret, secret_access_key: issued.secret } },
          // Shown once: an idempotent replay answers without it.
          replayBody: withoutSecret,
          audit: { resourceId: accessKey.id, after: accessKey, operationId: change.operation.id },
        };
      });
    },

    listAccessKeys: async (request, context) => ({ status: 200, body: await accessKeysPage(pool, orgOf(context), request.query) }),

    revokeAccessKey: async (request, context) => {
      const answer = await performWrite(pool, context, async (tx) => {
        const change = await accessKeys.revoke(tx, orgOf(context), request.path.key_id);
        const accessKey = toAccessKeyOut(change.accessKey);
        return {
          response: { status: 202 as const, body: { access_key: accessKey, operation: toOperationRef(change.operation) } },
          audit: {
            resourceId: accessKey.id,
            before: change.before ? toAccessKeyOut(change.before) : null,
            after: accessKey,
            operationId: change.operation.id,
          },
        };
      });
      // The key stops at the request (revoking is not active): other processes hear of it from
      // the database (NOTIFY on commit), and the answer waits until the announcement is back here,
      // so a client told 'revoking' finds the key refused by whichever process it asks next.
      await accessKeysChanged([`s3_access_key:${request.path.key_id}`]);
      return answer;
    },
  };
}
