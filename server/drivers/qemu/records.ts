import { randomBytes } from 'node:crypto';
import { link, readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { FirewallRuleSpec, InstalledSshKey } from '../hypervisor.ts';

/** How a server boots: the test image's kernel and initramfs, or a registered image's own disk. */
export type BootKind = 'kernel' | 'disk';

/** A forwarded port: `address:hostPort` on the host reaches `guestPort` of the guest. */
export interface Forward {
  protocol: 'tcp' | 'udp';
  address: string;
  hostPort: number;
  guestPort: number;
}

/**
 * What the driver keeps of a server (server.json): what the platform asked for, never what the
 * guest is doing (that is read from QEMU each time it is needed).
 */
export interface ServerRecord {
  serverId: string;
  name: string;
  regionId: string;
  imageId: string;
  boot: BootKind;
  vcpus: number;
  memoryMb: number;
  diskGb: number;
  publicNetwork: boolean;
  sshKeys: InstalledSshKey[];
  firewall: FirewallRuleSpec[];
  /**
   * Whether the platform wants the guest powered: `on` from a start until a stop. A QEMU that is
   * gone while this is `on` has crashed; one whose guest powered itself off has stopped.
   */
  power: 'on' | 'off';
  /** What the next (or the running) QEMU boots: the server's own system or the rescue system. */
  mode: 'normal' | 'rescue';
  /** The accelerator the running QEMU was started with (operators read it here and in the log). */
  accelerator: 'kvm' | 'tcg' | null;
  /** The ports the running QEMU forwards. */
  forwards: Forward[];
}

export async function readRecord(file: string): Promise<ServerRecord | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as ServerRecord;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** What the name of a file written beside its place ends with, until it is moved there (a crash can leave one). */
export const PARTIAL_SUFFIX = '.partial';

/** `value` written whole beside `file`, under a name of its own: the first half of both writes below. */
async function writtenBeside(file: string, value: unknown): Promise<string> {
  const partial = `${file}.${randomBytes(4).toString('hex')}${PARTIAL_SUFFIX}`;
  await writeFile(partial, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  return partial;
}

/** Replaces a JSON file whole: written beside it, then renamed over it, so a crash never leaves half a file. */
export async function writeJsonAtomically(file: string, value: unknown): Promise<void> {
  await rename(await writtenBeside(file, value), file);
}

/**
 * Creates a JSON file only where none is (false when the name is taken): written beside it, then
 * linked to its name, which fails if the name exists. An exclusive create followed by a write
 * instead leaves an empty file when the process is killed between the two.
 */
export async function createJsonExclusively(file: string, value: unknown): Promise<boolean> {
  const partial = await writtenBeside(file, value);
  try {
    await link(partial, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await rm(partial, { force: true });
  }
}
