// Changes in flight, on a server whose workers are off (WORKER_CONCURRENCY=0): every operation
// stays queued, so the rules of one change at a time and cancellation (cancelOperation) can be
// checked without racing the engine. States an operation would reach are set in the database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';
import { uniqueName, vmRequest, type VmOut } from '../fixtures.ts';

let server: TestServer;
let org: TestOrg;
beforeAll(async () => {
  server = await startTestServer({ WORKER_CONCURRENCY: '0' });
  org = server.org;
});
afterAll(() => server?.close());

/** An instance whose creation is queued. */
async function creatingVm(changes = {}): Promise<{ vm: VmOut; operationId: string }> {
  const created = await org.call('POST', '/compute/vms', { body: vmRequest(changes) });
  expect(created.status).toBe(202);
  return { vm: created.body.vm, operationId: created.body.operation.id };
}

/** An instance in `state` with its creation done, as if the engine had carried it out. */
async function vmIn(state: string, desired = state === 'error' ? 'running' : state): Promise<VmOut> {
  const { vm } = await creatingVm();
  await server.pool.query(
    `UPDATE operations SET state = 'succeeded', attempt = 1, finished_at = now() WHERE resource_id = $1 AND finished_at IS NULL`,
    [vm.id],
  );
  await server.pool.query('UPDATE vms SET state = $2, desired_state = $3 WHERE id = $1', [vm.id, state, desired]);
  return (await org.call('GET', `/compute/vms/${vm.id}`)).body;
}

const get = async (vmId: string): Promise<VmOut> => (await org.call('GET', `/compute/vms/${vmId}`)).body;
const cancel = (operationId: string) => org.call('POST', `/operations/${operationId}/cancel`);

describe('one change at a time', () => {
  test('while creating, every change is refused with the operation to wait for', async () => {
    const { vm, operationId } = await creatingVm();
    for (const action of ['start', 'stop', 'reboot', 'rescue', 'unrescue']) {
      const response = await org.call('POST', `/compute/vms/${vm.id}/${action}`);
      expect(response.status, action).toBe(409);
      expect(response.body).toMatchObject({
        code: 'vm_state_conflict',
        detail: `Instance ${vm.id} (${vm.name}) is creating; wait for operation ${operationId} to finish, then retry.`,
      });
    }
    for (const [method, path, body] of [
      ['POST', 'resize', { vcpus: 2, memory_mb: 2048, disk_gb: 20 }],
      ['POST', 'rebuild', { image_id: 'debian-12' }],
    ] as const) {
      expect((await org.call(method, `/compute/vms/${vm.id}/${path}`, { body })).body.code).toBe('vm_state_conflict');
    }
    expect((await org.call('DELETE', `/compute/vms/${vm.id}`)).body.code).toBe('vm_state_conflict');
    expect((await org.call('POST', `/compute/vms/${vm.id}/console`)).body.code).toBe('vm_state_conflict');
    // Beside the state: protection and the firewall can be set while creating.
    expect((await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true } })).status).toBe(200);
    expect((await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: { inbound: [] } })).status).toBe(202);
  });

  test('a start, stop, rescue or unrescue in flight (desired_state ahead of state) blocks the next change', async () => {
    const vm = await vmIn('running');
    const stop = await org.call('POST', `/compute/vms/${vm.id}/stop`);
    expect(stop.body.vm).toMatchObject({ state: 'running', desired_state: 'stopped' });
    const again = await org.call('POST', `/compute/vms/${vm.id}/reboot`);
    expect(again.status).toBe(409);
    expect(again.body.detail).toBe(
      `Instance ${vm.id} (${vm.name}) is running (going to stopped); wait for operation ${stop.body.operation.id} to finish, then retry.`,
    );
    expect((await org.call('DELETE', `/compute/vms/${vm.id}`)).body.code).toBe('vm_state_conflict');
  });

  test('while deleting, nothing else changes, protection and firewall included', async () => {
    const vm = await vmIn('running');
    const deleting = await org.call('DELETE', `/compute/vms/${vm.id}`);
    expect(deleting.body.vm).toMatchObject({ state: 'deleting', desired_state: 'deleted' });
    const protection = await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true } });
    expect(protection.body).toMatchObject({
      code: 'vm_state_conflict',
      detail: `Instance ${vm.id} (${vm.name}) is deleting; its protection can no longer be changed.`,
    });
    const firewall = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: { inbound: [] } });
    expect(firewall.body.detail).toBe(`Instance ${vm.id} (${vm.name}) is deleting; its firewall can no longer be changed.`);
    const rebuild = await org.call('POST', `/compute/vms/${vm.id}/rebuild`, { body: { image_id: 'debian-12' } });
    expect(rebuild.body.detail).toBe(`Instance ${vm.id} (${vm.name}) is deleting; rebuild needs state running, stopped or error.`);
    // Still listed while deleting.
    expect((await org.call('GET', '/compute/vms?state=deleting')).body.items.map((item: VmOut) => item.id)).toContain(vm.id);
  });

  test('an instance in error accepts rebuild and delete only', async () => {
    const vm = await vmIn('error');
    for (const action of ['start', 'stop', 'reboot', 'rescue', 'unrescue']) {
      expect((await org.call('POST', `/compute/vms/${vm.id}/${action}`)).body.code, action).toBe('vm_state_conflict');
    }
    expect((await org.call('POST', `/compute/vms/${vm.id}/resize`, { body: { vcpus: 2, memory_mb: 2048, disk_gb: 20 } })).body.code).toBe(
      'vm_state_conflict',
    );
    const rebuild = await org.call('POST', `/compute/vms/${vm.id}/rebuild`, { body: { image_id: 'debian-12' } });
    expect(rebuild.status).toBe(202);
    expect(rebuild.body.vm).toMatchObject({
      state: 'rebuilding',
      desired_state: 'running',
      image: { catalog_id: 'debian-12', name: 'Debian 12' },
    });
  });
});

describe('cancelling a queued operation undoes its change', () => {
  test('a cancelled creation removes the instance and frees its name', async () => {
    const name = uniqueName('cancelled');
    const { vm, operationId } = await creatingVm({ name });
    const cancelled = await cancel(operationId);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ state: 'cancelled', finished_at: expect.any(String) });
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).status).toBe(404);
    expect((await org.call('GET', '/compute/vms')).body.items.map((item: VmOut) => item.id)).not.toContain(vm.id);
    expect((await org.call('POST', '/compute/vms', { body: vmRequest({ name }) })).status).toBe(202);
  });

  test('start, stop, rescue and unrescue: desired_state goes back to the state', async () => {
    const cases: Array<[string, string]> = [
      ['stopped', 'start'],
      ['running', 'stop'],
      ['running', 'rescue'],
      ['rescue', 'unrescue'],
    ];
    for (const [state, action] of cases) {
      const vm = await vmIn(state);
      const accepted = await org.call('POST', `/compute/vms/${vm.id}/${action}`);
      expect(accepted.status, action).toBe(202);
      expect(accepted.body.vm.desired_state).not.toBe(state);
      expect((await cancel(accepted.body.operation.id)).status).toBe(200);
      expect(await get(vm.id), action).toMatchObject({ state, desired_state: state });
    }
  });

  test('reboot, resize, rebuild and delete: the state and fields before the request come back', async () => {
    const vm = await vmIn('running');
    const reboot = await org.call('POST', `/compute/vms/${vm.id}/reboot`);
    expect(reboot.body.vm.state).toBe('rebooting');
    const busy = await org.call('POST', `/compute/vms/${vm.id}/resize`, { body: { vcpus: 2, memory_mb: 2048, disk_gb: 20 } });
    expect(busy.body.detail).toBe(
      `Instance ${vm.id} (${vm.name}) is rebooting; wait for operation ${reboot.body.operation.id} to finish, then retry.`,
    );
    await cancel(reboot.body.operation.id);
    expect((await get(vm.id)).state).toBe('running');

    const resize = await org.call('POST', `/compute/vms/${vm.id}/resize`, { body: { vcpus: 4, memory_mb: 8192, disk_gb: 80 } });
    expect(resize.body.vm).toMatchObject({ state: 'resizing', vcpus: 4, memory_mb: 8192, disk_gb: 80 });
    await cancel(resize.body.operation.id);
    expect(await get(vm.id)).toMatchObject({ state: 'running', vcpus: 1, memory_mb: 1024, disk_gb: 20 });

    const rebuild = await org.call('POST', `/compute/vms/${vm.id}/rebuild`, { body: { image_id: 'debian-12' } });
    await cancel(rebuild.body.operation.id);
    expect(await get(vm.id)).toMatchObject({ state: 'running', image: { catalog_id: 'ubuntu-24.04' } });

    const deleted = await org.call('DELETE', `/compute/vms/${vm.id}`);
    await cancel(deleted.body.operation.id);
    expect(await get(vm.id)).toMatchObject({ state: 'running', desired_state: 'running' });
  });

  test('a cancelled firewall change restores the previous rules unless a later set replaced them', async () => {
    const vm = await vmIn('running');
    const ssh = { inbound: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }] };
    const web = { inbound: [{ protocol: 'tcp', ports: '443', sources: ['0.0.0.0/0', '::/0'] }] };
    const first = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: ssh });
    expect(first.status).toBe(202);
    expect(first.body.firewall).toEqual(ssh);
    const second = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: web });
    await cancel(first.body.operation.id);
    expect((await org.call('GET', `/compute/vms/${vm.id}/firewall`)).body).toEqual(web);
    await cancel(second.body.operation.id);
    expect((await org.call('GET', `/compute/vms/${vm.id}/firewall`)).body).toEqual(ssh);
  });
});

describe('firewall rules', () => {
  test('a new instance has none; the set is returned as sent', async () => {
    const { vm } = await creatingVm();
    expect((await org.call('GET', `/compute/vms/${vm.id}/firewall`)).body).toEqual({ inbound: [] });
    const rules = {
      inbound: [
        { protocol: 'tcp', ports: '8000-8080', sources: ['198.51.100.0/24', '2001:db8::/32'] },
        { protocol: 'icmp', ports: null, sources: ['0.0.0.0/0'] },
      ],
    };
    const set = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: rules });
    expect(set.body.operation.type).toBe('vm.firewall');
    expect((await org.call('GET', `/compute/vms/${vm.id}/firewall`)).body).toEqual(rules);
  });

  test('ports and sources break the rules: 400 with a pointer to each', async () => {
    const { vm } = await creatingVm();
    const cases: Array<[unknown, string, string]> = [
      [{ protocol: 'icmp', ports: '22', sources: ['0.0.0.0/0'] }, '/inbound/0/ports', 'must be null when protocol is icmp'],
      [{ protocol: 'tcp', ports: null, sources: ['0.0.0.0/0'] }, '/inbound/0/ports', 'is required for tcp'],
      [{ protocol: 'udp', ports: '0', sources: ['0.0.0.0/0'] }, '/inbound/0/ports', 'between 1 and 65535'],
      [{ protocol: 'udp', ports: '70000', sources: ['0.0.0.0/0'] }, '/inbound/0/ports', 'between 1 and 65535'],
      [{ protocol: 'tcp', ports: '9000-8000', sources: ['0.0.0.0/0'] }, '/inbound/0/ports', 'starts above its end'],
      [
        { protocol: 'tcp', ports: '22', sources: ['198.51.100.7/24'] },
        '/inbound/0/sources/0',
        '198.51.100.7/24 has host bits set; did you mean 198.51.100.0/24 or 198.51.100.7/32?',
      ],
      [
        { protocol: 'tcp', ports: '22', sources: ['2001:db8::1/64'] },
        '/inbound/0/sources/0',
        '2001:db8::1/64 has host bits set; did you mean 2001:db8::/64 or 2001:db8::1/128?',
      ],
    ];
    for (const [rule, pointer, detail] of cases) {
      const response = await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: { inbound: [rule] } });
      expect(response.status, JSON.stringify(rule)).toBe(400);
      expect(response.body.errors).toEqual([{ pointer, detail: expect.stringContaining(detail) }]);
    }
  });
});

describe('public IPs while a change is in flight', () => {
  test('pending: address null; nothing but waiting (or cancelling) until allocated', async () => {
    const allocated = await org.call('POST', '/compute/public-ips', { body: { region: 'fra1' } });
    expect(allocated.status).toBe(202);
    const ip = allocated.body.public_ip;
    expect(ip).toMatchObject({ region_id: 'fra1', address: null, state: 'pending', vm_id: null, error: null });
    expect(allocated.body.operation).toMatchObject({ type: 'ip.allocate', resource_type: 'public_ip', resource_id: ip.id });
    const vm = await vmIn('running');
    const associate = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: vm.id } });
    expect(associate.body.code).toBe('public_ip_state_conflict');
    expect((await org.call('POST', `/compute/public-ips/${ip.id}/disassociate`)).body.code).toBe('public_ip_state_conflict');
    const release = await org.call('DELETE', `/compute/public-ips/${ip.id}`);
    expect(release.body).toMatchObject({
      code: 'public_ip_state_conflict',
      detail: `Public IP ${ip.id} is pending; wait for its operation to finish, then release it.`,
    });
    expect((await cancel(allocated.body.operation.id)).status).toBe(200);
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).status).toBe(404);
  });

  test('an instance being deleted or in error cannot get a public IP', async () => {
    const ip = (await org.call('POST', '/compute/public-ips', { body: { region: 'fra1' } })).body.public_ip;
    await server.pool.query(`UPDATE public_ips SET state = 'allocated', address = '198.19.200.1' WHERE id = $1`, [ip.id]);
    const failed = await vmIn('error');
    const response = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: failed.id } });
    expect(response.body).toMatchObject({
      code: 'vm_state_conflict',
      detail: `Instance ${failed.id} is error; a public IP cannot be associated with it.`,
    });
    const deleting = await vmIn('running');
    await org.call('DELETE', `/compute/vms/${deleting.id}`);
    expect((await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: deleting.id } })).body.code).toBe(
      'vm_state_conflict',
    );
  });
});
