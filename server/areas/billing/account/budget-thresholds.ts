import { recordEvents, type NewEvent } from '../../../core/events.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { costInCents, monthOf } from '../metering/usage-ledger.ts';
import type { PriceList } from '../prices/price-list.ts';

/** The shares of the spend budget announced when month-to-date spend reaches them. */
const THRESHOLDS = [50, 80, 100] as const;

/**
 * Announces the spend budget thresholds (50%, 80%, 100%) that month-to-date spend has reached,
 * each once per organization, month and budget: in the metering transaction that accrued the
 * usage which reached them. A budget set below what was already spent is announced at the next
 * pass. Only organizations with a budget are read.
 */
export async function announceBudgetThresholds(tx: PoolClient, prices: PriceList, nowOf: (orgId: string) => Date): Promise<void> {
  const { rows: accounts } = await tx.query<{ org_id: string; spend_budget_cents: number | bigint }>(
    'SELECT org_id, spend_budget_cents FROM billing_accounts WHERE spend_budget_cents IS NOT NULL',
  );
  const events: NewEvent[] = [];
  for (const account of accounts) {
    const month = monthOf(nowOf(account.org_id));
    const { rows: usage } = await tx.query<{ meter: string; quantity: string }>(
      'SELECT meter, quantity::text AS quantity FROM usage_totals WHERE org_id = $1 AND month = $2',
      [account.org_id, month],
    );
    const spent = costInCents(prices, new Map(usage.map((row) => [row.meter, row.quantity])));
    const budget = BigInt(account.spend_budget_cents);
    const reached = THRESHOLDS.filter((percent) => BigInt(spent) * 100n >= budget * BigInt(percent));
    if (reached.length === 0) continue;
    // Recorded once: a threshold already announced for this month and budget inserts nothing.
    const { rows: fresh } = await tx.query<{ threshold_percent: number }>(
      `INSERT INTO budget_threshold_notices (org_id, month, budget_cents, threshold_percent)
       SELECT $1, $2::date, $3, unnest($4::int[]) ON CONFLICT DO NOTHING RETURNING threshold_percent`,
      [account.org_id, month, String(budget), reached],
    );
    for (const { threshold_percent: percent } of fresh.sort((a, b) => a.threshold_percent - b.threshold_percent)) {
      events.push({
        orgId: account.org_id,
        type: 'billing.budget_threshold_reached',
        resourceId: account.org_id,
        data: {
          threshold_percent: percent as 50 | 80 | 100,
          spend_budget_cents: account.spend_budget_cents,
          estimated_cents: spent,
          month: month.slice(0, 7),
        },
      });
    }
  }
  await recordEvents(tx, events);
}
