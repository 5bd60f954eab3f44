import { execFile } from 'node:child_process';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { InstalledSshKey } from '../hypervisor.ts';

const run = promisify(execFile);

/**
 * The two files of a cloud-init NoCloud seed: `meta-data` (the instance id and hostname) and
 * `user-data` (cloud-config: the SSH keys, with root allowed to log in by key, as on the platform's
 * other images). Strings are written as JSON strings, which YAML reads as double-quoted scalars,
 * one per line: the tiny test image's shell reads the same lines.
 */
export function seedFiles(server: { serverId: string; name: string; sshKeys: InstalledSshKey[] }): { metaData: string; userData: string } {
  const keys = server.sshKeys.map((key) => `  - ${JSON.stringify(key.publicKey.trim())}\n`).join('');
  return {
    metaData: `instance-id: ${JSON.stringify(server.serverId)}\nlocal-hostname: ${JSON.stringify(server.name)}\n`,
    userData:
      `#cloud-config\nhostname: ${JSON.stringify(server.name)}\ndisable_root: false\n` +
      `ssh_pwauth: false\nssh_authorized_keys:${keys ? `\n${keys}` : ' []\n'}`,
  };
}

/**
 * Writes the seed as an ISO 9660 volume labelled `cidata` (Debian's genisoimage, as cloud-init's
 * documentation makes one), replacing the file whole.
 */
export async function writeSeed(target: string, server: { serverId: string; name: string; sshKeys: InstalledSshKey[] }): Promise<void> {
  const { metaData, userData } = seedFiles(server);
  // Beside the seed, in the server's folder: a crash here leaves nothing outside it.
  const work = await mkdtemp(path.join(path.dirname(target), 'seed-files-'));
  try {
    await writeFile(path.join(work, 'meta-data'), metaData);
    await writeFile(path.join(work, 'user-data'), userData);
    const partial = `${target}.partial`;
    await run('genisoimage', [
      '-quiet',
      '-output',
      partial,
      '-volid',
      'cidata',
      '-joliet',
      '-rock',
      path.join(work, 'user-data'),
      path.join(work, 'meta-data'),
    ]);
    await rename(partial, target);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
