import type { components } from '../../../generated/openapi.ts';
import type { Pool, Queryable } from '../../db/pool.ts';
import type { BillingProviderDriver } from '../../drivers/billing-provider.ts';
import { iso } from '../../core/clock.ts';
import { keysetPage } from '../../core/pagination.ts';
import { monthOf, startOfMonth, usageOfMonth } from './usage.ts';
import { priceInCents } from './prices.ts';

export type InvoiceOut = components['schemas']['InvoiceOut'];

export interface InvoiceRow {
  id: string;
  status: InvoiceOut['status'];
  currency: string;
  amount_due_cents: number;
  total_cents: number;
  hosted_invoice_url: string | null;
  invoice_pdf: string | null;
  period_start: Date;
  period_end: Date;
}

export function toInvoiceOut(row: InvoiceRow): InvoiceOut {
  return {
    id: row.id,
    status: row.status,
    currency: row.currency,
    amount_due_cents: row.amount_due_cents,
    total_cents: row.total_cents,
    hosted_invoice_url: row.hosted_invoice_url,
    invoice_pdf: row.invoice_pdf,
    period_start: iso(row.period_start),
    period_end: iso(row.period_end),
  };
}

/**
 * Issues, through the billing provider, the invoice of every finished month of the organization
 * that has usage and no invoice yet. Safe to run again and from several processes: the provider
 * gives the same invoice for the same month and the row is inserted once.
 */
export async function issueDueInvoices(pool: Pool, provider: BillingProviderDriver, orgId: string, now: Date): Promise<void> {
  const currentMonth = monthOf(now);
  const { rows } = await pool.query<{ month: string }>(
    `SELECT DISTINCT to_char(u.month, 'YYYY-MM-DD') AS month FROM usage_totals u
     WHERE u.org_id = $1 AND u.month < $2
       AND NOT EXISTS (SELECT 1 FROM invoices i WHERE i.org_id = u.org_id AND i.period_start = u.month::timestamptz)
     ORDER BY month`,
    [orgId, currentMonth],
  );
  for (const { month } of rows) {
    const periodStart = new Date(`${month}T00:00:00Z`);
    const periodEnd = startOfMonth(periodStart, 1);
    const usage = await usageOfMonth(pool, orgId, month);
    const lines = [...usage].map(([meter, quantity]) => ({ meter, quantity, amountCents: priceInCents(meter, Number(quantity)) }));
    const demo = await isDemoMonth(pool, orgId, month);
    const issued = await provider.issueInvoice({ orgId, periodStart, periodEnd, lines, settled: true, demo });
    await pool.query(
      `INSERT INTO invoices (id, org_id, status, currency, amount_due_cents, total_cents, hosted_invoice_url, invoice_pdf, period_start, period_end)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
      [
        issued.id,
        orgId,
        issued.status,
        issued.currency,
        issued.amountDueCents,
        issued.totalCents,
        issued.hostedInvoiceUrl,
        issued.invoicePdf,
        periodStart,
        periodEnd,
      ],
    );
  }
}

/** Whether the month's usage was invented for a demo (its invoice is labelled so). */
async function isDemoMonth(db: Queryable, orgId: string, month: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM usage_totals WHERE org_id = $1 AND month = $2 AND demo LIMIT 1', [orgId, month]);
  return rows.length > 0;
}

export async function organizationsWithDueInvoices(db: Queryable, now: Date): Promise<string[]> {
  const { rows } = await db.query<{ org_id: string }>(
    `SELECT DISTINCT u.org_id FROM usage_totals u
     WHERE u.month < $1 AND NOT EXISTS (SELECT 1 FROM invoices i WHERE i.org_id = u.org_id AND i.period_start = u.month::timestamptz)`,
    [monthOf(now)],
  );
  return rows.map((row) => row.org_id);
}

/** A page of the organization's invoices, newest period first. */
export function invoicesPage(db: Queryable, orgId: string, query: { cursor?: string; limit?: number }) {
  const list = {
    name: 'invoices',
    from: 'invoices WHERE org_id = $1',
    params: [orgId],
    sortColumn: 'period_start',
    order: 'newest first',
    idKind: 'text',
  } as const;
  return keysetPage(db, list, query, toInvoiceOut);
}

export async function findInvoice(db: Queryable, orgId: string, invoiceId: string): Promise<InvoiceRow | undefined> {
  const { rows } = await db.query<InvoiceRow>('SELECT * FROM invoices WHERE org_id = $1 AND id = $2', [orgId, invoiceId]);
  return rows[0];
}
