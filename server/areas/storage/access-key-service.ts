import { randomUUID } from 'node:crypto';
import { decodeCursor, DEFAULT_PAGE_SIZE, page } from '../../core/pagination.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { performWrite } from '../../core/write.ts';
import { enqueueOperation, toOperationRef } from '../../engine/operation-record.ts';
import type { AreaDependencies } from '../area.ts';
import {
  accessKeysPage,
  findAccessKey,
  generateSecretAccessKey,
  insertAccessKey,
  secretStorePathOf,
  toAccessKeyOut,
  updateAccessKey,
} from './access-keys.ts';
import { accessKeyNotFound, accessKeyStateConflict } from './errors.ts';

/**
 * S3 access keys: the secret is made here, written to the secret store, shown once in the
 * creation response and never kept in our tables; the `access_key.create` operation registers
 * the key with the object store, `access_key.revoke` withdraws it and destroys the secret.
 */
export function accessKeyService({ pool, config, drivers }: AreaDependencies) {
  const maxAttempts = config.engine.maxAttempts;

  return {
    async create(context: RequestContext) {
      const orgId = context.principal.orgId;
      const keyId = randomUUID();
      const secret = generateSecretAccessKey();
      const secretstorePath = secretStorePathOf(orgId, keyId);
      // Stored before the record that points to it. Should the transaction fail, the secret
      // is left at a path no key refers to, and no one ever received it.
      await drivers.objectStore.secrets.put(secretstorePath, secret);
      return performWrite(pool, context, async (tx) => {
        await insertAccessKey(tx, { id: keyId, orgId, secretstorePath });
        const operation = await enqueueOperation(tx, { orgId, type: 'access_key.create', resourceType: 'access_key', resourceId: keyId, maxAttempts });
        const accessKey = toAccessKeyOut((await updateAccessKey(tx, keyId, { operation_id: operation.id }))!);
        const withoutSecret = { access_key: accessKey, operation: toOperationRef(operation), secret_access_key: null };
        return {
          response: { status: 202 as const, body: { ...withoutSecret, secret_access_key: secret } },
          // Shown once: an idempotent replay answers without it.
          replayBody: withoutSecret,
          audit: { resourceId: keyId, after: accessKey, operationId: operation.id },
        };
      });
    },

    async list(context: RequestContext, query: { limit?: number; cursor?: string }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const after = decodeCursor('access-keys', query.cursor);
      const rows = await accessKeysPage(pool, context.principal.orgId, after, limit + 1);
      return page('access-keys', rows, limit, (row) => ({ key: row.sort_key, id: row.id }), toAccessKeyOut);
    },

    async revoke(context: RequestContext, keyId: string) {
      const orgId = context.principal.orgId;
      return performWrite(pool, context, async (tx) => {
        const before = await findAccessKey(tx, orgId, keyId, { forUpdate: true });
        if (!before) throw accessKeyNotFound(keyId);
        if (before.state !== 'active' && before.state !== 'error') throw accessKeyStateConflict(keyId, before.state);
        // What a cancelled revoke puts back.
        const payload = { previous_state: before.state };
        const operation = await enqueueOperation(tx, { orgId, type: 'access_key.revoke', resourceType: 'access_key', resourceId: keyId, maxAttempts, payload });
        const accessKey = toAccessKeyOut((await updateAccessKey(tx, keyId, { state: 'revoking', operation_id: operation.id }))!);
        return {
          response: { status: 202 as const, body: { access_key: accessKey, operation: toOperationRef(operation) } },
          audit: { resourceId: keyId, before: toAccessKeyOut(before), after: accessKey, operationId: operation.id },
        };
      });
    },
  };
}
