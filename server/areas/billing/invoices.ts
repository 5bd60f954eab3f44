import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../core/clock.ts';
import { keysetPage } from '../../core/pagination.ts';
import { withTransaction, type Pool, type Queryable } from '../../db/pool.ts';
import type { BillingProviderDriver } from '../../drivers/billing-provider.ts';
import type { InvoiceLinks } from './invoice-links.ts';
import { priceInCents, type PriceList } from './prices.ts';
import { monthOf, startOfMonth } from './usage.ts';

export type InvoiceOut = components['schemas']['InvoiceOut'];

export interface InvoiceRow {
  id: string;
  org_id: string;
  status: InvoiceOut['status'];
  currency: string;
  amount_due_cents: number;
  total_cents: number;
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

/** Two-key advisory lock space of the billing run (the second key is the organization). */
const BILLING_RUN_LOCK = 7_361_204_119;

/**
 * The billing run for one organization at its `now`: every finished month (before the month of
 * `now`) with usage and no invoice is closed into one, with a line per meter priced by the price
 * list; then every issued invoice not yet collected is handed to the billing provider.
 *
 * Exactly once, however many processes run it: months are closed under a per-organization
 * advisory lock, the invoice id is derived from the organization and month, and (org, month) is
 * unique. Metering must have passed the month's end first (the run meters, then closes); usage
 * never lands in a closed month afterwards (usage.ts). A crash between issuing and collecting
 * leaves a draft, collected by the next run.
 */
export async function runBilling(pool: Pool, provider: BillingProviderDriver, prices: PriceList, orgId: string, now: Date): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [BILLING_RUN_LOCK % 2_147_483_647, orgId]);
    const { rows } = await tx.query<{ month: string; demo: boolean }>(
      `SELECT to_char(u.month, 'YYYY-MM-DD') AS month, bool_or(u.demo) AS demo FROM usage_totals u
       WHERE u.org_id = $1 AND u.month < $2::date
         AND NOT EXISTS (SELECT 1 FROM invoices i WHERE i.org_id = u.org_id AND i.period_start = u.month::timestamptz)
       GROUP BY u.month ORDER BY u.month`,
      [orgId, monthOf(now)],
    );
    for (const { month, demo } of rows) {
      const periodStart = new Date(`${month}T00:00:00Z`);
      const { rows: usage } = await tx.query<{ meter: string; quantity: string }>(
        'SELECT meter, quantity::text AS quantity FROM usage_totals WHERE org_id = $1 AND month = $2 AND quantity > 0',
        [orgId, month],
      );
      const quantities = new Map(usage.map((row) => [row.meter, row.quantity]));
      const lines = prices.prices
        .filter((price) => quantities.has(price.meter))
        .map((price, index) => {
          const quantity = quantities.get(price.meter)!;
          return { position: index + 1, price, quantity, amountCents: priceInCents(prices, price.meter, quantity) };
        });
      const total = lines.reduce((sum, line) => sum + line.amountCents, 0);
      const id = invoiceIdOf(orgId, periodStart, demo);
      const inserted = await tx.query(
        `INSERT INTO invoices (id, org_id, status, currency, amount_due_cents, total_cents, period_start, period_end, demo, issued_at)
         VALUES ($1, $2, 'draft', $3, $4, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
        [id, orgId, prices.currency, total, periodStart, startOfMonth(periodStart, 1), demo, now],
      );
      if (inserted.rowCount === 0) continue;
      for (const line of lines) {
        await tx.query(
          `INSERT INTO invoice_lines (invoice_id, position, meter, description, quantity, unit, unit_amount_micro_eur, amount_cents)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [
            id,
            line.position,
            line.price.meter,
            line.price.description,
            line.quantity,
            line.price.unit,
            line.price.unit_amount_micro_eur,
            line.amountCents,
          ],
        );
      }
    }
  });
  const { rows: drafts } = await pool.query<InvoiceRow>(
    `SELECT * FROM invoices WHERE org_id = $1 AND status = 'draft' ORDER BY period_start`,
    [orgId],
  );
  for (const draft of drafts) {
    // Outside any transaction: the provider is an outside system.
    const collected = await provider.collectInvoice({
      invoiceId: draft.id,
      orgId,
      currency: draft.currency,
      totalCents: Number(draft.total_cents),
      demo: draft.demo,
    });
    await pool.query(`UPDATE invoices SET status = $2, amount_due_cents = $3 WHERE id = $1 AND status = 'draft'`, [
      draft.id,
      collected.status,
      collected.amountDueCents,
    ]);
  }
}

/** Organizations with a finished month not yet invoiced, or an invoice not yet collected, at their own clocks. */
export async function organizationsToBill(db: Queryable, nowOf: (orgId: string) => Date): Promise<string[]> {
  const { rows } = await db.query<{ org_id: string; month: string }>(
    `SELECT u.org_id, to_char(max(u.month), 'YYYY-MM-DD') AS month FROM usage_totals u
     WHERE NOT EXISTS (SELECT 1 FROM invoices i WHERE i.org_id = u.org_id AND i.period_start = u.month::timestamptz)
     GROUP BY u.org_id, u.month
     UNION SELECT org_id, '0001-01-01' FROM invoices WHERE status = 'draft'`,
  );
  const due = new Set<string>();
  for (const row of rows) if (row.month < monthOf(nowOf(row.org_id))) due.add(row.org_id);
  return [...due];
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
    invoice,
    organization: { id: invoice.org_id, name: invoice.org_name },
    lines: lines.map((line) => ({ ...line, amount_cents: Number(line.amount_cents) })),
    instanceHours: sizes,
  };
}
