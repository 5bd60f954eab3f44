import type { BillingProviderDriver, IssuedInvoice } from '../billing-provider.ts';
import type { FaultInjector } from './faults.ts';
import { simulatedLatency } from './latency.ts';

/**
 * A simulated billing provider. Invoice ids are derived from the organization and month, so
 * issuing the same month again gives the same invoice; a settled month is `paid`, the current
 * one `open`.
 */
export function createBillingProviderSimulator(options: { latencyMs: [number, number]; faults: FaultInjector }): BillingProviderDriver {
  return {
    async issueInvoice({ orgId, periodStart, lines, settled, demo }): Promise<IssuedInvoice> {
      const month = `${periodStart.getUTCFullYear()}_${String(periodStart.getUTCMonth() + 1).padStart(2, '0')}`;
      const id = `in_${demo ? 'demo_' : ''}${month}_${orgId.slice(0, 8)}`;
      await simulatedLatency(options.latencyMs);
      await options.faults.check('billing', 'billing provider', 'issueInvoice', id);
      const totalCents = lines.reduce((sum, line) => sum + line.amountCents, 0);
      return {
        id,
        status: settled ? 'paid' : 'open',
        currency: 'eur',
        totalCents,
        amountDueCents: settled ? 0 : totalCents,
        hostedInvoiceUrl: `https://billing.cloudplatform.dev/invoices/${id}`,
        invoicePdf: `https://billing.cloudplatform.dev/invoices/${id}.pdf`,
      };
    },
  };
}
