import type { InvoicingConfig, TaxRate } from '../../../config.ts';

/** The seller as an invoice keeps it (the `seller` column): the configured details of the day it was issued. */
export interface StoredSeller {
  legal_name: string;
  address_lines: string[];
  tax_id: string | null;
  email: string | null;
}

/** What an invoice fixes when it is issued, beside its lines: stored with it, never read again from the configuration. */
export interface InvoiceTerms {
  /** Null when no seller was configured. */
  seller: StoredSeller | null;
  /** Null when no tax rate was configured: no tax, and the documents say so. */
  tax: TaxRate | null;
  taxCents: number;
  /** The lines' sum plus the tax. */
  totalCents: number;
}

/** The terms of an invoice whose lines sum to `subtotalCents`, under the configuration of now. */
export function invoiceTerms(invoicing: InvoicingConfig, subtotalCents: number): InvoiceTerms {
  const { seller, tax } = invoicing;
  const taxCents = taxOn(subtotalCents, tax);
  return {
    seller: seller.legalName
      ? { legal_name: seller.legalName, address_lines: seller.addressLines, tax_id: seller.taxId ?? null, email: seller.email ?? null }
      : null,
    tax: tax ?? null,
    taxCents,
    totalCents: subtotalCents + taxCents,
  };
}

/**
 * The tax on an invoice's subtotal: once per invoice, on the sum of its lines, rounded half up to
 * the cent (0.5 cent and above up). Half up is the commercial rounding tax authorities expect on
 * an invoice's tax amount (and the rounding of each line's amount, price-list.ts); banker's
 * rounding evens out bias over many sums, which one tax line per invoice does not have. Once per
 * invoice rather than per line, the tax is within half a cent of the rate times the subtotal,
 * where rounding each line's tax would drift by up to half a cent a line. Exact in integers.
 */
export function taxOn(subtotalCents: number, tax: TaxRate | undefined | null): number {
  if (!tax) return 0;
  return Number((BigInt(subtotalCents) * BigInt(tax.basisPoints) + 5_000n) / 10_000n);
}
