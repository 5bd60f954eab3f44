import { randomUUID } from 'node:crypto';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../core/clock.ts';
import type { PoolClient } from '../../db/pool.ts';
import { fieldInvalid } from '../../core/errors.ts';
import { sshKeyNameTaken, sshKeyNotFound } from './errors.ts';
import { parseSshPublicKey, SshKeyRejected } from './ssh-key-material.ts';

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

/** Checks the key material (400 at /public_key) before anything else is looked at. */
export function fingerprintOf(publicKey: string): string {
  try {
    return parseSshPublicKey(publicKey).fingerprint;
  } catch (error) {
    if (error instanceof SshKeyRejected) throw fieldInvalid('/public_key', error.message);
    throw error;
  }
}

export async function createSshKey(
  tx: PoolClient,
  orgId: string,
  name: string,
  publicKey: string,
  fingerprint: string,
): Promise<SshKeyRow> {
  const { rows: taken } = await tx.query('SELECT 1 FROM ssh_keys WHERE org_id = $1 AND name = $2', [orgId, name]);
  if (taken.length > 0) throw sshKeyNameTaken(name);
  try {
    const { rows } = await tx.query<SshKeyRow>(
      'INSERT INTO ssh_keys (id, org_id, name, public_key, fingerprint) VALUES ($1, $2, $3, $4, $5) RETURNING *',
      [randomUUID(), orgId, name, publicKey, fingerprint],
    );
    return rows[0]!;
  } catch (error) {
    // Two requests for one name at once: the unique constraint lets one through.
    if ((error as { code?: string }).code === '23505') throw sshKeyNameTaken(name);
    throw error;
  }
}

/** Instances keep the keys installed on them, and their names, whatever happens to the key here. */
export async function deleteSshKey(tx: PoolClient, orgId: string, sshKeyId: string): Promise<SshKeyRow> {
  const { rows } = await tx.query<SshKeyRow>('DELETE FROM ssh_keys WHERE org_id = $1 AND id = $2 RETURNING *', [orgId, sshKeyId]);
  if (!rows[0]) throw sshKeyNotFound(sshKeyId);
  return rows[0];
}
