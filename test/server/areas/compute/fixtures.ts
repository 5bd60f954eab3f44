// Fixtures of the compute tests: instance requests, SSH public keys, and small waits.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { components } from '../../../../generated/openapi.ts';
import type { Clock } from '../../../../server/core/clock.ts';
import type { TestOrg, TestServer } from '../../../support/server.ts';

export type VmOut = components['schemas']['VmOut'];
export type VmCreateRequest = components['schemas']['VmCreateRequest'];

/** A name no other test uses: `<prefix>-<random>`. */
export const uniqueName = (prefix = 'vm') => `${prefix}-${randomBytes(4).toString('hex')}`;

/** A small instance in fra1 (replicated) with the given changes. */
export function vmRequest(changes: Partial<VmCreateRequest> = {}): VmCreateRequest {
  return {
    name: uniqueName(),
    image: 'ubuntu-24.04',
    region: 'fra1',
    vcpus: 1,
    memory_mb: 1024,
    disk_gb: 20,
    storage_pool: 'fra1-ssd',
    network_profile: 'fra1-standard',
    ...changes,
  };
}

/** The same in nbg-sc1, the single-copy region. */
export const singleCopyRequest = (changes: Partial<VmCreateRequest> = {}) =>
  vmRequest({ region: 'nbg-sc1', image: 'debian-12', storage_pool: 'nbg-sc1-local', network_profile: 'nbg-sc1-standard', ...changes });

/** Creates an instance and waits until its vm.create operation has succeeded; returns it as getVm does. */
export async function runningVm(
  server: TestServer,
  org: TestOrg,
  changes: Partial<VmCreateRequest> = {},
  request = vmRequest,
): Promise<VmOut> {
  const created = await org.call('POST', '/compute/vms', { body: request(changes) });
  expect(created.status, created.text).toBe(202);
  const operation = await server.waitForOperation(org, created.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
  return (await org.call('GET', `/compute/vms/${created.body.vm.id}`)).body;
}

/** Calls an action that returns {operation, …}, expects 202, and waits for the operation. */
export async function act(
  server: TestServer,
  org: TestOrg,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ accepted: any; operation: any }> {
  const accepted = await org.call(method, path, body === undefined ? {} : { body });
  expect(accepted.status, accepted.text).toBe(202);
  const operation = await server.waitForOperation(org, accepted.body.operation.id);
  return { accepted: accepted.body, operation };
}

export { eventually } from '../../../support/eventually.ts';

/** A public key line as `ssh-keygen` writes it, from a key pair made with Node's crypto. */
export function sshPublicKey(type: 'ed25519' | 'rsa' | 'ecdsa' = 'ed25519', comment = 'test@example', rsaBits = 2048): string {
  const string = (value: Buffer | string) => {
    const data = Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    return Buffer.concat([length, data]);
  };
  const mpint = (value: Buffer) => string(value[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), value]) : value);
  let algorithm: string;
  let blob: Buffer;
  if (type === 'ed25519') {
    const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    algorithm = 'ssh-ed25519';
    blob = Buffer.concat([string(algorithm), string(Buffer.from(jwk.x!, 'base64url'))]);
  } else if (type === 'rsa') {
    const jwk = generateKeyPairSync('rsa', { modulusLength: rsaBits }).publicKey.export({ format: 'jwk' });
    algorithm = 'ssh-rsa';
    blob = Buffer.concat([string(algorithm), mpint(Buffer.from(jwk.e!, 'base64url')), mpint(Buffer.from(jwk.n!, 'base64url'))]);
  } else {
    const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    algorithm = 'ecdsa-sha2-nistp256';
    const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]);
    blob = Buffer.concat([string(algorithm), string('nistp256'), string(point)]);
  }
  return `${algorithm} ${blob.toString('base64')} ${comment}`;
}

/** A clock the test moves: real time plus an offset it sets. */
export class TestClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** From now on, `now()` reads `instant` (and time runs on from there). */
  set(instant: Date | string): void {
    this.offsetMs = new Date(instant).getTime() - Date.now();
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export const ALL_ACTIONS = [
  'start',
  'stop',
  'reboot',
  'console',
  'resize',
  'rebuild',
  'rescue',
  'unrescue',
  'delete',
  'firewall',
  'public_ip',
  'protection',
];
