import { defineArea, type AreaDependencies } from '../area.ts';
import { accountHandlers } from './account/account-handlers.ts';
import { createBillingCache, createBudgetGuard } from './account/billing-account.ts';
import { invoiceDocuments } from './invoices/invoice-documents.ts';
import { invoiceHandlers } from './invoices/invoice-handlers.ts';
import { invoiceLinkSource } from './invoices/invoice-links.ts';
import { createBillingRun } from './metering/billing-run.ts';
import { seedDemoHistory } from './metering/usage-ledger.ts';
import { loadPriceList } from './prices/price-list.ts';

/**
 * Billing: the account and its spend budget, the price list (configuration), month-to-date usage
 * from metering, and invoices the platform's billing run issues (lines per meter, pages and PDFs
 * behind signed links). Metering and the billing run read each organization's clock.
 */
export function billingArea({ pool, config, orgClock, drivers, listener, publicBaseUrl, log, ports }: AreaDependencies) {
  // A bad price list stops start-up here, with a message naming the file and the entry.
  const prices = loadPriceList(config.priceListFile);
  const links = invoiceLinkSource(pool, { baseUrl: publicBaseUrl, ttlSeconds: config.invoiceLinkTtlSeconds });
  // Emptied on every change of an account or its usage a process announces (LISTEN/NOTIFY).
  const cache = createBillingCache(listener);
  const billingRun = createBillingRun({
    pool,
    orgClock,
    provider: drivers.billing,
    prices,
    invoicing: config.invoicing,
    sources: () => ports.usageSources,
    links,
    log,
  });

  return defineArea({
    handlers: {
      ...accountHandlers({ pool, orgClock, prices, cache }),
      ...invoiceHandlers({ pool, links }),
    },
    auditNames: {
      setBillingBudget: { action: 'billing.set_budget', resourceType: 'billing' },
    },
    executors: {},
    background: [{ name: 'metering', intervalMs: config.intervals.meteringMs, run: () => billingRun.run() }],
    pages: [invoiceDocuments(pool, links)],
    provides: { budget: createBudgetGuard(orgClock, prices), seedDemoHistory, billingRun },
  });
}
