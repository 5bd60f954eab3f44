import { notFound } from '../../core/errors.ts';
import { performWrite } from '../../core/write.ts';
import type { Area, AreaDependencies, BackgroundTask, UsageSource } from '../area.ts';
import { billingOf, setSpendBudget, type BillingCache } from './account.ts';
import { createBillingRun, type BillingRun } from './billing-run.ts';
import type { InvoiceLinks } from './invoice-links.ts';
import { findInvoice, invoicesPage, toInvoiceOut } from './invoices.ts';
import type { PriceList } from './prices.ts';

export { createBillingCache, createBudgetGuard } from './account.ts';

/**
 * Billing: the account and its spend budget, the price list (configuration), month-to-date usage
 * from metering, and invoices the platform's billing run issues (lines per meter, pages and PDFs
 * behind signed links). Metering and the billing run read each organization's clock.
 */
export function billingArea(
  deps: AreaDependencies,
  options: { usageSources: UsageSource[]; prices: PriceList; links: () => Promise<InvoiceLinks>; cache?: BillingCache },
): Area<'getBilling' | 'setBillingBudget' | 'listInvoices' | 'getInvoice'> & { billingRun: BillingRun } {
  const { pool, orgClock, drivers, config, log } = deps;
  const { prices, links, cache } = options;
  const billingRun = createBillingRun({ pool, orgClock, provider: drivers.billing, prices, sources: options.usageSources, log });

  const metering: BackgroundTask = {
    name: 'metering',
    intervalMs: config.intervals.meteringMs,
    run: () => billingRun.run(),
  };

  return {
    billingRun,
    executors: {},
    background: [metering],
    handlers: {
      async getBilling(_request, context) {
        const orgId = context.principal.orgId;
        return { status: 200, body: await billingOf(pool, prices, orgId, await orgClock.now(pool, orgId), cache) };
      },

      async setBillingBudget(request, context) {
        const orgId = context.principal.orgId;
        const budget = request.body.spend_budget_cents;
        return performWrite(pool, context, async (tx) => {
          const { before } = await setSpendBudget(tx, orgId, budget);
          return {
            response: { status: 200 as const, body: await billingOf(tx, prices, orgId, await orgClock.now(tx, orgId)) },
            audit: { resourceId: orgId, before: { spend_budget_cents: before }, after: { spend_budget_cents: budget } },
            // Answered once no process serves the budget it had before.
            afterCommit: async () => cache?.changed(),
          };
        });
      },

      async listInvoices(request, context) {
        return { status: 200, body: await invoicesPage(pool, context.principal.orgId, request.query, await links()) };
      },

      async getInvoice(request, context) {
        const invoice = await findInvoice(pool, context.principal.orgId, request.path.invoice_id);
        if (!invoice) throw notFound(`No invoice ${request.path.invoice_id} in this organization.`);
        return { status: 200, body: toInvoiceOut(invoice, await links()) };
      },
    },
  };
}
