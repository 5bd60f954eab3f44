// Instances on the real server: creation rules, reads and lists, allowed_actions in every case,
// protection, deletion and the full life of an instance.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { setProtectionByOperator } from '../../../../../server/areas/compute/vms/vm-protection.ts';
import { withTransaction } from '../../../../../server/db/pool.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';
import {
  act,
  ALL_ACTIONS,
  eventually,
  runningVm,
  singleCopyRequest,
  sshPublicKey,
  uniqueName,
  vmRequest,
  type VmOut,
} from '../fixtures.ts';

let server: TestServer;
let org: TestOrg;
beforeAll(async () => {
  server = await startTestServer();
  org = server.org;
});
afterAll(() => server?.close());

const VM_FIELDS = [
  'id',
  'org_id',
  'name',
  'region_id',
  'storage_pool_id',
  'network_profile_id',
  'image',
  'vcpus',
  'memory_mb',
  'disk_gb',
  'state',
  'desired_state',
  'workload_type',
  'protected',
  'ssh_key_names',
  'user_data_present',
  'fqdn',
  'observed_status',
  'observed_addresses',
  'observed_at',
  'error_class',
  'error_detail',
  'allowed_actions',
  'labels',
  'created_at',
  'updated_at',
].sort();

async function operatorProtect(vmId: string, value: boolean, orgId = org.orgId): Promise<VmOut> {
  return withTransaction(server.pool, (tx) =>
    setProtectionByOperator(tx, { orgId, vmId, protected: value, actor: { subject: 'ops-alice', realm: 'operator', tokenId: null } }),
  );
}

describe('createVm', () => {
  test('a new instance is creating, wants to run, has every field and nothing observed yet', async () => {
    const request = vmRequest({ labels: { env: 'production', team: 'web' } });
    const created = await org.call('POST', '/compute/vms', { body: request });
    expect(created.status).toBe(202);
    const { vm, operation } = created.body;
    expect(Object.keys(vm).sort()).toEqual(VM_FIELDS);
    expect(vm).toMatchObject({
      org_id: org.orgId,
      name: request.name,
      region_id: 'fra1',
      storage_pool_id: 'fra1-ssd',
      network_profile_id: 'fra1-standard',
      image: { catalog_id: 'ubuntu-24.04', name: 'Ubuntu 24.04 LTS' },
      vcpus: 1,
      memory_mb: 1024,
      disk_gb: 20,
      state: 'creating',
      desired_state: 'running',
      workload_type: 'customer',
      protected: false,
      ssh_key_names: [],
      user_data_present: false,
      fqdn: null,
      observed_status: null,
      observed_addresses: null,
      observed_at: null,
      error_class: null,
      error_detail: null,
      allowed_actions: ALL_ACTIONS,
      labels: { env: 'production', team: 'web' },
    });
    expect(operation).toMatchObject({
      type: 'vm.create',
      resource_type: 'vm',
      resource_id: vm.id,
      state: 'queued',
      attempt: 0,
      finished_at: null,
    });

    const finished = await server.waitForOperation(org, operation.id);
    expect(finished.state).toBe('succeeded');
    const read = (await org.call('GET', `/compute/vms/${vm.id}`)).body;
    expect(read.state).toBe('running');
    // Observed fields come from the hypervisor's report.
    expect(read.observed_status).toBe('running');
    expect(read.observed_addresses).toEqual({
      private_ipv4: [expect.any(String)],
      public_ipv4: [expect.any(String)],
      ipv6: [expect.any(String)],
    });
    expect(Date.parse(read.observed_at)).not.toBeNaN();
  });

  test('a private network profile reports no public addresses (empty lists, not null)', async () => {
    const vm = await runningVm(server, org, { network_profile: 'fra1-private' });
    expect(vm.observed_addresses).toEqual({ private_ipv4: [expect.any(String)], public_ipv4: [], ipv6: [] });
  });

  test('the name is lowercase letters, digits and hyphens, starting and ending alphanumeric', async () => {
    for (const name of ['Web-1', 'web_1', '-web', 'web-', '']) {
      const response = await org.call('POST', '/compute/vms', { body: vmRequest({ name }) });
      expect(response.status, name).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(response.body.errors.map((error: { pointer: string }) => error.pointer)).toContain('/name');
    }
  });

  test('unknown fields and bad labels are 400', async () => {
    const unknown = await org.call('POST', '/compute/vms', { body: { ...vmRequest(), colour: 'blue' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('validation_failed');
    const badLabel = await org.call('POST', '/compute/vms', { body: vmRequest({ labels: { 'a:b': 'x' } }) });
    expect(badLabel.status).toBe(400);
  });

  test('user_data: any non-null value, the empty string included, is 422 user_data_unsupported; null is fine', async () => {
    for (const userData of ['', '#cloud-config']) {
      const response = await org.call('POST', '/compute/vms', { body: vmRequest({ user_data: userData }) });
      expect(response.status).toBe(422);
      expect(response.body.code).toBe('user_data_unsupported');
    }
    const withNull = await org.call('POST', '/compute/vms', { body: vmRequest({ user_data: null }) });
    expect(withNull.status).toBe(202);
    expect(withNull.body.vm.user_data_present).toBe(false);
  });

  test('workload_type infra is 422 workload_not_allowed; customer is fine', async () => {
    const infra = await org.call('POST', '/compute/vms', { body: vmRequest({ workload_type: 'infra' }) });
    expect(infra.status).toBe(422);
    expect(infra.body.code).toBe('workload_not_allowed');
    const customer = await org.call('POST', '/compute/vms', { body: vmRequest({ workload_type: 'customer' }) });
    expect(customer.status).toBe(202);
    expect(customer.body.vm.workload_type).toBe('customer');
  });

  test('references must exist in the region: one errors entry per unknown reference', async () => {
    const region = await org.call('POST', '/compute/vms', { body: vmRequest({ region: 'par1' }) });
    expect(region.status).toBe(422);
    expect(region.body.code).toBe('invalid_reference');
    expect(region.body.errors).toEqual([{ pointer: '/region', detail: expect.stringContaining('par1') }]);

    // rocky-9 is not offered in nbg-sc1; fra1's pool and profile are not nbg-sc1's.
    const others = await org.call('POST', '/compute/vms', { body: vmRequest({ region: 'nbg-sc1', image: 'rocky-9' }) });
    expect(others.status).toBe(422);
    expect(others.body.errors.map((error: { pointer: string }) => error.pointer)).toEqual(['/image', '/storage_pool', '/network_profile']);

    const keys = await org.call('POST', '/compute/vms', { body: vmRequest({ ssh_keys: ['nobody-laptop'] }) });
    expect(keys.status).toBe(422);
    expect(keys.body.errors).toEqual([{ pointer: '/ssh_keys/0', detail: expect.stringContaining('nobody-laptop') }]);
  });

  test("disk and memory below the image's minimums are 422 image_requirements_not_met", async () => {
    const response = await org.call('POST', '/compute/vms', { body: vmRequest({ image: 'rocky-9', disk_gb: 10, memory_mb: 512 }) });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('image_requirements_not_met');
    expect(response.body.errors.map((error: { pointer: string }) => error.pointer)).toEqual(['/disk_gb', '/memory_mb']);
  });

  test('a name is unique among the live instances of a region, free in another region', async () => {
    const name = uniqueName('web');
    expect((await org.call('POST', '/compute/vms', { body: vmRequest({ name }) })).status).toBe(202);
    const again = await org.call('POST', '/compute/vms', { body: vmRequest({ name }) });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('vm_name_taken');
    const elsewhere = await org.call('POST', '/compute/vms', {
      body: vmRequest({ name, region: 'ams1', storage_pool: 'ams1-ssd', network_profile: 'ams1-standard' }),
    });
    expect(elsewhere.status).toBe(202);
    // Names are per organization.
    const other = await server.createOrg();
    expect((await other.call('POST', '/compute/vms', { body: vmRequest({ name }) })).status).toBe(202);
  });

  test('of simultaneous creations with one name, one is accepted and queued; the others are 409 vm_name_taken and leave nothing', async () => {
    const name = uniqueName('race');
    const answers = await Promise.all(Array.from({ length: 8 }, () => org.call('POST', '/compute/vms', { body: vmRequest({ name }) })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
    for (const refused of answers.filter((answer) => answer.status === 409)) expect(refused.body.code).toBe('vm_name_taken');
    const accepted = answers.find((answer) => answer.status === 202)!.body;
    const { rows } = await server.pool.query<{ resource_id: string }>(
      `SELECT o.resource_id FROM operations o WHERE o.org_id = $1 AND o.type = 'vm.create'
         AND NOT EXISTS (SELECT 1 FROM vms WHERE vms.id::text = o.resource_id)`,
      [org.orgId],
    );
    // No operation was queued for an instance that was not made.
    expect(rows).toEqual([]);
    expect((await server.waitForOperation(org, accepted.operation.id)).state).toBe('succeeded');
  });

  test('ssh_keys are names of the organization keys; the instance keeps them after the key is deleted', async () => {
    const created = await org.call('POST', '/compute/ssh-keys', { body: { name: uniqueName('alice'), public_key: sshPublicKey() } });
    expect(created.status).toBe(201);
    const vm = await runningVm(server, org, { ssh_keys: [created.body.name] });
    expect(vm.ssh_key_names).toEqual([created.body.name]);
    expect((await org.call('DELETE', `/compute/ssh-keys/${created.body.id}`)).status).toBe(204);
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.ssh_key_names).toEqual([created.body.name]);
    // Another organization's key of the same name is not ours.
    const other = await server.createOrg();
    const theirs = await other.call('POST', '/compute/ssh-keys', { body: { name: 'theirs-laptop', public_key: sshPublicKey() } });
    expect(theirs.status).toBe(201);
    expect((await org.call('POST', '/compute/vms', { body: vmRequest({ ssh_keys: ['theirs-laptop'] }) })).body.code).toBe(
      'invalid_reference',
    );
  });

  test('an Idempotency-Key replays the first answer instead of creating a second instance', async () => {
    const key = `create-${uniqueName()}`;
    const body = vmRequest();
    const first = await org.call('POST', '/compute/vms', { body, headers: { 'Idempotency-Key': key } });
    const second = await org.call('POST', '/compute/vms', { body, headers: { 'Idempotency-Key': key } });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.vm.id).toBe(first.body.vm.id);
    expect(second.body.operation.id).toBe(first.body.operation.id);
    const reused = await org.call('POST', '/compute/vms', { body: vmRequest(), headers: { 'Idempotency-Key': key } });
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe('idempotency_key_reused');
    const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM vms WHERE org_id = $1 AND name = $2', [org.orgId, body.name]);
    expect(rows[0].n).toBe(1);
  });

  test('a read-only key cannot create (403)', async () => {
    const readOnly = await org.memberKey('owner', ['read']);
    const response = await org.call('POST', '/compute/vms', { body: vmRequest(), key: readOnly });
    expect(response.status).toBe(403);
  });
});

describe('getVm and listVms', () => {
  test("another organization's instance is 404, as is an unknown one", async () => {
    const other = await server.createOrg();
    const theirs = (await other.call('POST', '/compute/vms', { body: vmRequest() })).body.vm;
    expect((await org.call('GET', `/compute/vms/${theirs.id}`)).status).toBe(404);
    expect((await org.call('GET', '/compute/vms/00000000-0000-4000-8000-000000000000')).body.code).toBe('not_found');
    expect((await org.call('POST', `/compute/vms/${theirs.id}/reboot`)).status).toBe(404);
  });

  test('filters by region, state and labels (all must match), oldest first, in pages', async () => {
    const lister = await server.createOrg('Lister');
    const team = uniqueName('team');
    const a = await runningVm(server, lister, { labels: { team, env: 'prod' } });
    const b = await runningVm(server, lister, { labels: { team, env: 'dev' } });
    const c = await runningVm(server, lister, {
      region: 'ams1',
      storage_pool: 'ams1-ssd',
      network_profile: 'ams1-standard',
      labels: { team, env: 'prod' },
    });
    await act(server, lister, 'POST', `/compute/vms/${b.id}/stop`);

    // key:value is sent as written (the contract allows the reserved colon unencoded).
    const ids = async (query: string) => (await lister.call('GET', `/compute/vms${query}`)).body.items.map((vm: VmOut) => vm.id);
    expect(await ids('')).toEqual([a.id, b.id, c.id]);
    expect(await ids('?region=fra1')).toEqual([a.id, b.id]);
    expect(await ids('?region=lon1')).toEqual([]);
    expect(await ids('?state=stopped')).toEqual([b.id]);
    expect(await ids(`?label=team:${team}&label=env:prod`)).toEqual([a.id, c.id]);
    expect(await ids(`?label=team:${team}&label=env:prod&region=ams1`)).toEqual([c.id]);
    expect(await ids('?label=env:staging')).toEqual([]);

    const first = await lister.call('GET', `/compute/vms?limit=2&label=team%3A${team}`);
    expect(first.body.items.map((vm: VmOut) => vm.id)).toEqual([a.id, b.id]);
    const second = await lister.call('GET', `/compute/vms?limit=2&label=team%3A${team}&cursor=${first.body.next_cursor}`);
    expect(second.body.items.map((vm: VmOut) => vm.id)).toEqual([c.id]);
    expect(second.body.next_cursor).toBeNull();
    // A page that ends exactly at the list's end names no next page.
    const whole = await lister.call('GET', `/compute/vms?limit=3&label=team%3A${team}`);
    expect(whole.body.items.map((vm: VmOut) => vm.id)).toEqual([a.id, b.id, c.id]);
    expect(whole.body.next_cursor).toBeNull();
    // A cursor of other filters, or of another list, is refused.
    const otherFilters = await lister.call('GET', `/compute/vms?limit=2&cursor=${first.body.next_cursor}`);
    expect(otherFilters.status).toBe(400);
    expect(otherFilters.body.code).toBe('invalid_cursor');
    expect((await lister.call('GET', '/compute/vms?cursor=bm9wZQ')).body.code).toBe('invalid_cursor');
  });

  test('a malformed label filter is 400', async () => {
    for (const label of ['env', 'env:', ':prod']) {
      const response = await org.call('GET', `/compute/vms?label=${encodeURIComponent(label)}`);
      expect(response.status, label).toBe(400);
      expect(response.body.code).toBe('validation_failed');
    }
  });
});

describe('allowed_actions', () => {
  test('replicated, unprotected: every action, in vocabulary order', async () => {
    const vm = await runningVm(server, org);
    expect(vm.allowed_actions).toEqual(ALL_ACTIONS);
  });

  test('replicated, protected: every action but delete', async () => {
    const vm = await runningVm(server, org);
    const protectedVm = await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true } });
    expect(protectedVm.status).toBe(200);
    expect(protectedVm.body.protected).toBe(true);
    expect(protectedVm.body.allowed_actions).toEqual(ALL_ACTIONS.filter((action) => action !== 'delete'));
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.allowed_actions).toEqual(
      ALL_ACTIONS.filter((action) => action !== 'delete'),
    );
  });

  test('single copy, unprotected: start, stop, reboot, console; anything else is 409 vm_action_not_allowed', async () => {
    const vm = await runningVm(server, org, {}, singleCopyRequest);
    expect(vm.allowed_actions).toEqual(['start', 'stop', 'reboot', 'console']);
    const refused: Array<[string, string, unknown?]> = [
      ['POST', 'resize', { vcpus: 2, memory_mb: 2048, disk_gb: 20 }],
      ['POST', 'rebuild', { image_id: 'debian-12' }],
      ['POST', 'rescue'],
      ['POST', 'unrescue'],
      ['PUT', 'firewall', { inbound: [] }],
      ['PUT', 'protection', { protected: true }],
    ];
    for (const [method, action, body] of refused) {
      const response = await org.call(method, `/compute/vms/${vm.id}/${action}`, body === undefined ? {} : { body });
      expect(response.status, action).toBe(409);
      expect(response.body.code, action).toBe('vm_action_not_allowed');
    }
    const deleted = await org.call('DELETE', `/compute/vms/${vm.id}`);
    expect(deleted.status).toBe(409);
    expect(deleted.body.code).toBe('vm_action_not_allowed');
    // Reboot and console are allowed.
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`)).operation.state).toBe('succeeded');
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/console`)).operation.state).toBe('succeeded');
  });

  test('single copy, protected by an operator: start and console only', async () => {
    const vm = await runningVm(server, org, {}, singleCopyRequest);
    const protectedVm = await operatorProtect(vm.id, true);
    expect(protectedVm.protected).toBe(true);
    expect(protectedVm.allowed_actions).toEqual(['start', 'console']);
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.allowed_actions).toEqual(['start', 'console']);
    for (const action of ['stop', 'reboot']) {
      const response = await org.call('POST', `/compute/vms/${vm.id}/${action}`);
      expect(response.body.code).toBe('vm_action_not_allowed');
      expect(response.body.detail).toContain('protected by an operator');
    }
    // Protected comes first: deleting it is vm_protected, worded for the operator's protection.
    const deleted = await org.call('DELETE', `/compute/vms/${vm.id}`);
    expect(deleted.status).toBe(409);
    expect(deleted.body.code).toBe('vm_protected');
    expect(deleted.body.detail).toContain('protected by an operator');
    // start is listed but the state refuses it.
    const started = await org.call('POST', `/compute/vms/${vm.id}/start`);
    expect(started.status).toBe(409);
    expect(started.body.code).toBe('vm_state_conflict');
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/console`)).operation.state).toBe('succeeded');

    const { rows } = await server.pool.query(
      `SELECT actor_sub, actor_realm, result FROM audit_events WHERE resource_id = $1 AND action = 'vm.set_protection'`,
      [vm.id],
    );
    expect(rows).toEqual([{ actor_sub: 'ops-alice', actor_realm: 'operator', result: 'succeeded' }]);
    // The operator can lift it again.
    expect((await operatorProtect(vm.id, false)).allowed_actions).toEqual(['start', 'stop', 'reboot', 'console']);
  });
});

describe('protection', () => {
  test('only an owner may switch it; a member or a read-only key gets 403', async () => {
    const vm = await runningVm(server, org);
    const member = await org.memberKey('member');
    const byMember = await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true }, key: member });
    expect(byMember.status).toBe(403);
    expect(byMember.body.code).toBe('forbidden');
    const readOnly = await org.memberKey('owner', ['read']);
    expect((await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true }, key: readOnly })).status).toBe(403);
    const otherOwner = await org.memberKey('owner');
    expect((await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true }, key: otherOwner })).status).toBe(200);
    const { rows } = await server.pool.query(
      `SELECT result FROM audit_events WHERE resource_id = $1 AND action = 'vm.set_protection' ORDER BY ts`,
      [vm.id],
    );
    expect(rows.map((row) => row.result)).toEqual(['denied', 'denied', 'succeeded']);
  });

  test('deleting a protected instance is 409 vm_protected until protection is off; setting the same value changes nothing', async () => {
    const vm = await runningVm(server, org);
    await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true } });
    const again = await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: true } });
    expect(again.status).toBe(200);
    expect(again.body.protected).toBe(true);
    const refused = await org.call('DELETE', `/compute/vms/${vm.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('vm_protected');
    expect(refused.body.detail).toContain('switch protection off');
    // Protection does not prevent other actions, a rebuild included.
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/rebuild`, { image_id: 'debian-12' })).operation.state).toBe('succeeded');
    const off = await org.call('PUT', `/compute/vms/${vm.id}/protection`, { body: { protected: false } });
    expect(off.body.allowed_actions).toEqual(ALL_ACTIONS);
    expect((await act(server, org, 'DELETE', `/compute/vms/${vm.id}`)).operation.state).toBe('succeeded');
  });

  test('the operator override on an instance that does not exist is not found', async () => {
    await expect(operatorProtect('00000000-0000-4000-8000-000000000000', true)).rejects.toMatchObject({
      kind: 'not_found',
      code: 'not_found',
    });
  });
});

describe('the life of an instance', () => {
  test('create → running → stop → start → resize → rebuild → delete, and the name is reused', async () => {
    const name = uniqueName('life');
    const created = await org.call('POST', '/compute/vms', { body: vmRequest({ name }) });
    const vmId = created.body.vm.id;
    expect((await server.waitForOperation(org, created.body.operation.id)).state).toBe('succeeded');
    const get = async () => (await org.call('GET', `/compute/vms/${vmId}`)).body as VmOut;
    expect(await get()).toMatchObject({ state: 'running', desired_state: 'running', observed_status: 'running' });

    const stop = await act(server, org, 'POST', `/compute/vms/${vmId}/stop`);
    // desired_state moves at once, state when the operation has succeeded.
    expect(stop.accepted.vm).toMatchObject({ state: 'running', desired_state: 'stopped' });
    expect(stop.accepted.operation.type).toBe('vm.stop');
    expect(stop.operation.state).toBe('succeeded');
    expect(await get()).toMatchObject({ state: 'stopped', desired_state: 'stopped', observed_status: 'stopped' });

    const start = await act(server, org, 'POST', `/compute/vms/${vmId}/start`);
    expect(start.accepted.vm).toMatchObject({ state: 'stopped', desired_state: 'running' });
    expect(await get()).toMatchObject({ state: 'running', observed_status: 'running' });

    const resize = await act(server, org, 'POST', `/compute/vms/${vmId}/resize`, { vcpus: 2, memory_mb: 4096, disk_gb: 40 });
    expect(resize.accepted.vm).toMatchObject({ state: 'resizing', vcpus: 2, memory_mb: 4096, disk_gb: 40 });
    expect(await get()).toMatchObject({ state: 'running', vcpus: 2, memory_mb: 4096, disk_gb: 40 });
    const shrink = await org.call('POST', `/compute/vms/${vmId}/resize`, { body: { vcpus: 2, memory_mb: 4096, disk_gb: 30 } });
    expect(shrink.status).toBe(422);
    expect(shrink.body.code).toBe('disk_shrink_not_allowed');
    // The current size is accepted and changes nothing.
    const same = await org.call('POST', `/compute/vms/${vmId}/resize`, { body: { vcpus: 2, memory_mb: 4096, disk_gb: 40 } });
    expect(same.status).toBe(202);
    expect(same.body.operation).toMatchObject({ state: 'succeeded', finished_at: expect.any(String) });
    expect(same.body.vm.state).toBe('running');

    const rebuild = await act(server, org, 'POST', `/compute/vms/${vmId}/rebuild`, { image_id: 'rocky-9' });
    expect(rebuild.accepted.vm).toMatchObject({
      state: 'rebuilding',
      desired_state: 'running',
      image: { catalog_id: 'rocky-9', name: 'Rocky Linux 9' },
    });
    expect(await get()).toMatchObject({ state: 'running', image: { catalog_id: 'rocky-9' } });
    // The current image is allowed (a reinstall); another region's image is not.
    expect((await act(server, org, 'POST', `/compute/vms/${vmId}/rebuild`, { image_id: 'rocky-9' })).operation.state).toBe('succeeded');
    const foreign = await org.call('POST', `/compute/vms/${vmId}/rebuild`, { body: { image_id: 'windows-2022' } });
    expect(foreign.status).toBe(422);
    expect(foreign.body.code).toBe('invalid_reference');
    expect(foreign.body.errors[0].pointer).toBe('/image_id');

    const deleted = await act(server, org, 'DELETE', `/compute/vms/${vmId}`);
    expect(deleted.accepted.vm).toMatchObject({ state: 'deleting', desired_state: 'deleted' });
    expect(deleted.operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/vms/${vmId}`)).status).toBe(404);
    expect((await org.call('GET', '/compute/vms')).body.items.map((vm: VmOut) => vm.id)).not.toContain(vmId);
    expect((await org.call('DELETE', `/compute/vms/${vmId}`)).status).toBe(404);

    const reused = await org.call('POST', '/compute/vms', { body: vmRequest({ name }) });
    expect(reused.status).toBe(202);
    expect(reused.body.vm.id).not.toBe(vmId);
  });

  test('rescue and unrescue; stop from rescue; unrescue needs rescue', async () => {
    const vm = await runningVm(server, org);
    const notRescued = await org.call('POST', `/compute/vms/${vm.id}/unrescue`);
    expect(notRescued.body.code).toBe('vm_state_conflict');
    expect(notRescued.body.detail).toContain('unrescue needs state rescue');
    const rescue = await act(server, org, 'POST', `/compute/vms/${vm.id}/rescue`);
    expect(rescue.accepted.vm).toMatchObject({ state: 'running', desired_state: 'rescue' });
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body).toMatchObject({ state: 'rescue', observed_status: 'rescue' });
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/unrescue`)).operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.state).toBe('running');
    await act(server, org, 'POST', `/compute/vms/${vm.id}/rescue`);
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/stop`)).operation.state).toBe('succeeded');
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.state).toBe('stopped');
  });

  test('states refuse what they cannot do (409 vm_state_conflict)', async () => {
    const vm = await runningVm(server, org);
    const start = await org.call('POST', `/compute/vms/${vm.id}/start`);
    expect(start.status).toBe(409);
    expect(start.body).toMatchObject({
      code: 'vm_state_conflict',
      detail: `Instance ${vm.id} (${vm.name}) is running; start needs state stopped.`,
    });
    await act(server, org, 'POST', `/compute/vms/${vm.id}/stop`);
    for (const [action, needs] of [
      ['stop', 'running or rescue'],
      ['reboot', 'running'],
    ]) {
      const response = await org.call('POST', `/compute/vms/${vm.id}/${action}`);
      expect(response.body.detail).toBe(`Instance ${vm.id} (${vm.name}) is stopped; ${action} needs state ${needs}.`);
    }
    const consoleRequest = await org.call('POST', `/compute/vms/${vm.id}/console`);
    expect(consoleRequest.status).toBe(409);
    expect(consoleRequest.body.detail).toContain('a console needs state running or rescue');
    // A stopped instance can still be resized, rebuilt, rescued and deleted.
    expect(
      (await act(server, org, 'POST', `/compute/vms/${vm.id}/resize`, { vcpus: 2, memory_mb: 2048, disk_gb: 20 })).operation.state,
    ).toBe('succeeded');
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.state).toBe('stopped');
  });

  test('the reconciler records what the hypervisor sees, without touching the desired state', async () => {
    const vm = await runningVm(server, org);
    await server.pool.query(`UPDATE sim_servers SET power = 'crashed' WHERE server_id = $1`, [vm.id]);
    const crashed = await eventually(async () => {
      const read = (await org.call('GET', `/compute/vms/${vm.id}`)).body as VmOut;
      return read.observed_status === 'crashed' ? read : undefined;
    });
    expect(crashed.state).toBe('running');
    expect(crashed.updated_at).toBe(vm.updated_at);
    expect(Date.parse(crashed.observed_at!)).toBeGreaterThan(Date.parse(vm.observed_at!));
    // A reboot brings it back.
    await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`);
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.observed_status).toBe('running');
  });

  test('a guest that powers itself off is stopped, and no longer metered', async () => {
    const vm = await runningVm(server, org);
    // What `poweroff` typed inside the guest does to the simulated server.
    await server.pool.query(`UPDATE sim_servers SET power = 'stopped' WHERE server_id = $1`, [vm.id]);
    const stopped = await eventually(async () => {
      const read = (await org.call('GET', `/compute/vms/${vm.id}`)).body as VmOut;
      return read.state === 'stopped' ? read : undefined;
    });
    expect(stopped).toMatchObject({ desired_state: 'stopped', observed_status: 'stopped' });
    expect(stopped.allowed_actions).toContain('start');
    const { rows } = await server.pool.query(`SELECT powered_since FROM vms WHERE id = $1`, [vm.id]);
    expect(rows[0].powered_since).toBeNull();
    // A start brings it back.
    await act(server, org, 'POST', `/compute/vms/${vm.id}/start`);
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body).toMatchObject({ state: 'running', observed_status: 'running' });
  });

  test('every change leaves an audit event with before and after', async () => {
    const vm = await runningVm(server, org);
    await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`);
    const { rows } = await server.pool.query(
      `SELECT action, result, before, after, operation_id FROM audit_events WHERE resource_id = $1 ORDER BY ts`,
      [vm.id],
    );
    expect(rows.map((row) => row.action)).toEqual(['vm.create', 'vm.reboot']);
    expect(rows[1].before.state).toBe('running');
    expect(rows[1].after.state).toBe('rebooting');
    expect(rows[1].operation_id).not.toBeNull();
  });
});
