import type { Queryable } from '../../../db/pool.ts';
import { PermanentBackendError } from '../../../drivers/errors.ts';
import type { ObjectStoreDriver } from '../../../drivers/object-store.ts';
import { lockingRows, type Executor, type Executors } from '../../../engine/executor.ts';
import type { OperationRow } from '../../../engine/operation-record.ts';
import { accessKeyOfOperation, deleteAccessKeyRow, updateAccessKey, type AccessKeyRow, type AccessKeyState } from './access-key-rows.ts';

/**
 * The executors of S3 access keys: issuing makes the store accept the key with the secret kept
 * in the secret store; revoking makes it refuse the key and destroys the secret. `cancelled`
 * undoes what the request changed.
 */
export function accessKeyExecutors(pool: Queryable, objectStore: ObjectStoreDriver): Executors<'access_key.create' | 'access_key.revoke'> {
  const accessKeyOf = async (operation: OperationRow): Promise<AccessKeyRow> => {
    const key = await accessKeyOfOperation(pool, operation.org_id, operation.resource_id);
    if (!key) throw new Error(`access key ${operation.resource_id} of ${operation.type} has no record`);
    return key;
  };

  const createAccessKey: Executor<{ accessKeyId: string }> = {
    async perform(operation) {
      const key = await accessKeyOf(operation);
      const secret = key.secretstore_path ? await objectStore.secrets.get(key.secretstore_path) : null;
      if (secret === null) throw new PermanentBackendError('object store', 'the secret of the key is not in the secret store');
      return objectStore.createAccessKey({ orgId: key.org_id, keyId: key.id, secret });
    },
    async succeeded(tx, operation, outcome) {
      await updateAccessKey(tx, operation.resource_id, { state: 'active', objectstore_access_key_id: outcome.accessKeyId }, 'issuing');
    },
    async failed(tx, operation) {
      await updateAccessKey(tx, operation.resource_id, { state: 'error' }, 'issuing');
    },
    async cancelled(tx, operation) {
      // Never issued: the key goes, and its secret with it once the key's record is gone.
      const key = await deleteAccessKeyRow(tx, operation.resource_id, 'issuing');
      const path = key?.secretstore_path;
      if (path) return () => objectStore.secrets.destroy(path);
    },
  };

  const keyBackToPrevious = async (tx: Queryable, operation: OperationRow) => {
    const { previous_state: previous } = operation.payload as { previous_state: AccessKeyState };
    await updateAccessKey(tx, operation.resource_id, { state: previous }, 'revoking');
  };

  const revokeAccessKey: Executor<void> = {
    async perform(operation) {
      const key = await accessKeyOf(operation);
      await objectStore.revokeAccessKey({ orgId: key.org_id, keyId: key.id });
      if (key.secretstore_path) await objectStore.secrets.destroy(key.secretstore_path);
    },
    async succeeded(tx, operation) {
      await updateAccessKey(tx, operation.resource_id, { state: 'revoked', secretstore_path: null }, 'revoking');
    },
    // The store still accepts the key: it is what it was before (active, or in error), and can
    // be revoked again.
    failed: (tx, operation) => keyBackToPrevious(tx, operation),
    cancelled: (tx, operation) => keyBackToPrevious(tx, operation),
  };

  return lockingRows('s3_access_keys', { 'access_key.create': createAccessKey, 'access_key.revoke': revokeAccessKey });
}
