import type { BillingProviderDriver } from '../billing-provider.ts';
import type { FaultInjector } from './faults.ts';
import { simulatedLatency } from './latency.ts';

/**
 * A simulated billing provider: every organization has a working card on file, so an invoice is
 * paid when collected (a demo invoice too, with nothing charged). Faults by SIM_FAULTS
 * (`billing.collectInvoice@<invoice id glob>`) leave the invoice issued but not yet collected,
 * and the billing run tries again.
 */
export function createBillingProviderSimulator(options: { latencyMs: [number, number]; faults: FaultInjector }): BillingProviderDriver {
  return {
    async collectInvoice({ invoiceId }) {
      await simulatedLatency(options.latencyMs);
      await options.faults.check('billing', 'billing provider', 'collectInvoice', invoiceId);
      return { status: 'paid', amountDueCents: 0 };
    },
  };
}
