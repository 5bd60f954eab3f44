// Backend faults injected into the simulated hypervisor (SIM_FAULTS, by instance name): transient
// failures are retried, permanent ones fail the operation, and what the customer sees is a fixed
// phrase with a context label, never the backend's words.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';
import { act, runningVm, uniqueName, vmRequest, type VmOut } from '../fixtures.ts';

const FAULTS = [
  'hypervisor.createServer@flaky-*=transient*2',
  'hypervisor.createServer@doomed-*=permanent',
  'hypervisor.createServer@fragile-*=permanent*1',
  'hypervisor.createServer@unreachable-*=transient*99',
  'hypervisor.stopServer@stubborn-*=permanent',
  'hypervisor.rebootServer@wobbly-*=permanent',
  'hypervisor.deleteServer@sticky-*=permanent',
  'hypervisor.attachAddress@unroutable-*=permanent',
].join(';');

let server: TestServer;
let org: TestOrg;
beforeAll(async () => {
  server = await startTestServer({ SIM_FAULTS: FAULTS });
  org = server.org;
});
afterAll(() => server?.close());

async function create(name: string): Promise<{ vm: VmOut; operation: any }> {
  const created = await org.call('POST', '/compute/vms', { body: vmRequest({ name }) });
  expect(created.status).toBe(202);
  return { vm: created.body.vm, operation: await server.waitForOperation(org, created.body.operation.id) };
}

const get = async (vmId: string): Promise<VmOut> => (await org.call('GET', `/compute/vms/${vmId}`)).body;

describe('transient faults', () => {
  test('are retried until the backend answers', async () => {
    const { vm, operation } = await create(uniqueName('flaky'));
    expect(operation).toMatchObject({ state: 'succeeded', attempt: 3, error_class: null, error_detail: null });
    expect(await get(vm.id)).toMatchObject({ state: 'running', error_class: null, error_detail: null, observed_status: 'running' });
  });

  test('fail the operation once max_attempts is reached: backend_unavailable', async () => {
    const { vm, operation } = await create(uniqueName('unreachable'));
    expect(operation).toMatchObject({
      state: 'failed',
      attempt: 5,
      max_attempts: 5,
      error_class: 'backend_unavailable',
      error_detail: 'The compute backend was unavailable after 5 attempts. [vm.create]',
    });
    expect(await get(vm.id)).toMatchObject({
      state: 'error',
      error_class: 'backend_unavailable',
      error_detail: 'The compute backend was unavailable after 5 attempts. [vm.create]',
    });
  });
});

describe('permanent faults', () => {
  test('leave a new instance in error with a fixed phrase; nothing is observed; it keeps its name', async () => {
    const name = uniqueName('doomed');
    const { vm, operation } = await create(name);
    expect(operation).toMatchObject({
      state: 'failed',
      attempt: 1,
      error_class: 'backend_rejected',
      error_detail: 'The compute backend refused the request. [vm.create]',
    });
    const failed = await get(vm.id);
    expect(failed).toMatchObject({
      state: 'error',
      desired_state: 'running',
      error_class: 'backend_rejected',
      error_detail: 'The compute backend refused the request. [vm.create]',
      observed_status: null,
      observed_addresses: null,
      observed_at: null,
    });
    expect(JSON.stringify(failed)).not.toMatch(/SIM_FAULTS|injected|refused \(/);
    expect((await org.call('POST', '/compute/vms', { body: vmRequest({ name }) })).body.code).toBe('vm_name_taken');
    // Deleting it frees the name.
    expect((await act(server, org, 'DELETE', `/compute/vms/${vm.id}`)).operation.state).toBe('succeeded');
    expect((await org.call('POST', '/compute/vms', { body: vmRequest({ name }) })).status).toBe(202);
  });

  test('a rebuild recovers an instance whose creation failed', async () => {
    const { vm } = await create(uniqueName('fragile'));
    expect((await get(vm.id)).state).toBe('error');
    const rebuild = await act(server, org, 'POST', `/compute/vms/${vm.id}/rebuild`, { image_id: 'debian-12' });
    expect(rebuild.operation.state).toBe('succeeded');
    expect(await get(vm.id)).toMatchObject({
      state: 'running',
      image: { catalog_id: 'debian-12' },
      error_class: null,
      error_detail: null,
      observed_status: 'running',
    });
  });

  test('a refused stop leaves the instance running, says why, and the next success clears it', async () => {
    const vm = await runningVm(server, org, { name: uniqueName('stubborn') });
    const { operation } = await act(server, org, 'POST', `/compute/vms/${vm.id}/stop`);
    expect(operation).toMatchObject({
      state: 'failed',
      error_class: 'backend_rejected',
      error_detail: 'The compute backend refused the request. [vm.stop]',
    });
    expect(await get(vm.id)).toMatchObject({
      state: 'running',
      desired_state: 'running',
      error_class: 'backend_rejected',
      error_detail: 'The compute backend refused the request. [vm.stop]',
    });
    await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`);
    expect(await get(vm.id)).toMatchObject({ state: 'running', error_class: null, error_detail: null });
  });

  test('a refused reboot leaves the instance in error', async () => {
    const vm = await runningVm(server, org, { name: uniqueName('wobbly') });
    await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`);
    expect(await get(vm.id)).toMatchObject({
      state: 'error',
      error_class: 'backend_rejected',
      error_detail: 'The compute backend refused the request. [vm.reboot]',
    });
  });

  test('a refused delete leaves the instance in error, still listed', async () => {
    const vm = await runningVm(server, org, { name: uniqueName('sticky') });
    const { operation } = await act(server, org, 'DELETE', `/compute/vms/${vm.id}`);
    expect(operation.state).toBe('failed');
    expect(await get(vm.id)).toMatchObject({ state: 'error', error_detail: 'The compute backend refused the request. [vm.delete]' });
    expect((await org.call('GET', '/compute/vms?state=error')).body.items.map((item: VmOut) => item.id)).toContain(vm.id);
  });

  test('a refused association leaves the public IP in error; only release is accepted then', async () => {
    const vm = await runningVm(server, org, { name: uniqueName('unroutable') });
    const ip = (await act(server, org, 'POST', '/compute/public-ips', { region: 'fra1' })).accepted.public_ip;
    const { operation } = await act(server, org, 'POST', `/compute/public-ips/${ip.id}/associate`, { vm_id: vm.id });
    expect(operation.state).toBe('failed');
    const failed = (await org.call('GET', `/compute/public-ips/${ip.id}`)).body;
    expect(failed).toMatchObject({
      state: 'error',
      vm_id: vm.id,
      error: 'The network backend refused the association. [ip.associate]',
      address: expect.any(String),
    });
    expect((await org.call('POST', `/compute/public-ips/${ip.id}/disassociate`)).body.code).toBe('public_ip_state_conflict');
    const again = await org.call('POST', `/compute/public-ips/${ip.id}/associate`, { body: { vm_id: vm.id } });
    expect(again.body).toMatchObject({ code: 'public_ip_state_conflict', detail: expect.stringContaining('is error') });
    expect((await act(server, org, 'DELETE', `/compute/public-ips/${ip.id}`)).operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/public-ips/${ip.id}`)).status).toBe(404);
  });
});
