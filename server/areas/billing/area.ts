import type { components } from '../../../generated/openapi.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../core/clock.ts';
import { performWrite } from '../../core/write.ts';
import { withTransaction } from '../../db/pool.ts';
import { notFound, spendBudgetExceeded } from '../../core/errors.ts';
import type { Area, AreaDependencies, BackgroundTask, BudgetGuard, UsageSource } from '../area.ts';
import { findInvoice, invoicesPage, issueDueInvoices, organizationsWithDueInvoices, toInvoiceOut } from './invoices.ts';
import { PLAN, PRICES } from './prices.ts';
import { accrueUsage, costInCents, monthOf, startOfMonth, usageOfMonth } from './usage.ts';

type BillingOut = components['schemas']['BillingOut'];

interface AccountRow {
  state: BillingOut['state'];
  billing_exempt: boolean;
  spend_budget_cents: number | bigint | null;
}

/** Month-to-date usage and its estimated cost. */
async function monthToDate(db: Queryable, orgId: string, now: Date): Promise<BillingOut['month_to_date']> {
  const usage = await usageOfMonth(db, orgId, monthOf(now));
  const decimal = (meter: string) => Number(usage.get(meter) ?? 0).toFixed(6);
  return { egress_gb: decimal('egress_gb'), estimated_cents: costInCents(usage), storage_gb_month: decimal('storage_gb_month') };
}

async function billingOf(db: Queryable, orgId: string, now: Date): Promise<BillingOut> {
  const { rows } = await db.query<AccountRow>('SELECT state, billing_exempt, spend_budget_cents FROM billing_accounts WHERE org_id = $1', [orgId]);
  const account = rows[0];
  if (!account) throw notFound();
  return {
    state: account.state,
    billing_exempt: account.billing_exempt,
    month_to_date: await monthToDate(db, orgId, now),
    prices: PRICES.map((price) => ({ ...price })),
    plan: { ...PLAN },
    current_period_end: iso(startOfMonth(now, 1)),
    spend_budget_cents: account.spend_budget_cents,
  };
}

export function createBudgetGuard(clock: { now(): Date }): BudgetGuard {
  return {
    async assertCanCreateBillable(db, orgId) {
      const { rows } = await db.query<{ spend_budget_cents: number | bigint | null }>('SELECT spend_budget_cents FROM billing_accounts WHERE org_id = $1', [orgId]);
      const budget = rows[0]?.spend_budget_cents;
      if (budget === null || budget === undefined) return;
      const { estimated_cents } = await monthToDate(db, orgId, clock.now());
      if (BigInt(estimated_cents) >= BigInt(budget)) throw spendBudgetExceeded();
    },
  };
}

/**
 * Billing: the account and its spend budget, the price list, month-to-date usage, and invoices.
 * Metering accrues the usage of every area's billable resources; finished months are invoiced
 * through the billing provider.
 */
export function billingArea(deps: AreaDependencies, usageSources: UsageSource[]): Area<'getBilling' | 'setBillingBudget' | 'listInvoices' | 'getInvoice'> {
  const { pool, clock, drivers, config, log } = deps;

  const issueQuietly = (orgId: string) =>
    issueDueInvoices(pool, drivers.billing, orgId, clock.now()).catch((error: unknown) => log.warn({ err: error, org_id: orgId }, 'issuing invoices failed; retried later'));

  const metering: BackgroundTask = {
    name: 'metering',
    intervalMs: config.intervals.meteringMs,
    async run() {
      const resources = (await Promise.all(usageSources.map((source) => source.meteredResources(pool)))).flat();
      await withTransaction(pool, (tx) => accrueUsage(tx, resources, clock.now()));
      for (const orgId of await organizationsWithDueInvoices(pool, clock.now())) await issueQuietly(orgId);
    },
  };

  return {
    executors: {},
    background: [metering],
    handlers: {
      async getBilling(_request, context) {
        return { status: 200, body: await billingOf(pool, context.principal.orgId, clock.now()) };
      },

      async setBillingBudget(request, context) {
        const orgId = context.principal.orgId;
        const budget = request.body.spend_budget_cents;
        return performWrite(pool, context, async (tx) => {
          const before = await tx.query<{ spend_budget_cents: number | bigint | null }>(
            'SELECT spend_budget_cents FROM billing_accounts WHERE org_id = $1 FOR UPDATE',
            [orgId],
          );
          await tx.query('UPDATE billing_accounts SET spend_budget_cents = $2, updated_at = now() WHERE org_id = $1', [orgId, budget === null ? null : String(budget)]);
          return {
            response: { status: 200 as const, body: await billingOf(tx, orgId, clock.now()) },
            audit: {
              resourceId: orgId,
              before: { spend_budget_cents: before.rows[0]?.spend_budget_cents ?? null },
              after: { spend_budget_cents: budget },
            },
          };
        });
      },

      async listInvoices(request, context) {
        return { status: 200, body: await invoicesPage(pool, context.principal.orgId, request.query) };
      },

      async getInvoice(request, context) {
        const invoice = await findInvoice(pool, context.principal.orgId, request.path.invoice_id);
        if (!invoice) throw notFound(`No invoice ${request.path.invoice_id} in this organization.`);
        return { status: 200, body: toInvoiceOut(invoice) };
      },
    },
  };
}

