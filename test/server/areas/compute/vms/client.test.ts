// A whole compute scenario driven by the typed client (client/): every step waits on its
// operation with waitForOperation, as a user's program would.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPlatformClient, OperationFailedError, ProblemError, type PlatformClient } from '../../../../../client/index.ts';
import { startTestServer, type TestServer } from '../../../../support/server.ts';
import { sshPublicKey, uniqueName } from '../fixtures.ts';

let server: TestServer;
let client: PlatformClient;
beforeAll(async () => {
  server = await startTestServer({ SIM_FAULTS: 'hypervisor.createServer@doomed-*=permanent' });
  client = createPlatformClient({ baseUrl: server.url, org: server.org.orgId, credential: server.org.ownerKey });
});
afterAll(() => server?.close());

/** Quick polling: the simulated backends answer in milliseconds. */
const quickly = { timeoutMs: 20_000, initialIntervalMs: 25, maxIntervalMs: 200 };

test('create an instance, wait for it, open its console, attach a public IP, and clean up', async () => {
  const regions = await client.call('listRegions');
  expect(regions.items.map((region) => region.id)).toContain('fra1');
  const images = await client.call('listImages', { query: { region: 'fra1' } });
  expect(images.items.map((image) => image.id)).toContain('ubuntu-24.04');

  const key = await client.call('createSshKey', { body: { name: uniqueName('laptop'), public_key: sshPublicKey() } });
  const team = uniqueName('team');
  const created = await client.call('createVm', {
    body: {
      name: uniqueName('web'),
      region: 'fra1',
      image: 'ubuntu-24.04',
      vcpus: 2,
      memory_mb: 4096,
      disk_gb: 40,
      storage_pool: 'fra1-ssd',
      network_profile: 'fra1-standard',
      ssh_keys: [key.name],
      labels: { team, env: 'production' },
    },
  });
  expect(created.vm.state).toBe('creating');
  const done = await client.waitForOperation(created.operation, quickly);
  expect(done.state).toBe('succeeded');
  const vmId = created.vm.id;
  const vm = await client.call('getVm', { path: { vm_id: vmId } });
  expect(vm).toMatchObject({ state: 'running', observed_status: 'running', ssh_key_names: [key.name] });

  // The label filter through the client (which encodes the colon).
  const labelled = [];
  for await (const item of client.paginate('listVms', { query: { label: [`team:${team}`, 'env:production'], limit: 1 } }))
    labelled.push(item.id);
  expect(labelled).toEqual([vmId]);

  // Console: request, wait, collect once.
  const { operation: consoleOperation } = await client.call('requestConsole', { path: { vm_id: vmId } });
  await client.waitForOperation(consoleOperation, quickly);
  const collected = await client.call('collectConsole', { path: { vm_id: vmId }, query: { operation: consoleOperation.id } });
  expect(collected).toMatchObject({
    console_type: 'serial',
    expires_in_seconds: 60,
    url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/console\/sessions\/cs_/),
  });
  await expect(client.call('collectConsole', { path: { vm_id: vmId }, query: { operation: consoleOperation.id } })).rejects.toMatchObject({
    status: 404,
    code: 'not_found',
  });

  // Public IP: allocate, wait, associate, wait; the hypervisor reports it on the instance.
  const allocation = await client.call('allocatePublicIp', { body: { region: 'fra1' } });
  expect(allocation.public_ip.address).toBeNull();
  await client.waitForOperation(allocation.operation, quickly);
  const ip = await client.call('getPublicIp', { path: { public_ip_id: allocation.public_ip.id } });
  expect(ip.state).toBe('allocated');
  const association = await client.call('associatePublicIp', { path: { public_ip_id: ip.id }, body: { vm_id: vmId } });
  await client.waitForOperation(association.operation, quickly);
  expect(await client.call('getPublicIp', { path: { public_ip_id: ip.id } })).toMatchObject({ state: 'associated', vm_id: vmId });
  expect((await client.call('getVm', { path: { vm_id: vmId } })).observed_addresses?.public_ipv4).toContain(ip.address);

  // Actions, each waited on.
  for (const step of [
    () => client.call('stopVm', { path: { vm_id: vmId } }),
    () => client.call('startVm', { path: { vm_id: vmId } }),
    () => client.call('resizeVm', { path: { vm_id: vmId }, body: { vcpus: 4, memory_mb: 8192, disk_gb: 80 } }),
    () => client.call('rebuildVm', { path: { vm_id: vmId }, body: { image_id: 'debian-12' } }),
  ]) {
    const { operation } = await step();
    expect((await client.waitForOperation(operation, quickly)).state).toBe('succeeded');
  }
  expect(await client.call('getVm', { path: { vm_id: vmId } })).toMatchObject({
    state: 'running',
    vcpus: 4,
    image: { catalog_id: 'debian-12' },
  });

  // A weekly restart, listed with its next run.
  const restart = await client.call('scheduleVmRestart', {
    path: { vm_id: vmId },
    body: { kind: 'weekly', day_of_week: 6, time_of_day: '03:00', timezone: 'Europe/Berlin' },
  });
  expect((await client.call('listVmScheduledActions', { path: { vm_id: vmId } })).items.map((item) => item.id)).toEqual([restart.id]);

  // Protected: delete refused with a typed problem; unprotected, it goes.
  await client.call('setVmProtection', { path: { vm_id: vmId }, body: { protected: true } });
  const refused = await client.call('deleteVm', { path: { vm_id: vmId } }).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(ProblemError);
  expect(refused).toMatchObject({ status: 409, code: 'vm_protected' });
  await client.call('setVmProtection', { path: { vm_id: vmId }, body: { protected: false } });
  await client.waitForOperation((await client.call('deleteVm', { path: { vm_id: vmId } })).operation, quickly);
  await expect(client.call('getVm', { path: { vm_id: vmId } })).rejects.toMatchObject({ status: 404 });
  // Its address stays with the organization until released.
  expect(await client.call('getPublicIp', { path: { public_ip_id: ip.id } })).toMatchObject({ state: 'allocated', vm_id: null });
  await client.waitForOperation((await client.call('releasePublicIp', { path: { public_ip_id: ip.id } })).operation, quickly);
  await expect(client.call('getPublicIp', { path: { public_ip_id: ip.id } })).rejects.toMatchObject({ status: 404 });
  // A dozen operations waited for: past a minute at load 13.
}, 300_000);

test('waitForOperation rejects with the fixed phrase when the backend refuses', async () => {
  const created = await client.call('createVm', {
    body: {
      name: uniqueName('doomed'),
      region: 'fra1',
      image: 'ubuntu-24.04',
      vcpus: 1,
      memory_mb: 1024,
      disk_gb: 20,
      storage_pool: 'fra1-ssd',
      network_profile: 'fra1-standard',
    },
  });
  const error = await client.waitForOperation(created.operation, quickly).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(OperationFailedError);
  expect(error).toMatchObject({
    state: 'failed',
    errorClass: 'backend_rejected',
    errorDetail: 'The compute backend refused the request. [vm.create]',
  });
  expect(await client.call('getVm', { path: { vm_id: created.vm.id } })).toMatchObject({ state: 'error', error_class: 'backend_rejected' });
});
