import { randomBytes } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Queryable } from '../../../db/pool.ts';
import { updateRow } from '../../../db/update-row.ts';

// The s3_access_keys table: rows, their API shape, and every query on them. The secret is never
// a column: it lives in the secret store, at secretstore_path.

export type AccessKeyOut = components['schemas']['AccessKeyOut'];
export type AccessKeyState = AccessKeyOut['state'];

export interface AccessKeyRow {
  id: string;
  org_id: string;
  state: AccessKeyState;
  objectstore_access_key_id: string | null;
  secretstore_path: string | null;
  last_rotated_at: Date | null;
  operation_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export const toAccessKeyOut = (row: AccessKeyRow): AccessKeyOut => ({
  id: row.id,
  state: row.state,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  objectstore_access_key_id: row.objectstore_access_key_id,
  secretstore_path: row.secretstore_path,
  last_rotated_at: isoOrNull(row.last_rotated_at),
  operation_id: row.operation_id,
});

/** Where the secret store keeps a key's secret. */
export const secretStorePathOf = (orgId: string, keyId: string): string => `orgs/${orgId}/s3-access-keys/${keyId}`;

/** A new secret: 30 random bytes as 40 base64 characters (the S3 secret key format). */
export const generateSecretAccessKey = (): string => randomBytes(30).toString('base64');

export async function findAccessKey(
  db: Queryable,
  orgId: string,
  keyId: string,
  options: { forUpdate?: boolean } = {},
): Promise<AccessKeyRow | undefined> {
  const { rows } = await db.query<AccessKeyRow>(
    `SELECT * FROM s3_access_keys WHERE org_id = $1 AND id = $2 ${options.forUpdate ? 'FOR UPDATE' : ''}`,
    [orgId, keyId],
  );
  return rows[0];
}

/** A page of the organization's keys, oldest first. */
export function accessKeysPage(db: Queryable, orgId: string, query: { cursor?: string; limit?: number }) {
  return keysetPage(
    db,
    { name: 'access-keys', from: 's3_access_keys WHERE org_id = $1', params: [orgId], sortColumn: 'created_at', order: 'oldest first' },
    query,
    toAccessKeyOut,
  );
}

export async function insertAccessKey(db: Queryable, key: { id: string; orgId: string; secretstorePath: string }): Promise<void> {
  await db.query(`INSERT INTO s3_access_keys (id, org_id, state, secretstore_path) VALUES ($1, $2, 'issuing', $3)`, [
    key.id,
    key.orgId,
    key.secretstorePath,
  ]);
}

export interface AccessKeyChanges {
  state?: AccessKeyState;
  operation_id?: string;
  objectstore_access_key_id?: string;
  secretstore_path?: string | null;
}

const CHANGEABLE: ReadonlyArray<keyof AccessKeyChanges> = ['state', 'operation_id', 'objectstore_access_key_id', 'secretstore_path'];

/** Changes a key (and its updated_at); with `onlyIn`, only while it is in that state. */
export async function updateAccessKey(
  db: Queryable,
  keyId: string,
  changes: AccessKeyChanges,
  onlyIn?: AccessKeyState,
): Promise<AccessKeyRow | undefined> {
  return updateRow<AccessKeyRow>(db, 's3_access_keys', keyId, changes, CHANGEABLE, onlyIn);
}

export async function deleteAccessKeyRow(db: Queryable, keyId: string, onlyIn: AccessKeyState): Promise<AccessKeyRow | undefined> {
  const { rows } = await db.query<AccessKeyRow>('DELETE FROM s3_access_keys WHERE id = $1 AND state = $2 RETURNING *', [keyId, onlyIn]);
  return rows[0];
}

/** The key an operation works on (the operation names the organization). */
export async function accessKeyOfOperation(db: Queryable, orgId: string, keyId: string): Promise<AccessKeyRow | undefined> {
  const { rows } = await db.query<AccessKeyRow>('SELECT * FROM s3_access_keys WHERE org_id = $1 AND id = $2', [orgId, keyId]);
  return rows[0];
}
