/**
 * The external billing provider (Stripe-like) that takes payment for the invoices the platform
 * issues. The platform meters, prices and issues the invoice itself (its lines, its HTML page and
 * PDF); the provider is told the total and collects it.
 */
export interface CollectedInvoice {
  /** `paid`; `open` while payment is due (a declined card); `void` (cancelled); `uncollectible` (written off). */
  status: 'open' | 'paid' | 'void' | 'uncollectible';
  /** What remains to be paid after the collection attempt: 0 when paid, and for a void invoice, which nobody owes. */
  amountDueCents: number;
  /** What the provider has collected of the total. Paid and due never add up to more than the total. */
  amountPaidCents: number;
}

export interface BillingProviderDriver {
  /**
   * Finalizes an issued invoice and charges the organization's payment method on file. Safe to
   * repeat: the same invoice id is collected once. `demo`: the invoice bills invented usage (a demo
   * organization); nothing real is charged.
   */
  collectInvoice(request: {
    invoiceId: string;
    orgId: string;
    currency: string;
    totalCents: number;
    demo: boolean;
  }): Promise<CollectedInvoice>;
}
