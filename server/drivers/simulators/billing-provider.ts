import type { BillingProviderDriver } from '../billing-provider.ts';
import type { FaultInjector } from './faults.ts';
import { simulatedLatency } from './latency.ts';

/**
 * A simulated billing provider: every organization has a card on file, charged the invoice's
 * total when it is collected, so the invoice is paid in full (a demo invoice too, with nothing
 * charged). SIM_FAULTS rules:
 * - `billing.collectInvoice@<invoice id glob>`: the provider cannot be reached; the invoice stays
 *   issued but not yet collected, and the billing run tries again.
 * - `billing.chargeCard@<invoice id glob>` (either kind): the card is declined; the invoice is
 *   finalized `open`, its whole total due and nothing paid.
 */
export function createBillingProviderSimulator(options: { latencyMs: [number, number]; faults: FaultInjector }): BillingProviderDriver {
  return {
    async collectInvoice({ invoiceId, totalCents }) {
      await simulatedLatency(options.latencyMs);
      await options.faults.check('billing', 'billing provider', 'collectInvoice', invoiceId);
      if (totalCents > 0 && (await options.faults.firing('billing', 'chargeCard', invoiceId))) {
        return { status: 'open', amountDueCents: totalCents, amountPaidCents: 0 };
      }
      return { status: 'paid', amountDueCents: 0, amountPaidCents: totalCents };
    },
  };
}
