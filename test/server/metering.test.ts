// Metering: the hours a billable resource accrues, and that concurrent metering passes (every
// server process runs one) never lose any. The server runs without its background loops, so
// that its own passes (which meter only its real resources) leave this file's resources alone.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { MeteredResource, UsageSource } from '../../server/areas/area.ts';
import { createBillingRun } from '../../server/areas/billing/metering/billing-run.ts';
import { loadPriceList } from '../../server/areas/billing/prices/price-list.ts';
import { accrueUsage, startOfMonth } from '../../server/areas/billing/metering/usage-ledger.ts';
import { loadConfig } from '../../server/config.ts';
import { createOrganizationClock } from '../../server/core/test-clocks.ts';
import { withTransaction } from '../../server/db/pool.ts';
import type { BillingProviderDriver } from '../../server/drivers/billing-provider.ts';
import { createLogger } from '../../server/logging.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

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
