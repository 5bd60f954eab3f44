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

/** What one organization's resources seen by the last pass and this one use per hour together. */
interface OrganizationRates {
  /** Meter → summed rate per hour. */
  meters: Map<string, number>;
  /** Size → instances of that size. */
  sizes: Map<string, number>;
}

/**
 * Accrues usage up to each organization's now (`now`, or its own clock): a resource accrues its
 * hourly rates times the hours since the last pass, split at month ends so that every hour lands
 * in the month it belongs to; a resource seen for the first time starts accruing from now, and one
 * no longer billable (a stopped instance, a released address) stops, so that when it is billable
 * again it accrues from then.
 *
 * The cost is what changed, not what exists: every resource of an organization was metered to the
 * same instant (its `metering_marks` row), so a pass sums the organization's rates and adds them
 * once per meter and month. `metering_cursors` holds which resources the last pass saw, and only
 * resources that appeared or went are written there. A pass is a handful of statements however
 * many resources there are. Runs in one transaction under the metering lock (billing-run.ts); a
 * mark never moves back, so no stretch is counted twice.
 */
export async function accrueUsage(tx: PoolClient, resources: MeteredResource[], now: Date | ((orgId: string) => Date)): Promise<void> {
  const nowOf = typeof now === 'function' ? now : () => now;
  const current = new Map(resources.map((resource) => [`${resource.orgId}/${resource.resourceType}/${resource.resourceId}`, resource]));
  const seen = [...current.values()];
  // Which resources the last pass saw: those gone are forgotten, the new ones remembered (and
  // returned: they accrue nothing yet).
  const { rows: added } = await tx.query<{ org_id: string; resource_type: string; resource_id: string }>(
    `WITH current AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[]) AS c (org_id, resource_type, resource_id)),
     gone AS (
       DELETE FROM metering_cursors m
       WHERE NOT EXISTS (SELECT 1 FROM current c WHERE (c.org_id, c.resource_type, c.resource_id) = (m.org_id, m.resource_type, m.resource_id)))
     INSERT INTO metering_cursors (org_id, resource_type, resource_id) SELECT org_id, resource_type, resource_id FROM current
     ON CONFLICT DO NOTHING
     RETURNING org_id, resource_type, resource_id`,
    [seen.map((resource) => resource.orgId), seen.map((resource) => resource.resourceType), seen.map((resource) => resource.resourceId)],
  );
  for (const row of added) current.delete(`${row.org_id}/${row.resource_type}/${row.resource_id}`);

  // The rates of the resources the last pass saw too, summed per organization.
  const rates = new Map<string, OrganizationRates>();
  for (const resource of current.values()) {
    let organization = rates.get(resource.orgId);
    if (!organization) rates.set(resource.orgId, (organization = { meters: new Map(), sizes: new Map() }));
    for (const [meter, rate] of Object.entries(resource.ratesPerHour))
      organization.meters.set(meter, (organization.meters.get(meter) ?? 0) + rate);
    if (resource.size !== undefined) organization.sizes.set(resource.size, (organization.sizes.get(resource.size) ?? 0) + 1);
  }
  const organizations = [...new Set(seen.map((resource) => resource.orgId))];
  if (organizations.length === 0) return;
  // Each organization's now, read once: usage accrues up to it and the mark records it. Read
  // again for the mark, the time the statements in between took (hundreds of milliseconds on a
  // busy machine) moved the mark past what was accrued, and went unbilled at every pass.
  const untilOf = new Map(organizations.map((orgId) => [orgId, nowOf(orgId)]));
  const { rows: marks } = await tx.query<{ org_id: string; metered_until: Date }>(
    'SELECT org_id, metered_until FROM metering_marks WHERE org_id = ANY($1::uuid[])',
    [organizations],
  );
  const markOf = new Map(marks.map((mark) => [mark.org_id, mark.metered_until.getTime()]));

  const usage: Array<[orgId: string, month: string, meter: string, quantity: string]> = [];
  const bySize: Array<[orgId: string, month: string, size: string, hours: string]> = [];
  for (const [orgId, organization] of rates) {
    const from = markOf.get(orgId);
    const until = untilOf.get(orgId)!.getTime();
    if (from === undefined || until <= from) continue;
    for (const { month, hours } of hoursByMonth(from, until)) {
      for (const [meter, rate] of organization.meters) {
        // storage_gb_month is GB held for a month: an hour of it is 1/730 of a GB-month.
        const quantity = meter === 'storage_gb_month' ? (rate * hours) / 730 : rate * hours;
        if (quantity > 0) usage.push([orgId, month, meter, quantity.toFixed(6)]);
      }
      for (const [size, count] of organization.sizes) if (hours > 0) bySize.push([orgId, month, size, (count * hours).toFixed(6)]);
    }
  }
  if (usage.length > 0) {
    await tx.query(
      `INSERT INTO usage_totals (org_id, month, meter, quantity)
       SELECT u.org_id, u.month, u.meter, u.quantity FROM unnest($1::uuid[], $2::date[], $3::text[], $4::numeric[]) AS u (org_id, month, meter, quantity)
       WHERE NOT EXISTS (SELECT 1 FROM invoices i WHERE i.org_id = u.org_id AND i.period_start = u.month::timestamptz)
       ON CONFLICT (org_id, month, meter) DO UPDATE SET quantity = usage_totals.quantity + EXCLUDED.quantity`,
      columnsOf(usage, 4),
    );
  }
  if (bySize.length > 0) {
    await tx.query(
      `INSERT INTO usage_by_size (org_id, month, size, hours)
       SELECT * FROM unnest($1::uuid[], $2::date[], $3::text[], $4::numeric[])
       ON CONFLICT (org_id, month, size) DO UPDATE SET hours = usage_by_size.hours + EXCLUDED.hours`,
      columnsOf(bySize, 4),
    );
  }
  // Every organization with a resource now is metered to its now (one that has only new ones
  // starts here); a mark never moves back.
  await tx.query(
    `INSERT INTO metering_marks (org_id, metered_until) SELECT * FROM unnest($1::uuid[], $2::timestamptz[])
     ON CONFLICT (org_id) DO UPDATE SET metered_until = GREATEST(metering_marks.metered_until, EXCLUDED.metered_until)`,
    [organizations, organizations.map((orgId) => untilOf.get(orgId)!)],
  );
}

/** Rows as the columns `unnest` takes, one array per column. */
function columnsOf(rows: ReadonlyArray<readonly string[]>, width: number): string[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column]!));
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
