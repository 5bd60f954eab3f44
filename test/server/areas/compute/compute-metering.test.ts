// Compute and money: the spend budget refuses new instances and public IPs, and what runs is
// metered by the hour.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { computeUsage } from '../../../../server/areas/compute/compute-metering.ts';
import { monthOf } from '../../../../server/areas/billing/metering/usage-ledger.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { act, eventually, runningVm, vmRequest } from './fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** Adds month-to-date usage (vCPU hours). */
async function spend(org: TestOrg, vcpuHours: number): Promise<void> {
  await server.pool.query(
    `INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', $3)
     ON CONFLICT (org_id, month, meter) DO UPDATE SET quantity = usage_totals.quantity + EXCLUDED.quantity`,
    [org.orgId, monthOf(new Date()), vcpuHours],
  );
}

describe('the spend budget', () => {
  test('at or above the budget, new instances and public IPs are refused; what exists keeps working', async () => {
    const org = await server.createOrg('Budgeted');
    const vm = await runningVm(server, org);
    expect((await org.call('PUT', '/billing', { body: { spend_budget_cents: 100 } })).status).toBe(200);
    await spend(org, 100_000);
    const billing = (await org.call('GET', '/billing')).body;
    expect(billing.month_to_date.estimated_cents).toBeGreaterThanOrEqual(100);

    const created = await org.call('POST', '/compute/vms', { body: vmRequest() });
    expect(created.status).toBe(409);
    expect(created.body.code).toBe('spend_budget_exceeded');
    // A taken name is still the answer that comes first.
    const taken = await org.call('POST', '/compute/vms', { body: vmRequest({ name: vm.name }) });
    expect(taken.body.code).toBe('vm_name_taken');
    const allocated = await org.call('POST', '/compute/public-ips', { body: { region: 'fra1' } });
    expect(allocated.status).toBe(409);
    expect(allocated.body.code).toBe('spend_budget_exceeded');
    // Existing resources are not billable creations.
    expect((await act(server, org, 'POST', `/compute/vms/${vm.id}/reboot`)).operation.state).toBe('succeeded');

    // Below the budget again (raised), creation works.
    await org.call('PUT', '/billing', { body: { spend_budget_cents: 9223372036854775807n } });
    expect((await org.call('POST', '/compute/vms', { body: vmRequest() })).status).toBe(202);
    await org.call('PUT', '/billing', { body: { spend_budget_cents: null } });
    expect((await org.call('POST', '/compute/public-ips', { body: { region: 'fra1' } })).status).toBe(202);
  });
});

describe('metering', () => {
  test('powered instances and allocated public IPs are metered resources, at their hourly rates', async () => {
    const org = await server.createOrg('Metered');
    const vm = await runningVm(server, org, { vcpus: 2, memory_mb: 4096, disk_gb: 40 });
    const ip = (await act(server, org, 'POST', '/compute/public-ips', { region: 'fra1' })).accepted.public_ip;

    const ours = async () => (await computeUsage.meteredResources(server.pool)).filter((resource) => resource.orgId === org.orgId);
    const metered = await ours();
    const instance = metered.find((resource) => resource.resourceType === 'vm');
    expect(instance).toEqual({
      orgId: org.orgId,
      resourceType: 'vm',
      resourceId: expect.stringMatching(new RegExp(`^${vm.id}:\\d+$`)),
      ratesPerHour: { vcpu_hour: 2, memory_gb_hour: 4, disk_gb_hour: 40 },
      // Its hours are also counted by size, for the invoice.
      size: '2 vCPU, 4 GB memory, 40 GB disk',
    });
    expect(metered.filter((resource) => resource.resourceType === 'public_ip')).toEqual([
      { orgId: org.orgId, resourceType: 'public_ip', resourceId: ip.id, ratesPerHour: { public_ip_hour: 1 } },
    ]);
    // Until its address is allocated, a public IP is not billed.
    await server.pool.query(`INSERT INTO public_ips (id, org_id, region_id, state) VALUES (gen_random_uuid(), $1, 'ams1', 'pending')`, [
      org.orgId,
    ]);
    expect((await ours()).filter((resource) => resource.resourceType === 'public_ip')).toHaveLength(1);

    // The metering loop accrues it into the month's usage.
    const usage = await eventually(async () => {
      const { rows } = await server.pool.query(
        `SELECT meter, quantity::float AS quantity FROM usage_totals WHERE org_id = $1 AND month = $2`,
        [org.orgId, monthOf(new Date())],
      );
      const byMeter = Object.fromEntries(rows.map((row) => [row.meter, row.quantity]));
      return byMeter.vcpu_hour > 0 && byMeter.public_ip_hour > 0 ? byMeter : undefined;
    });
    expect(usage.memory_gb_hour).toBeGreaterThan(0);
    expect(usage.disk_gb_hour).toBeGreaterThan(0);

    // A stopped instance is not metered; started again, it is a new run.
    await act(server, org, 'POST', `/compute/vms/${vm.id}/stop`);
    expect((await ours()).some((resource) => resource.resourceType === 'vm')).toBe(false);
    await act(server, org, 'POST', `/compute/vms/${vm.id}/start`);
    const restarted = (await ours()).find((resource) => resource.resourceType === 'vm');
    expect(restarted?.resourceId).not.toBe(instance?.resourceId);
    // A released public IP is not metered any more.
    await act(server, org, 'DELETE', `/compute/public-ips/${ip.id}`);
    expect((await ours()).some((resource) => resource.resourceId === ip.id)).toBe(false);
  });
});
