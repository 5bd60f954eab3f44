import { createBillingRun } from '../areas/billing/billing-run.ts';
import { loadPriceList } from '../areas/billing/prices.ts';
import { computeUsage } from '../areas/compute/usage.ts';
import { egressCounters } from '../areas/storage/egress.ts';
import { storageUsage } from '../areas/storage/usage.ts';
import type { Config } from '../config.ts';
import { recordAudit } from '../core/audit.ts';
import { systemClock } from '../core/clock.ts';
import type { Actor } from '../core/principal.ts';
import { createOrganizationClock, moveTestClock } from '../core/test-clocks.ts';
import { withTransaction, type Pool } from '../db/pool.ts';
import { createDrivers, type DriverSet } from '../drivers/selection.ts';
import type { Logger } from '../logging.ts';

/** The organization's test clock: its offset and the time it reads now. */
export async function showClock(pool: Pool, orgId: string): Promise<Record<string, unknown>> {
  const orgClock = createOrganizationClock(systemClock, true);
  const { rows } = await pool.query<{ offset_ms: string }>('SELECT offset_ms::text FROM test_clocks WHERE org_id = $1', [orgId]);
  return { org_id: orgId, offset_ms: Number(rows[0]?.offset_ms ?? 0), now: (await orgClock.now(pool, orgId)).toISOString() };
}

/**
 * Moves an organization's clock forward, as a Stripe test clock does: what happens in between
 * happens. Usage is metered up to the old time first (so that resources running now are counted
 * over the whole stretch), the clock moves, usage is metered to the new time (split at month
 * ends) and the billing run closes any month that has finished. Scheduled restarts that have come
 * due run at the servers' next scheduler pass; console URLs past their lifetime stop working.
 */
export async function advanceClock(
  pool: Pool,
  config: Config,
  log: Logger,
  request: { orgId: string; byMs: number; actor: Actor },
): Promise<Record<string, unknown>> {
  const orgClock = createOrganizationClock(systemClock, true);
  const drivers = await createDrivers(config.drivers, pool, {
    simulators: config.simulators,
    dataDir: config.dataDir,
    secretStoreKey: config.s3.secretStoreKey,
    incompleteUploadRetentionMs: config.s3.incompleteUploadRetentionSeconds * 1000,
    rgw: config.rgw,
    qemu: config.qemu,
    log,
  });
  try {
    return await advanceWith(pool, drivers, config, log, orgClock, request);
  } finally {
    await drivers.embeddedStore?.close();
  }
}

async function advanceWith(
  pool: Pool,
  drivers: DriverSet,
  config: Config,
  log: Logger,
  orgClock: ReturnType<typeof createOrganizationClock>,
  request: { orgId: string; byMs: number; actor: Actor },
): Promise<Record<string, unknown>> {
  const billingRun = createBillingRun({
    pool,
    orgClock,
    provider: drivers.billing,
    prices: loadPriceList(config.priceListFile),
    sources: [computeUsage, { ...storageUsage, meteredCounters: egressCounters(drivers.objectStore) }],
    log,
  });
  const before = await orgClock.now(pool, request.orgId);
  await billingRun.meter([request.orgId]);
  const offset = await withTransaction(pool, async (tx) => {
    const moved = await moveTestClock(tx, request.orgId, request.byMs);
    await recordAudit(tx, {
      orgId: request.orgId,
      action: 'org.advance_clock',
      resourceType: 'organization',
      resourceId: request.orgId,
      before: { offset_ms: moved - request.byMs },
      after: { offset_ms: moved },
      actor: request.actor,
      result: 'succeeded',
    });
    return moved;
  });
  await billingRun.run([request.orgId]);
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM invoices WHERE org_id = $1 ORDER BY period_start', [request.orgId]);
  return {
    org_id: request.orgId,
    offset_ms: offset,
    before: before.toISOString(),
    now: (await orgClock.now(pool, request.orgId)).toISOString(),
    invoices: rows.map((row) => row.id),
  };
}
