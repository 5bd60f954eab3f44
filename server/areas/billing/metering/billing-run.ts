import type { InvoicingConfig } from '../../../config.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import { withTransaction, type Pool } from '../../../db/pool.ts';
import type { BillingProviderDriver } from '../../../drivers/billing-provider.ts';
import type { Logger } from '../../../logging.ts';
import type { MeteredResource, UsageSource } from '../../area.ts';
import { announceBudgetThresholds } from '../account/budget-thresholds.ts';
import { organizationsToBill, runBilling } from '../invoices/invoice-issuing.ts';
import type { InvoiceLinks } from '../invoices/invoice-links.ts';
import type { PriceList } from '../prices/price-list.ts';
import { accrueCounters, accrueUsage } from './usage-ledger.ts';

/** Advisory lock of a metering pass (one key; the billing run's are two-key, another space). */
const METERING_LOCK = 7_361_204_120;

/**
 * Metering and the billing run, each at every organization's own time (the platform's clock, or
 * a test clock moved forward). Metering accrues what every area's billable resources and backend
 * counters used; the billing run then closes each finished month into an invoice and has the
 * provider collect it. Both are safe to run from several processes at once.
 */
export function createBillingRun(deps: {
  pool: Pool;
  orgClock: OrganizationClock;
  provider: BillingProviderDriver;
  prices: PriceList;
  /** The seller and tax fixed into each invoice issued. */
  invoicing: InvoicingConfig;
  /** Every area's usage sources, read at each pass (the platform binds them once every area is built). */
  sources: () => readonly UsageSource[];
  /** The signed links of invoices, as the invoice.finalized event shows them. */
  links: () => Promise<InvoiceLinks>;
  log: Logger;
}) {
  const { pool, orgClock, provider, prices, invoicing, sources, links, log } = deps;

  /**
   * Accrues usage up to now; counters are read for `orgIds` only, when given. `offsets`: the
   * test clocks as `run` read them (else read here).
   */
  async function meter(orgIds?: string[], offsets?: Map<string, number>): Promise<void> {
    // Backend counters first, outside the transaction (a backend call never runs inside one).
    const counters = (await Promise.all(sources().map((source) => source.meteredCounters?.(pool, orgIds) ?? Promise.resolve([])))).flat();
    await withTransaction(pool, async (tx) => {
      // One pass at a time, and the billable resources read under its lock: a list read before
      // another process's pass committed would not hold an instance started meanwhile, and this
      // pass would then drop the cursor the other one had just set, losing the hours in between.
      await tx.query('SELECT pg_advisory_xact_lock($1)', [METERING_LOCK]);
      // One after the other: a transaction's statements go over its one connection anyway.
      const lists: MeteredResource[][] = [];
      for (const source of sources()) lists.push(await source.meteredResources(tx));
      const resources = lists.flat();
      const clocks = offsets ?? (await orgClock.offsets(tx));
      const nowOf = (orgId: string) => orgClock.nowWith(clocks, orgId);
      await accrueUsage(tx, resources, nowOf);
      await accrueCounters(tx, counters, nowOf);
      // The thresholds this accrual crossed are announced with it.
      await announceBudgetThresholds(tx, prices, nowOf);
    });
  }

  /** Closes the finished months of these organizations (or of every one that has one). */
  async function close(orgIds?: string[], offsets?: Map<string, number>): Promise<void> {
    const clocks = offsets ?? (await orgClock.offsets(pool));
    const nowOf = (orgId: string) => orgClock.nowWith(clocks, orgId);
    for (const orgId of orgIds ?? (await organizationsToBill(pool, nowOf))) {
      try {
        await runBilling(pool, provider, prices, invoicing, orgId, nowOf(orgId), links);
      } catch (error) {
        log.warn({ err: error, org_id: orgId }, 'the billing run failed for an organization; tried again at the next run');
      }
    }
  }

  return {
    meter,
    close,
    /**
     * One pass: meter, then close what has finished, both at the time the pass read once. Read
     * again for the close, a test clock moved meanwhile (by another process) would close a month
     * this pass never metered to its end, and what was used until then would be lost with it.
     */
    async run(orgIds?: string[]): Promise<void> {
      const offsets = await orgClock.offsets(pool);
      await meter(orgIds, offsets);
      await close(orgIds, offsets);
    },
  };
}

export type BillingRun = ReturnType<typeof createBillingRun>;
