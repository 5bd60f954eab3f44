/** The external billing provider that issues invoices (Stripe-like). */
export interface InvoiceLine {
  meter: string;
  quantity: string;
  amountCents: number;
}

export interface IssuedInvoice {
  id: string;
  status: 'draft' | 'open' | 'paid' | 'void' | 'uncollectible';
  currency: string;
  totalCents: number;
  amountDueCents: number;
  hostedInvoiceUrl: string | null;
  invoicePdf: string | null;
}

export interface BillingProviderDriver {
  /** Issues the invoice of one organization for one month. Safe to repeat: the same month gives the same invoice. */
  /** `demo`: the usage was invented for a demo organization; the invoice must say so (its id and pages). */
  issueInvoice(request: {
    orgId: string;
    periodStart: Date;
    periodEnd: Date;
    lines: InvoiceLine[];
    settled: boolean;
    demo: boolean;
  }): Promise<IssuedInvoice>;
}
