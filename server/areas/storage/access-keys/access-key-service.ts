import { randomUUID } from 'node:crypto';
import type { PoolClient } from '../../../db/pool.ts';
import type { ObjectStoreDriver } from '../../../drivers/object-store.ts';
import { enqueueOperation, type OperationRow } from '../../../engine/operation-record.ts';
import {
  findAccessKey,
  generateSecretAccessKey,
  insertAccessKey,
  secretStorePathOf,
  updateAccessKey,
  type AccessKeyRow,
} from './access-key-rows.ts';
import { accessKeyNotFound, accessKeyStateConflict } from '../storage-errors.ts';

/** A new key's secret, already in the secret store: the only time anyone sees it. */
export interface IssuedSecret {
  keyId: string;
  secret: string;
  secretstorePath: string;
}

/** A change of a key: the key after it, as it was before (null for a new one), and its operation. */
export interface AccessKeyChange {
  accessKey: AccessKeyRow;
  before: AccessKeyRow | null;
  operation: OperationRow;
}

/**
 * S3 access keys: the secret is made here, written to the secret store, shown once in the
 * creation response and never kept in our tables; the `access_key.create` operation registers
 * the key with the object store, `access_key.revoke` withdraws it and destroys the secret.
 */
export function createAccessKeyService({ maxAttempts, objectStore }: { maxAttempts: number; objectStore: ObjectStoreDriver }) {
  return {
    /**
     * Before the transaction (a backend call): the secret is stored before the record that points
     * to it. Should the transaction fail, the secret is left at a path no key refers to, and no
     * one ever received it.
     */
    async issueSecret(orgId: string): Promise<IssuedSecret> {
      const keyId = randomUUID();
      const secret = generateSecretAccessKey();
      const secretstorePath = secretStorePathOf(orgId, keyId);
      await objectStore.secrets.put(secretstorePath, secret);
      return { keyId, secret, secretstorePath };
    },

    async create(tx: PoolClient, orgId: string, issued: IssuedSecret): Promise<AccessKeyChange> {
      await insertAccessKey(tx, { id: issued.keyId, orgId, secretstorePath: issued.secretstorePath });
      const operation = await enqueueOperation(tx, {
        orgId,
        type: 'access_key.create',
        resourceType: 'access_key',
        resourceId: issued.keyId,
        maxAttempts,
      });
      return { accessKey: (await updateAccessKey(tx, issued.keyId, { operation_id: operation.id }))!, before: null, operation };
    },

    async revoke(tx: PoolClient, orgId: string, keyId: string): Promise<AccessKeyChange> {
      const before = await findAccessKey(tx, orgId, keyId, { forUpdate: true });
      if (!before) throw accessKeyNotFound(keyId);
      if (before.state !== 'active' && before.state !== 'error') throw accessKeyStateConflict(keyId, before.state);
      // What a cancelled revoke puts back.
      const payload = { previous_state: before.state };
      const operation = await enqueueOperation(tx, {
        orgId,
        type: 'access_key.revoke',
        resourceType: 'access_key',
        resourceId: keyId,
        maxAttempts,
        payload,
      });
      return { accessKey: (await updateAccessKey(tx, keyId, { state: 'revoking', operation_id: operation.id }))!, before, operation };
    },
  };
}

export type AccessKeyService = ReturnType<typeof createAccessKeyService>;
