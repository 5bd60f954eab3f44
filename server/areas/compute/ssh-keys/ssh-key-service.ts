import { fieldInvalid } from '../../../core/errors.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { sshKeyNameTaken, sshKeyNotFound } from './ssh-key-errors.ts';
import { parseSshPublicKey, SshKeyRejected } from './ssh-key-material.ts';
import { insertSshKey, removeSshKey, sshKeyNameInUse, type SshKeyRow } from './ssh-key-rows.ts';

/** Checks the key material (400 at /public_key) before anything else is looked at. */
export function fingerprintOf(publicKey: string): string {
  try {
    return parseSshPublicKey(publicKey).fingerprint;
  } catch (error) {
    if (error instanceof SshKeyRejected) throw fieldInvalid('/public_key', error.message);
    throw error;
  }
}

/** A key's name is unique in its organization. */
export async function createSshKey(
  tx: PoolClient,
  orgId: string,
  name: string,
  publicKey: string,
  fingerprint: string,
): Promise<SshKeyRow> {
  if (await sshKeyNameInUse(tx, orgId, name)) throw sshKeyNameTaken(name);
  try {
    return await insertSshKey(tx, { orgId, name, publicKey, fingerprint });
  } catch (error) {
    // Two requests for one name at once: the unique constraint lets one through.
    if ((error as { code?: string }).code === '23505') throw sshKeyNameTaken(name);
    throw error;
  }
}

/** Instances keep the keys installed on them, and their names, whatever happens to the key here. */
export async function deleteSshKey(tx: PoolClient, orgId: string, sshKeyId: string): Promise<SshKeyRow> {
  const removed = await removeSshKey(tx, orgId, sshKeyId);
  if (!removed) throw sshKeyNotFound(sshKeyId);
  return removed;
}
