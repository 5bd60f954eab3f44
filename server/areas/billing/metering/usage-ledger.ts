import type { PoolClient, Queryable } from '../../../db/pool.ts';
import type { MeteredCounter, MeteredResource } from '../../area.ts';
import { priceInCents, type PriceList } from '../prices/price-list.ts';

/** The first day (UTC) of the month of `date`, as `YYYY-MM-DD`. */
export function monthOf(date: Date): string {
  return `${date.getUTCFullYear()}-${String(date.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

export function startOfMonth(date: Date, offsetMonths = 0): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + offsetMonths, 1));
}

/** Usage of one organization in one month, by meter (quantities as exact decimal strings). */
export async function usageOfMonth(db: Queryable, orgId: string, month: string): Promise<Map<string, string>> {
  const { rows } = await db.query<{ meter: string; quantity: string }>(
    'SELECT meter, quantity::text AS quantity FROM usage_totals WHERE org_id = $1 AND month = $2',
    [orgId, month],
  );
  return new Map(rows.map((row) => [row.meter, row.quantity]));
}

export function costInCents(prices: PriceList, usage: Map<string, string>): number {
  let cents = 0;
  for (const [meter, quantity] of usage) cents += priceInCents(prices, meter, quantity);
  return cents;
}

/** The stretches of [from, to) that fall in each calendar month (UTC), in hours. */
function hoursByMonth(from: number, to: number): Array<{ month: string; hours: number }> {
  const stretches: Array<{ month: string; hours: number }> = [];
  let start = from;
  while (start < to) {
    const end = Math.min(to, startOfMonth(new Date(start), 1).getTime());
    stretches.push({ month: monthOf(new Date(start)), hours: (end - start) / 3_600_000 });
    start = end;
  }
  return stretches;
}

/**
 * Adds to a month's total, unless that month is already invoiced for the organization (a closed
 * month never changes under its invoice).
 */
async function addUsage(tx: PoolClient, orgId: string, month: string, meter: string, quantity: number): Promise<void> {
  if (!(quantity > 0)) return;
  await tx.query(
    `INSERT INTO usage_totals (org_id, month, meter, quantity)
     SELECT $1, $2::date, $3, $4
     WHERE NOT EXISTS (SELECT 1 FROM invoices WHERE org_id = $1 AND period_start = $2::date::timestamptz)
     ON CONFLICT (org_id, month, meter) DO UPDATE SET quantity = usage_totals.quantity + EXCLUDED.quantity`,
    [orgId, month, meter, quantity.toFixed(6)],
  );
}

/**
 * Accrues usage up to each organization's now (`now`, or its own clock): each metered resource
 * adds its hourly rates times the hours since it was last metered, split at month ends so that
 * every hour lands in the month it belongs to (a resource seen for the first time starts
 * accruing from now). A resource no longer billable (a stopped instance, a released address)
 * loses its cursor, so that when it is billable again it accrues from then. Runs in one
 * transaction; concurrent metering processes serialize on the cursors, and a cursor never moves
 * back, so no stretch is counted twice.
 */
export async function accrueUsage(tx: PoolClient, resources: MeteredResource[], now: Date | ((orgId: string) => Date)): Promise<void> {
  const nowOf = typeof now === 'function' ? now : () => now;
  await tx.query(`DELETE FROM metering_cursors WHERE NOT (resource_type || '/' || resource_id = ANY($1::text[]))`, [
    resources.map((resource) => `${resource.resourceType}/${resource.resourceId}`),
  ]);
  for (const resource of resources) {
    const until = nowOf(resource.orgId);
    const { rows } = await tx.query<{ metered_until: Date }>(
      `INSERT INTO metering_cursors (org_id, resource_type, resource_id, metered_until) VALUES ($1, $2, $3, $4)
       ON CONFLICT (org_id, resource_type, resource_id) DO UPDATE SET metered_until = metering_cursors.metered_until
       RETURNING metered_until`,
      [resource.orgId, resource.resourceType, resource.resourceId, until],
    );
    const from = rows[0]!.metered_until.getTime();
    if (until.getTime() <= from) continue;
    await tx.query(
      `UPDATE metering_cursors SET metered_until = GREATEST(metered_until, $4)
       WHERE org_id = $1 AND resource_type = $2 AND resource_id = $3`,
      [resource.orgId, resource.resourceType, resource.resourceId, until],
    );
    for (const { month, hours } of hoursByMonth(from, until.getTime())) {
      for (const [meter, rate] of Object.entries(resource.ratesPerHour)) {
        // storage_gb_month is GB held for a month: an hour of it is 1/730 of a GB-month.
        await addUsage(tx, resource.orgId, month, meter, meter === 'storage_gb_month' ? (rate * hours) / 730 : rate * hours);
      }
      if (resource.size !== undefined && hours > 0) {
        await tx.query(
          `INSERT INTO usage_by_size (org_id, month, size, hours) VALUES ($1, $2, $3, $4)
           ON CONFLICT (org_id, month, size) DO UPDATE SET hours = usage_by_size.hours + EXCLUDED.hours`,
          [resource.orgId, month, resource.size, hours.toFixed(6)],
        );
      }
    }
  }
}

/**
 * Accrues the increase of cumulative counters (egress bytes) since their last reading, in the
 * month of each organization's now. The first reading of an organization counts everything the
 * counter holds: the platform meters from the organization's first byte. The reading row is
 * locked, so concurrent processes never count one increase twice.
 */
export async function accrueCounters(tx: PoolClient, counters: MeteredCounter[], now: Date | ((orgId: string) => Date)): Promise<void> {
  const nowOf = typeof now === 'function' ? now : () => now;
  for (const counter of counters) {
    const at = nowOf(counter.orgId);
    await tx.query(`INSERT INTO egress_readings (org_id, counter_bytes, read_at) VALUES ($1, 0, $2) ON CONFLICT (org_id) DO NOTHING`, [
      counter.orgId,
      at,
    ]);
    const { rows } = await tx.query<{ counter_bytes: string }>(
      'SELECT counter_bytes::text FROM egress_readings WHERE org_id = $1 FOR UPDATE',
      [counter.orgId],
    );
    const previous = Number(rows[0]!.counter_bytes);
    // A lower reading: the backend's counter started again from zero; all of it is new.
    const increase = counter.value >= previous ? counter.value - previous : counter.value;
    if (increase === 0) continue;
    await addUsage(tx, counter.orgId, monthOf(at), counter.meter, increase / counter.perMeterUnit);
    await tx.query('UPDATE egress_readings SET counter_bytes = $2, read_at = $3 WHERE org_id = $1', [counter.orgId, counter.value, at]);
  }
}

/**
 * An invented usage history for a demo or sandbox organization, only when asked for
 * (`DEMO_HISTORY=true`, `npm run admin -- create-org --demo-history`): three past months of a
 * small instance, an address and some storage, marked `demo` so that their invoices say so.
 */
export async function seedDemoHistory(tx: PoolClient, orgId: string, now: Date): Promise<void> {
  const variation = parseInt(orgId.slice(0, 4), 16) % 200;
  for (let monthsBack = 1; monthsBack <= 3; monthsBack++) {
    const month = monthOf(startOfMonth(now, -monthsBack));
    const hours = 720 - monthsBack * 24 - (variation % 48);
    const usage: Record<string, number> = {
      vcpu_hour: 2 * hours,
      memory_gb_hour: 4 * hours,
      disk_gb_hour: 40 * hours,
      public_ip_hour: hours,
      storage_gb_month: 5 + (variation % 20) / 4,
      egress_gb: 10 + variation / 10,
    };
    for (const [meter, quantity] of Object.entries(usage)) {
      await tx.query('INSERT INTO usage_totals (org_id, month, meter, quantity, demo) VALUES ($1, $2, $3, $4, true)', [
        orgId,
        month,
        meter,
        quantity.toFixed(6),
      ]);
    }
    await tx.query('INSERT INTO usage_by_size (org_id, month, size, hours) VALUES ($1, $2, $3, $4)', [
      orgId,
      month,
      '2 vCPU, 4 GB memory, 40 GB disk',
      hours,
    ]);
  }
}
