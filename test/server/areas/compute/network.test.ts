// Public IPs, SSH keys, consoles and firewalls on the real server with the simulated hypervisor.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { redeemConsoleToken } from '../../../../server/areas/compute/console/console-urls.ts';
import { withTransaction } from '../../../../server/db/pool.ts';
import { createOrganizationClock } from '../../../../server/core/test-clocks.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { act, eventually, runningVm, singleCopyRequest, sshPublicKey, TestClock, uniqueName, vmRequest, type VmOut } from './fixtures.ts';

let server: TestServer;
let org: TestOrg;
const clock = new TestClock();
const orgClock = createOrganizationClock(clock, false);
beforeAll(async () => {
  server = await startTestServer({}, { clock });
  org = server.org;
});
afterAll(() => server?.close());

async function allocatedIp(region = 'fra1', owner = org) {
  const { accepted, operation } = await act(server, owner, 'POST', '/compute/public-ips', { region });
  expect(operation.state).toBe('succeeded');
  return (await owner.call('GET', `/compute/public-ips/${accepted.public_ip.id}`)).body;
}

const publicAddresses = async (vmId: string): Promise<string[] | undefined> =>
  ((await org.call('GET', `/compute/vms/${vmId}`)).body as VmOut).observed_addresses?.public_ipv4;

describe('public IPs', () => {
  test('allocate: pending with no address, then allocated with one; listed and read', async () => {
    const allocation = await org.call('POST', '/compute/public-ips', { body: { region: 'fra1' } });
    expect(allocation.status).toBe(202);
    expect(allocation.body.public_ip).toMatchObject({ state: 'pending', address: null, vm_id: null, error: null, region_id: 'fra1' });
    expect(allocation.body.operation.type).toBe('ip.allocate');
    await server.waitForOperation(org, allocation.body.operation.id);
    const ip = (await org.call('GET', `/compute/public-ips/${allocation.body.public_ip.id}`)).body;
    expect(ip).toMatchObject({ state: 'allocated', address: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/), vm_id: null });
    expect((await org.call('GET', '/compute/public-ips')).body.items.map((item: { id: string }) => item.id)).toContain(ip.id);
    expect((await org.call('GET', '/compute/public-ips?region=ams1')).body.items.map((item: { id: string }) => item.id)).not.toContain(
      ip.id,
    );
    expect((await org.call('GET', '/compute/public-ips?region=lon1')).body.items).toEqual([]);
    const other = await server.createOrg();
    expect((await other.call('GET', `/compute/public-ips/${ip.id}`)).status).toBe(404);
  });

  test('allocation refusals: a missing region is 400, an unknown one 422 invalid_reference', async () => {
    expect((await org.call('POST', '/compute/public-ips', { body: {} })).status).toBe(400);
    const unknown = await org.call('POST', '/compute/public-ips', { body: { region: 'lon1' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({
      code: 'invalid_reference',
      errors: [{ pointer: '/region', detail: expect.stringContaining('lon1') }],
    });
  });

  test('an address moves between two instances: associate, disassociate, associate again', async () => {
    const [first, second] = await Promise.all([runningVm(server, org), runningVm(server, org)]);
    const ip = await allocatedIp();

    const associate = await act(server, org, 'POST', `/compute/public-ips/${ip.id}/associate`, { vm_id: first.id });
    expect(associate.accepted.public_ip).toMatchObject({ state: 'associating', vm_id: first.id });
    expect(associate.accepted.operation.type).toBe('ip.associate');
    expect(associate.operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).body).toMatchObject({
      state: 'associated',
      vm_id: first.id,
      address: ip.address,
    });
    expect(await publicAddresses(first.id)).toContain(ip.address);

    // Associated elsewhere: disassociate first.
    const busy = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: second.id } });
    expect(busy.body).toMatchObject({ code: 'public_ip_state_conflict', detail: expect.stringContaining('Disassociate it first') });
    // An instance holds at most one public IP.
    const another = await allocatedIp();
    const holds = await org.call('POST', `/compute/public-ips/${another.id}/associate`, { body: { vm_id: first.id } });
    expect(holds.body).toMatchObject({
      code: 'public_ip_state_conflict',
      detail: `Instance ${first.id} already has public IP ${ip.id}; an instance holds at most one.`,
    });

    const disassociate = await act(server, org, 'POST', `/compute/public-ips/${ip.id}/disassociate`);
    expect(disassociate.accepted.public_ip).toMatchObject({ state: 'disassociating', vm_id: first.id });
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).body).toMatchObject({
      state: 'allocated',
      vm_id: null,
      address: ip.address,
    });
    expect(await publicAddresses(first.id)).not.toContain(ip.address);
    expect((await org.call('POST', `/compute/public-ips/${ip.id}/disassociate`)).body.code).toBe('public_ip_state_conflict');

    await act(server, org, 'POST', `/compute/public-ips/${ip.id}/associate`, { vm_id: second.id });
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).body).toMatchObject({
      state: 'associated',
      vm_id: second.id,
      address: ip.address,
    });
    expect(await publicAddresses(second.id)).toContain(ip.address);
    // The first instance still runs.
    expect((await org.call('GET', `/compute/vms/${first.id}`)).body.state).toBe('running');
  });

  test('association refusals, in order: unknown instance, other region, single copy', async () => {
    const ip = await allocatedIp();
    const unknown = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, {
      body: { vm_id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('invalid_reference');
    const malformed = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: 'nope' } });
    expect(malformed.status).toBe(400);
    const missing = await org.call('POST', '/compute/public-ips/00000000-0000-4000-8000-000000000000/associate', {
      body: { vm_id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(missing.status).toBe(404);

    const single = await runningVm(server, org, {}, singleCopyRequest);
    const mismatch = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: single.id } });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.code).toBe('public_ip_region_mismatch');
    const singleIp = await allocatedIp('nbg-sc1');
    const notAllowed = await org.call('POST', `/compute/public-ips/${singleIp.id}/associate`, { body: { vm_id: single.id } });
    expect(notAllowed.status).toBe(409);
    expect(notAllowed.body.code).toBe('vm_action_not_allowed');
  });

  test('deleting an instance disassociates its public IP, which stays allocated', async () => {
    const vm = await runningVm(server, org);
    const ip = await allocatedIp();
    await act(server, org, 'POST', `/compute/public-ips/${ip.id}/associate`, { vm_id: vm.id });
    expect((await act(server, org, 'DELETE', `/compute/vms/${vm.id}`)).operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).body).toMatchObject({
      state: 'allocated',
      vm_id: null,
      address: ip.address,
    });
    const { rows } = await server.pool.query('SELECT server_id FROM sim_addresses WHERE address_id = $1', [ip.id]);
    expect(rows).toEqual([{ server_id: null }]);
  });

  test('release: from associated (disassociating within the operation), then gone', async () => {
    const vm = await runningVm(server, org);
    const ip = await allocatedIp();
    await act(server, org, 'POST', `/compute/public-ips/${ip.id}/associate`, { vm_id: vm.id });
    const release = await act(server, org, 'DELETE', `/compute/public-ips/${ip.id}`);
    expect(release.accepted.public_ip.state).toBe('releasing');
    expect(release.accepted.operation.type).toBe('ip.release');
    expect(release.operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).status).toBe(404);
    expect((await org.call('GET', '/compute/public-ips')).body.items.map((item: { id: string }) => item.id)).not.toContain(ip.id);
    expect((await org.call('DELETE', `/compute/public-ips/${ip.id}`)).status).toBe(404);
    expect(await eventually(async () => ((await publicAddresses(vm.id))?.includes(ip.address) ? undefined : true))).toBe(true);
    // The instance can take another one now.
    const next = await allocatedIp();
    expect((await act(server, org, 'POST', `/compute/public-ips/${next.id}/associate`, { vm_id: vm.id })).operation.state).toBe(
      'succeeded',
    );
  });
});

/** The same ECDSA key line with its point moved off the curve. */
function offCurve(line: string): string {
  const [algorithm, data] = line.split(' ');
  const blob = Buffer.from(data!, 'base64');
  blob.writeUInt8(blob.readUInt8(blob.length - 1) ^ 0x01, blob.length - 1);
  return `${algorithm} ${blob.toString('base64')}`;
}

describe('SSH keys', () => {
  test('created with the fingerprint ssh-keygen prints; listed without key material; deleted', async () => {
    const line = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMLcyAUy4hvXbZnM5GkwLcfOesY2RwJ5A21UuB6FqVI6 alice@laptop';
    const name = uniqueName('alice');
    const created = await org.call('POST', '/compute/ssh-keys', { body: { name, public_key: line } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name,
      fingerprint: 'SHA256:qMInmiCRbkeMkNHAGBMgYu3SNDZBha0amziKAzvLcpo',
      created_at: expect.any(String),
    });
    const listed = (await org.call('GET', '/compute/ssh-keys')).body.items;
    expect(listed).toContainEqual(created.body);
    expect(JSON.stringify(listed)).not.toContain('AAAAC3Nza');

    const taken = await org.call('POST', '/compute/ssh-keys', { body: { name, public_key: sshPublicKey() } });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('ssh_key_name_taken');
    // The same key under another name is fine.
    expect((await org.call('POST', '/compute/ssh-keys', { body: { name: `${name}-2`, public_key: line } })).status).toBe(201);

    expect((await org.call('DELETE', `/compute/ssh-keys/${created.body.id}`)).status).toBe(204);
    expect((await org.call('DELETE', `/compute/ssh-keys/${created.body.id}`)).status).toBe(404);
    // The name is free at once.
    expect((await org.call('POST', '/compute/ssh-keys', { body: { name, public_key: sshPublicKey() } })).status).toBe(201);
  });

  test('every accepted algorithm matches ssh-keygen', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ssh-keys-'));
    for (const type of ['ed25519', 'rsa', 'ecdsa'] as const) {
      const line = sshPublicKey(type);
      const created = await org.call('POST', '/compute/ssh-keys', { body: { name: uniqueName(type), public_key: line } });
      expect(created.status, type).toBe(201);
      const file = path.join(dir, `${type}.pub`);
      writeFileSync(file, `${line}\n`);
      let printed: string;
      try {
        printed = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', file], { encoding: 'utf8' });
      } catch {
        continue; // ssh-keygen not installed: the example key above still pins the format.
      }
      expect(printed.split(' ')[1]).toBe(created.body.fingerprint);
    }
  });

  test('lines that are not usable OpenSSH public keys are 400 at /public_key', async () => {
    const ed = sshPublicKey('ed25519');
    const [, data] = ed.split(' ');
    const cases: Array<[string, string]> = [
      ['-----BEGIN OPENSSH PRIVATE KEY----- AAAAC3NzaC1lZDI1NTE5AAAAIMLcyAUy4hvXbZnM5GkwLcfOesY2RwJ5A21UuB6FqVI6', ''],
      [`ssh-ed25519 ${data!.slice(0, -8)} a-comment-long-enough-for-the-schema`, 'does not decode to an ssh-ed25519 public key'],
      [offCurve(sshPublicKey('ecdsa')), 'does not decode to an ecdsa-sha2-nistp256 public key'],
      [`ssh-rsa ${data}`, ''],
      [sshPublicKey('rsa', 'short', 1024), 'RSA keys must have at least 2048 bits; this one has 1024'],
    ];
    for (const [line, detail] of cases) {
      const response = await org.call('POST', '/compute/ssh-keys', { body: { name: uniqueName('bad'), public_key: line } });
      expect(response.status, line).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(response.body.errors[0].pointer).toBe('/public_key');
      expect(response.body.errors[0].detail).toContain(detail);
    }
  });
});

describe('consoles', () => {
  test('requested as a vm.console operation, collected once, and the URL admits one connection', async () => {
    const vm = await runningVm(server, org);
    const { accepted, operation } = await act(server, org, 'POST', `/compute/vms/${vm.id}/console`);
    expect(Object.keys(accepted)).toEqual(['operation']);
    expect(operation).toMatchObject({ type: 'vm.console', resource_type: 'vm', resource_id: vm.id, state: 'succeeded' });

    const collected = await org.call('GET', `/compute/vms/${vm.id}/console?operation=${operation.id}`);
    expect(collected.status).toBe(200);
    expect(collected.body).toEqual({
      console_type: 'serial',
      expires_in_seconds: 60,
      // The platform's own gateway, at the address it serves (ws:// without TLS).
      url: `${server.url.replace('http://', 'ws://')}/console/sessions/${collected.body.url.split('/').pop()}`,
    });
    expect(collected.body.url).toMatch(/\/console\/sessions\/cs_[A-Za-z0-9_-]{43}$/);
    expect(collected.body).toEqual({
      console_type: 'serial',
      expires_in_seconds: 60,
      url: expect.any(String),
    });
    // Collected twice: 404, as for any other reason.
    const twice = await org.call('GET', `/compute/vms/${vm.id}/console?operation=${operation.id}`);
    expect(twice.status).toBe(404);
    expect(twice.body.code).toBe('not_found');
    // Only a hash of the token is kept.
    const { rows } = await server.pool.query('SELECT * FROM console_sessions WHERE operation_id = $1', [operation.id]);
    expect(JSON.stringify(rows)).not.toContain(collected.body.url.split('/').pop());

    const redeem = (url: string) => withTransaction(server.pool, (tx) => redeemConsoleToken(tx, orgClock, url.split('/').pop()!));
    expect(await redeem(collected.body.url)).toMatchObject({ vmId: vm.id, consoleType: 'serial', operationId: operation.id });
    expect(await redeem(collected.body.url)).toBeUndefined();
    expect(await redeem(`${collected.body.url}x`)).toBeUndefined();
  });

  test("unknown, another instance's, not a console operation, or expired: 404", async () => {
    const [vm, other] = await Promise.all([runningVm(server, org), runningVm(server, org)]);
    const { operation } = await act(server, org, 'POST', `/compute/vms/${vm.id}/console`);
    expect((await org.call('GET', `/compute/vms/${other.id}/console?operation=${operation.id}`)).status).toBe(404);
    expect((await org.call('GET', `/compute/vms/${vm.id}/console?operation=00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    const reboot = await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`);
    expect((await org.call('GET', `/compute/vms/${vm.id}/console?operation=${reboot.operation.id}`)).status).toBe(404);
    expect((await org.call('GET', `/compute/vms/${vm.id}/console`)).status).toBe(400);
    expect((await org.call('GET', `/compute/vms/00000000-0000-4000-8000-000000000000/console?operation=${operation.id}`)).status).toBe(404);

    // Not collected within 5 minutes of finishing: expired.
    clock.advance(5 * 60_000 + 1_000);
    try {
      expect((await org.call('GET', `/compute/vms/${vm.id}/console?operation=${operation.id}`)).status).toBe(404);
    } finally {
      clock.advance(-(5 * 60_000 + 1_000));
    }
  });

  test('a collected URL stops admitting its connection after 60 seconds', async () => {
    const vm = await runningVm(server, org);
    const { operation } = await act(server, org, 'POST', `/compute/vms/${vm.id}/console`);
    const { url } = (await org.call('GET', `/compute/vms/${vm.id}/console?operation=${operation.id}`)).body;
    clock.advance(61_000);
    try {
      expect(await withTransaction(server.pool, (tx) => redeemConsoleToken(tx, orgClock, url.split('/').pop()))).toBeUndefined();
    } finally {
      clock.advance(-61_000);
    }
  });

  test('a single-copy region offers a serial console; a console in rescue works too', async () => {
    const single = await runningVm(server, org, {}, singleCopyRequest);
    const { operation } = await act(server, org, 'POST', `/compute/vms/${single.id}/console`);
    const collected = (await org.call('GET', `/compute/vms/${single.id}/console?operation=${operation.id}`)).body;
    expect(collected.console_type).toBe('serial');
    expect(collected.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/console\/sessions\/cs_/);

    const vm = await runningVm(server, org);
    await act(server, org, 'POST', `/compute/vms/${vm.id}/rescue`);
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/console`)).operation.state).toBe('succeeded');
  });
});

describe('firewall', () => {
  test('the rules are applied by the hypervisor; the last set wins', async () => {
    const vm = await runningVm(server, org);
    const first = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, {
      body: { inbound: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }] },
    });
    const last = { inbound: [{ protocol: 'udp', ports: '51820', sources: ['198.51.100.0/24'] }] };
    const second = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: last });
    await server.waitForOperation(org, first.body.operation.id);
    expect((await server.waitForOperation(org, second.body.operation.id)).state).toBe('succeeded');
    const { rows } = await server.pool.query('SELECT firewall FROM sim_servers WHERE server_id = $1', [vm.id]);
    expect(rows[0].firewall).toEqual(last.inbound);
    expect((await org.call('GET', `/compute/vms/${vm.id}/firewall`)).body).toEqual(last);
  });

  test('a firewall set while the instance is created is applied once it exists', async () => {
    const created = await org.call('POST', '/compute/vms', { body: vmRequest() });
    const rules = { inbound: [{ protocol: 'tcp', ports: '443', sources: ['::/0'] }] };
    const set = await org.call('PUT', `/compute/vms/${created.body.vm.id}/firewall`, { body: rules });
    expect(set.status).toBe(202);
    await server.waitForOperation(org, created.body.operation.id);
    expect((await server.waitForOperation(org, set.body.operation.id)).state).toBe('succeeded');
    const { rows } = await server.pool.query('SELECT firewall FROM sim_servers WHERE server_id = $1', [created.body.vm.id]);
    expect(rows[0].firewall).toEqual(rules.inbound);
  });
});
