// Metering: the hours a billable resource accrues, and that concurrent metering passes (every
// server process runs one) never lose any. The server runs without its background loops, so
// that its own passes (which meter only its real resources) leave this file's resources alone.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { MeteredResource, UsageSource } from '../../../../../server/areas/area.ts';
import { createBillingRun } from '../../../../../server/areas/billing/metering/billing-run.ts';
import { loadPriceList } from '../../../../../server/areas/billing/prices/price-list.ts';
import { accrueUsage, startOfMonth } from '../../../../../server/areas/billing/metering/usage-ledger.ts';
import { loadConfig } from '../../../../../server/config.ts';
import { createOrganizationClock } from '../../../../../server/core/test-clocks.ts';
import { withTransaction } from '../../../../../server/db/pool.ts';
import type { BillingProviderDriver } from '../../../../../server/drivers/billing-provider.ts';
import { createLogger } from '../../../../../server/logging.ts';
import { startTestServer, type TestServer } from '../../../../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ BACKGROUND_WORK: 'false' });
});
afterAll(() => server?.close());

/** An hour into this month (UTC): every instant the tests meter at falls within it. */
const startOfThisMonth = () => new Date(startOfMonth(new Date()).getTime() + 3_600_000);

async function usageThisMonth(orgId: string): Promise<Array<[string, number]>> {
  const { rows } = await server.pool.query<{ meter: string; quantity: string }>(
    "SELECT meter, quantity::text FROM usage_totals WHERE org_id = $1 AND month = date_trunc('month', now())::date ORDER BY meter",
    [orgId],
  );
  return rows.map((row) => [row.meter, Number(row.quantity)]);
}

test('accrues hourly rates while a resource is billable, and nothing while it is not', async () => {
  const org = await server.createOrg('Metering');
  const vm = { orgId: org.orgId, resourceType: 'vm', resourceId: 'metered-vm', ratesPerHour: { vcpu_hour: 2, memory_gb_hour: 4 } };
  const start = startOfThisMonth();
  const at = (hours: number) => new Date(start.getTime() + hours * 3_600_000);
  await withTransaction(server.pool, (tx) => accrueUsage(tx, [vm], at(0)));
  await withTransaction(server.pool, (tx) => accrueUsage(tx, [vm], at(1)));
  // Stopped for three hours: no longer among the billable resources.
  await withTransaction(server.pool, (tx) => accrueUsage(tx, [], at(2)));
  await withTransaction(server.pool, (tx) => accrueUsage(tx, [vm], at(5)));
  await withTransaction(server.pool, (tx) => accrueUsage(tx, [vm], at(6.5)));
  expect(await usageThisMonth(org.orgId)).toEqual([
    ['memory_gb_hour', 10],
    ['vcpu_hour', 5],
  ]);
});

test('a pass meters up to the instant it read, and the next one starts there: the time a pass takes is billed too', async () => {
  const org = await server.createOrg('Slow pass');
  const vm = { orgId: org.orgId, resourceType: 'vm', resourceId: 'slow-pass-vm', ratesPerHour: { vcpu_hour: 1 } };
  const start = startOfThisMonth().getTime();
  // A clock that moves on by an hour at every reading, as real time moves on while a pass's
  // statements run: whatever a pass reads it at, the hours add up to the time between the first
  // pass and the last one's reading.
  let hour = 0;
  const ticking = () => new Date(start + hour++ * 3_600_000);
  for (let pass = 0; pass < 4; pass++) await withTransaction(server.pool, (tx) => accrueUsage(tx, [vm], ticking));
  const { rows } = await server.pool.query<{ metered_until: Date }>('SELECT metered_until FROM metering_marks WHERE org_id = $1', [
    org.orgId,
  ]);
  const markedHours = (rows[0]!.metered_until.getTime() - start) / 3_600_000;
  // The first pass read hour 0 (it saw the instance, and meters from there).
  expect(markedHours).toBeGreaterThanOrEqual(3);
  expect(await usageThisMonth(org.orgId)).toEqual([['vcpu_hour', markedHours]]);
});

test('a pass that began before an instance started does not drop the hours another process meters for it', async () => {
  const org = await server.createOrg('Two processes');
  const vm: MeteredResource = { orgId: org.orgId, resourceType: 'vm', resourceId: 'started-meanwhile', ratesPerHour: { vcpu_hour: 2 } };
  const start = startOfThisMonth();
  const passOf = (sources: UsageSource[], hours: number) =>
    createBillingRun({
      pool: server.pool,
      orgClock: createOrganizationClock({ now: () => new Date(start.getTime() + hours * 3_600_000) }, false),
      provider: {} as BillingProviderDriver, // metering never calls the provider
      prices: loadPriceList(),
      invoicing: loadConfig({}).invoicing,
      sources: () => sources,
      links: () => Promise.reject(new Error('metering closes no month')),
      log: createLogger('silent'),
    });

  // Process A reads its billable resources while the instance is still stopped, and is slow to
  // go on; process B, meanwhile, sees the instance running and meters it.
  let aIsReading!: () => void;
  const aRead = new Promise<void>((resolve) => (aIsReading = resolve));
  // B's pass, once it is started.
  const passB: { done?: Promise<void> } = {};
  const slowReader: UsageSource = {
    async meteredResources() {
      aIsReading();
      await Promise.race([aRead.then(() => passB.done), new Promise((resolve) => setTimeout(resolve, 300))]);
      return [];
    },
  };
  const passA = passOf([slowReader], 0).meter();
  await aRead;
  passB.done = passOf([{ meteredResources: async () => [vm] }], 0).meter();
  await Promise.all([passA, passB.done]);

  // An hour later: the instance has run for that hour since B first saw it.
  await passOf([{ meteredResources: async () => [vm] }], 1).meter();
  expect(await usageThisMonth(org.orgId)).toEqual([['vcpu_hour', 2]]);
});

test('many resources, two processes passing at once, stops, starts and a month end: every hour counted once, in its month', async () => {
  const orgs = [await server.createOrg('Metered at scale'), await server.createOrg('Metered beside it')];
  // Resources with their own rates and sizes; each is billable over some stretches of passes.
  const resources = Array.from({ length: 120 }, (_, index): MeteredResource => {
    const org = orgs[index % 2]!;
    const vcpus = 1 + (index % 4);
    return index % 5 === 4
      ? { orgId: org.orgId, resourceType: 'public_ip', resourceId: `ip-${index}`, ratesPerHour: { public_ip_hour: 1 } }
      : {
          orgId: org.orgId,
          resourceType: 'vm',
          resourceId: `vm-${index}`,
          ratesPerHour: { vcpu_hour: vcpus, memory_gb_hour: 2 * vcpus },
          size: `${vcpus} vCPU`,
        };
  });
  // Passes from three hours before a month's end to past it, at uneven intervals.
  const monthEnd = Date.UTC(2025, 1, 1);
  const times = [-3, -2.5, -2, -1.25, -1, -0.5, -0.1, 0.2, 0.75, 1, 2].map((hours) => monthEnd + hours * 3_600_000);
  const billableAt = (resource: number, pass: number) => (resource * 7 + pass * 3) % 11 !== 0 && !(resource % 9 === 0 && pass > 5);
  const seenAt = (pass: number) => resources.filter((_, index) => billableAt(index, pass));
  const passAt = (pass: number) =>
    createBillingRun({
      pool: server.pool,
      orgClock: createOrganizationClock({ now: () => new Date(times[pass]!) }, false),
      provider: {} as BillingProviderDriver,
      prices: loadPriceList(),
      invoicing: loadConfig({}).invoicing,
      sources: () => [{ meteredResources: async () => seenAt(pass) }],
      links: () => Promise.reject(new Error('metering closes no month')),
      log: createLogger('silent'),
    }).meter();
  for (let pass = 0; pass < times.length; pass++) await Promise.all([passAt(pass), passAt(pass)]);

  // The rule, stated directly: a resource seen by two passes in a row accrues the time between them.
  const expected = new Map<string, number>();
  const add = (key: string, quantity: number) => expected.set(key, (expected.get(key) ?? 0) + quantity);
  for (let pass = 1; pass < times.length; pass++) {
    for (const [index, resource] of resources.entries()) {
      if (!billableAt(index, pass - 1) || !billableAt(index, pass)) continue;
      for (const [from, to, month] of [
        [times[pass - 1]!, Math.min(times[pass]!, monthEnd), '2025-01'],
        [Math.max(times[pass - 1]!, monthEnd), times[pass]!, '2025-02'],
      ] as const) {
        const hours = Math.max(0, to - from) / 3_600_000;
        if (hours === 0) continue;
        for (const [meter, rate] of Object.entries(resource.ratesPerHour)) add(`${resource.orgId} ${month} ${meter}`, rate * hours);
      }
    }
  }
  const { rows } = await server.pool.query<{ org_id: string; month: string; meter: string; quantity: string }>(
    `SELECT org_id, to_char(month, 'YYYY-MM') AS month, meter, quantity::text FROM usage_totals WHERE org_id = ANY($1)`,
    [orgs.map((org) => org.orgId)],
  );
  const counted = new Map(rows.map((row) => [`${row.org_id} ${row.month} ${row.meter}`, Number(row.quantity)]));
  expect([...counted.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [key, quantity] of expected) expect(counted.get(key), key).toBeCloseTo(quantity, 4);
});
