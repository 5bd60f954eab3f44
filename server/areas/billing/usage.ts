import type { PoolClient, Queryable } from '../../db/pool.ts';
import type { MeteredResource } from '../area.ts';
import { priceInCents } from './prices.ts';

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

export function costInCents(usage: Map<string, string>): number {
  let cents = 0;
  for (const [meter, quantity] of usage) cents += priceInCents(meter, Number(quantity));
  return cents;
}

/**
 * Accrues usage up to `now`: each metered resource adds its hourly rates times the hours since it
 * was last metered (a resource seen for the first time starts accruing from now). A resource no
 * longer billable (a stopped instance, a released address) loses its cursor, so that when it is
 * billable again it accrues from then, not from when it stopped. Runs in one transaction;
 * concurrent metering processes serialize on the cursors.
 */
export async function accrueUsage(tx: PoolClient, resources: MeteredResource[], now: Date): Promise<void> {
  const month = monthOf(now);
  await tx.query(`DELETE FROM metering_cursors WHERE NOT (resource_type || '/' || resource_id = ANY($1::text[]))`, [
    resources.map((resource) => `${resource.resourceType}/${resource.resourceId}`),
  ]);
  for (const resource of resources) {
    const { rows } = await tx.query<{ metered_until: Date }>(
      `INSERT INTO metering_cursors (org_id, resource_type, resource_id, metered_until) VALUES ($1, $2, $3, $4)
       ON CONFLICT (org_id, resource_type, resource_id) DO UPDATE SET metered_until = metering_cursors.metered_until
       RETURNING metered_until`,
      [resource.orgId, resource.resourceType, resource.resourceId, now],
    );
    // Usage before the start of this month belongs to the last one, which is already invoiced.
    const from = Math.max(rows[0]!.metered_until.getTime(), Date.parse(`${month}T00:00:00Z`));
    const hours = Math.max(0, now.getTime() - from) / 3_600_000;
    await tx.query('UPDATE metering_cursors SET metered_until = $4 WHERE org_id = $1 AND resource_type = $2 AND resource_id = $3', [
      resource.orgId,
      resource.resourceType,
      resource.resourceId,
      now,
    ]);
    if (hours === 0) continue;
    for (const [meter, rate] of Object.entries(resource.ratesPerHour)) {
      // storage_gb_month is GB held for a month: an hour of it is 1/730 of a GB-month.
      const quantity = meter === 'storage_gb_month' ? (rate * hours) / 730 : rate * hours;
      await tx.query(
        `INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, $3, $4)
         ON CONFLICT (org_id, month, meter) DO UPDATE SET quantity = usage_totals.quantity + EXCLUDED.quantity`,
        [resource.orgId, month, meter, quantity.toFixed(6)],
      );
    }
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
  }
}
