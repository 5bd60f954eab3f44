import { randomUUID } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import { iso } from '../../../core/clock.ts';
import type { Queryable } from '../../../db/pool.ts';
import { listName, oldestFirst } from '../../../core/pagination.ts';

type SshKeyOut = components['schemas']['SshKeyOut'];

export interface SshKeyRow {
  id: string;
  org_id: string;
  name: string;
  public_key: string;
  fingerprint: string;
  created_at: Date;
}

/** Never the key material: only its name and fingerprint. */
export const toSshKeyOut = (row: SshKeyRow): SshKeyOut => ({
  id: row.id,
  name: row.name,
  fingerprint: row.fingerprint,
  created_at: iso(row.created_at),
});

export async function sshKeyNameInUse(db: Queryable, orgId: string, name: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM ssh_keys WHERE org_id = $1 AND name = $2', [orgId, name]);
  return rows.length > 0;
}

export async function insertSshKey(
  db: Queryable,
  key: { orgId: string; name: string; publicKey: string; fingerprint: string },
): Promise<SshKeyRow> {
  const { rows } = await db.query<SshKeyRow>(
    'INSERT INTO ssh_keys (id, org_id, name, public_key, fingerprint) VALUES ($1, $2, $3, $4, $5) RETURNING *',
    [randomUUID(), key.orgId, key.name, key.publicKey, key.fingerprint],
  );
  return rows[0]!;
}

export async function removeSshKey(db: Queryable, orgId: string, sshKeyId: string): Promise<SshKeyRow | undefined> {
  const { rows } = await db.query<SshKeyRow>('DELETE FROM ssh_keys WHERE org_id = $1 AND id = $2 RETURNING *', [orgId, sshKeyId]);
  return rows[0];
}

export function listSshKeys<Item>(
  db: Queryable,
  orgId: string,
  query: { cursor?: string; limit?: number },
  toItem: (row: SshKeyRow) => Item,
) {
  return oldestFirst<SshKeyRow, Item>(
    db,
    listName('ssh-keys'),
    query,
    { table: 'ssh_keys', where: 'org_id = $1', params: [orgId] },
    toItem,
  );
}
