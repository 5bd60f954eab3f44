import { notFound } from '../../core/errors.ts';
import { performWrite } from '../../core/write.ts';
import { withTransaction } from '../../db/pool.ts';
import type { Area, AreaDependencies, BackgroundTask, UsageSource } from '../area.ts';
import { billingOf, setSpendBudget } from './account.ts';
import { findInvoice, invoicesPage, issueDueInvoices, organizationsWithDueInvoices, toInvoiceOut } from './invoices.ts';
import { accrueUsage } from './usage.ts';

export { createBudgetGuard } from './account.ts';

/**
 * Billing: the account and its spend budget, the price list, month-to-date usage, and invoices.
 * Metering accrues the usage of every area's billable resources; finished months are invoiced
 * through the billing provider.
 */
export function billingArea(
  deps: AreaDependencies,
  usageSources: UsageSource[],
): Area<'getBilling' | 'setBillingBudget' | 'listInvoices' | 'getInvoice'> {
  const { pool, clock, drivers, config, log } = deps;

  const issueQuietly = (orgId: string) =>
    issueDueInvoices(pool, drivers.billing, orgId, clock.now()).catch((error: unknown) =>
      log.warn({ err: error, org_id: orgId }, 'issuing invoices failed; retried later'),
    );

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
          const { before } = await setSpendBudget(tx, orgId, budget);
          return {
            response: { status: 200 as const, body: await billingOf(tx, orgId, clock.now()) },
            audit: { resourceId: orgId, before: { spend_budget_cents: before }, after: { spend_budget_cents: budget } },
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
