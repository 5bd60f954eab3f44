import type { components } from '../../../../generated/openapi.ts';
import { iso } from '../../../core/clock.ts';
import { notFound, spendBudgetExceeded } from '../../../core/errors.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import { AnnouncedCache } from '../../../db/announced-cache.ts';
import type { DatabaseListener } from '../../../db/listener.ts';
import type { Queryable } from '../../../db/pool.ts';
import { prepared, runPrepared } from '../../../db/statements.ts';
import type { BudgetGuard } from '../../area.ts';
import type { PriceList } from '../prices/price-list.ts';
import { costInCents, monthOf, startOfMonth, usageOfMonth } from '../metering/usage-ledger.ts';

type BillingOut = components['schemas']['BillingOut'];

interface AccountRow {
  state: BillingOut['state'];
  billing_exempt: boolean;
  spend_budget_cents: number | bigint | null;
}

/** Month-to-date usage and its estimated cost, in the month of the organization's `now`. */
async function monthToDate(db: Queryable, prices: PriceList, orgId: string, now: Date): Promise<BillingOut['month_to_date']> {
  return monthToDateOf(prices, await usageOfMonth(db, orgId, monthOf(now)));
}

function monthToDateOf(prices: PriceList, usage: Map<string, string>): BillingOut['month_to_date'] {
  const decimal = (meter: string) => Number(usage.get(meter) ?? 0).toFixed(6);
  return { egress_gb: decimal('egress_gb'), estimated_cents: costInCents(prices, usage), storage_gb_month: decimal('storage_gb_month') };
}

// The account and its month's usage in one round trip: GET /billing is read on every dashboard load.
const BILLING_OF = prepared(
  'billing_of',
  `SELECT a.state, a.billing_exempt, a.spend_budget_cents,
          COALESCE((SELECT json_agg(json_build_array(u.meter, u.quantity::text))
                      FROM usage_totals u WHERE u.org_id = a.org_id AND u.month = $2), '[]') AS usage
     FROM billing_accounts a WHERE a.org_id = $1`,
);
const SPEND_BUDGET = prepared('billing_spend_budget', 'SELECT spend_budget_cents FROM billing_accounts WHERE org_id = $1');

/** What an organization's billing answer holds for a month, apart from the price list and the month's end. */
type BillingFigures = Pick<BillingOut, 'state' | 'billing_exempt' | 'month_to_date' | 'spend_budget_cents'>;

/**
 * Each organization's billing figures of a month, as read last: GET /billing is read on every
 * dashboard load, and its figures change only when metering runs or the account changes. Every
 * such change is announced by the database (migration 0940_billing_changes.sql), whoever makes it.
 */
export type BillingCache = AnnouncedCache<BillingFigures>;

/** Where the cache keeps an organization's figures of a month. */
const figuresKey = (orgId: string, month: string) => `${orgId}/${month}`;

export function createBillingCache(listener: DatabaseListener): BillingCache {
  return new AnnouncedCache<BillingFigures>(listener, 'billing_changed');
}

/** The billing answer in the month of `now`; from `cache` when it holds the figures. */
export async function billingOf(db: Queryable, prices: PriceList, orgId: string, now: Date, cache?: BillingCache): Promise<BillingOut> {
  const month = monthOf(now);
  const figures = cache?.lookup(figuresKey(orgId, month)) ?? (await readFigures(db, prices, orgId, month, cache));
  const shown = priceListShown(prices);
  return {
    state: figures.state,
    billing_exempt: figures.billing_exempt,
    // Shared with every answer of the same figures, and frozen: an answer is only ever serialized.
    month_to_date: figures.month_to_date,
    prices: shown.prices,
    plan: shown.plan,
    current_period_end: iso(startOfMonth(now, 1)),
    spend_budget_cents: figures.spend_budget_cents,
  };
}

/** The price list as an answer shows it: built once per list, frozen, and shared by every answer. */
const shownPriceLists = new WeakMap<PriceList, Pick<BillingOut, 'prices' | 'plan'>>();

function priceListShown(prices: PriceList): Pick<BillingOut, 'prices' | 'plan'> {
  let shown = shownPriceLists.get(prices);
  if (!shown) {
    shown = {
      prices: Object.freeze(
        prices.prices.map(({ meter, unit, unit_amount_micro_eur }) => Object.freeze({ meter, unit, unit_amount_micro_eur })),
      ) as BillingOut['prices'],
      plan: Object.freeze({ ...prices.plan }),
    };
    shownPriceLists.set(prices, shown);
  }
  return shown;
}

async function readFigures(db: Queryable, prices: PriceList, orgId: string, month: string, cache?: BillingCache): Promise<BillingFigures> {
  const ticket = cache?.ticket() ?? 0;
  const { rows } = await runPrepared<AccountRow & { usage: Array<[meter: string, quantity: string]> }>(db, BILLING_OF, [orgId, month]);
  const account = rows[0];
  if (!account) throw notFound();
  const figures: BillingFigures = {
    state: account.state,
    billing_exempt: account.billing_exempt,
    month_to_date: Object.freeze(monthToDateOf(prices, new Map(account.usage))),
    spend_budget_cents: account.spend_budget_cents,
  };
  cache?.store(ticket, figuresKey(orgId, month), figures);
  return figures;
}

export function createBudgetGuard(orgClock: OrganizationClock, prices: PriceList): BudgetGuard {
  return {
    async assertCanCreateBillable(db, orgId) {
      const { rows } = await runPrepared<{ spend_budget_cents: number | bigint | null }>(db, SPEND_BUDGET, [orgId]);
      const budget = rows[0]?.spend_budget_cents;
      if (budget === null || budget === undefined) return;
      const { estimated_cents } = await monthToDate(db, prices, orgId, await orgClock.now(db, orgId));
      if (BigInt(estimated_cents) >= BigInt(budget)) throw spendBudgetExceeded();
    },
  };
}

/** The spend budget as it was, locked for a change; then set (null: no budget). */
export async function setSpendBudget(
  db: Queryable,
  orgId: string,
  budget: number | bigint | null,
): Promise<{ before: number | bigint | null }> {
  const { rows } = await db.query<{ spend_budget_cents: number | bigint | null }>(
    'SELECT spend_budget_cents FROM billing_accounts WHERE org_id = $1 FOR UPDATE',
    [orgId],
  );
  if (!rows[0]) throw notFound();
  await db.query('UPDATE billing_accounts SET spend_budget_cents = $2, updated_at = now() WHERE org_id = $1', [
    orgId,
    budget === null ? null : String(budget),
  ]);
  return { before: rows[0].spend_budget_cents };
}
