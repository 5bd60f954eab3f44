import type { components } from '../../../../generated/openapi.ts';
import { iso } from '../../../core/clock.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Queryable } from '../../../db/pool.ts';
import type { InvoiceLinks } from './invoice-links.ts';
import type { StoredSeller } from './invoice-terms.ts';
import { monthOf } from '../metering/usage-ledger.ts';

export type InvoiceOut = components['schemas']['InvoiceOut'];

export interface InvoiceRow {
  id: string;
  org_id: string;
  status: InvoiceOut['status'];
  currency: string;
  amount_due_cents: number;
  /** What the billing provider has collected (0 while draft). */
  amount_paid_cents: number;
  /** The lines' sum plus `tax_cents`. */
  total_cents: number;
  /** Fixed when the invoice was issued (invoice-terms.ts): a later configuration never changes them. */
  seller: StoredSeller | null;
  tax_name: string | null;
  /** Null: no tax rate was configured when it was issued. */
  tax_rate_basis_points: number | null;
  tax_cents: number;
  period_start: Date;
  period_end: Date;
  demo: boolean;
  issued_at: Date | null;
  created_at: Date;
}

export interface InvoiceLine {
  position: number;
  meter: string;
  description: string;
  quantity: string;
  unit: string;
  unit_amount_micro_eur: number;
  amount_cents: number;
}

/** The API form; a draft (issued, not yet finalized by the provider) has no pages yet. */
export function toInvoiceOut(row: InvoiceRow, links: InvoiceLinks): InvoiceOut {
  const draft = row.status === 'draft';
  return {
    id: row.id,
    status: row.status,
    currency: row.currency,
    amount_due_cents: Number(row.amount_due_cents),
    total_cents: Number(row.total_cents),
    hosted_invoice_url: draft ? null : links.url(row.org_id, row.id, 'html'),
    invoice_pdf: draft ? null : links.url(row.org_id, row.id, 'pdf'),
    period_start: iso(row.period_start),
    period_end: iso(row.period_end),
  };
}

/** The invoice id of an organization's month: derived, so that a month can only ever have one. */
export function invoiceIdOf(orgId: string, periodStart: Date, demo: boolean): string {
  const month = `${periodStart.getUTCFullYear()}_${String(periodStart.getUTCMonth() + 1).padStart(2, '0')}`;
  return `in_${demo ? 'demo_' : ''}${month}_${orgId.slice(0, 8)}`;
}

/** A page of the organization's invoices, newest period first. */
export function invoicesPage(db: Queryable, orgId: string, query: { cursor?: string; limit?: number }, links: InvoiceLinks) {
  const list = {
    name: 'invoices',
    from: 'invoices WHERE org_id = $1',
    params: [orgId],
    sortColumn: 'period_start',
    order: 'newest first',
    idKind: 'text',
  } as const;
  return keysetPage(db, list, query, (row: InvoiceRow) => toInvoiceOut(row, links));
}

export async function findInvoice(db: Queryable, orgId: string, invoiceId: string): Promise<InvoiceRow | undefined> {
  const { rows } = await db.query<InvoiceRow>('SELECT * FROM invoices WHERE org_id = $1 AND id = $2', [orgId, invoiceId]);
  return rows[0];
}

/** Everything an invoice's page and PDF show. */
export interface InvoiceDocument {
  invoice: InvoiceRow;
  /** The buyer. The platform keeps no billing address for an organization, so none is shown. */
  organization: { id: string; name: string };
  lines: InvoiceLine[];
  /** Instance hours of the month by size (shown beside the priced lines). */
  instanceHours: Array<{ size: string; hours: string }>;
}

export async function invoiceDocument(db: Queryable, invoiceId: string): Promise<InvoiceDocument | undefined> {
  const { rows } = await db.query<InvoiceRow & { org_name: string }>(
    'SELECT i.*, o.name AS org_name FROM invoices i JOIN orgs o ON o.id = i.org_id WHERE i.id = $1',
    [invoiceId],
  );
  const invoice = rows[0];
  if (!invoice) return undefined;
  const { rows: lines } = await db.query<InvoiceLine>(
    `SELECT position, meter, description, quantity::text AS quantity, unit, unit_amount_micro_eur::int AS unit_amount_micro_eur,
       amount_cents::bigint AS amount_cents FROM invoice_lines WHERE invoice_id = $1 ORDER BY position`,
    [invoiceId],
  );
  const { rows: sizes } = await db.query<{ size: string; hours: string }>(
    `SELECT size, round(hours, 2)::text AS hours FROM usage_by_size WHERE org_id = $1 AND month = $2::date AND hours > 0 ORDER BY size`,
    [invoice.org_id, monthOf(invoice.period_start)],
  );
  return {
    // bigint columns come as text: the amounts as numbers (cents stay far below 2^53).
    invoice: {
      ...invoice,
      total_cents: Number(invoice.total_cents),
      amount_due_cents: Number(invoice.amount_due_cents),
      amount_paid_cents: Number(invoice.amount_paid_cents),
      tax_cents: Number(invoice.tax_cents),
    },
    organization: { id: invoice.org_id, name: invoice.org_name },
    lines: lines.map((line) => ({ ...line, amount_cents: Number(line.amount_cents) })),
    instanceHours: sizes,
  };
}
