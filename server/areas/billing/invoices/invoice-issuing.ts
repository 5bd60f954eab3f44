import type { InvoicingConfig } from '../../../config.ts';
import { recordEvents } from '../../../core/events.ts';
import { withTransaction, type Pool, type Queryable } from '../../../db/pool.ts';
import type { BillingProviderDriver } from '../../../drivers/billing-provider.ts';
import { monthOf, startOfMonth } from '../metering/usage-ledger.ts';
import { priceInCents, type PriceList } from '../prices/price-list.ts';
import type { InvoiceLinks } from './invoice-links.ts';
import { invoiceIdOf, toInvoiceOut, type InvoiceRow } from './invoice-rows.ts';
import { invoiceTerms } from './invoice-terms.ts';

/** Two-key advisory lock space of the billing run (the second key is the organization). */
const BILLING_RUN_LOCK = 7_361_204_119;

/** The statement that takes an organization's billing-run lock, in the caller's transaction. */
export const billingRunLock = (orgId: string) => ({
  text: 'SELECT pg_advisory_xact_lock($1::int, hashtext($2))',
  values: [BILLING_RUN_LOCK % 2_147_483_647, orgId],
});

/**
 * The billing run for one organization at its `now`: every finished month (before the month of
 * `now`) with usage and no invoice is closed into one, with a line per meter priced by the price
 * list, and the seller and tax of the configuration of now (fixed into the invoice: a later change
 * of the configuration never rewrites it); then every issued invoice not yet collected is handed
 * to the billing provider, and what it collected and what remains due are kept.
 *
 * Exactly once, however many processes run it: months are closed under a per-organization
 * advisory lock, the invoice id is derived from the organization and month, and (org, month) is
 * unique. Metering must have passed the month's end first (the run meters, then closes); usage
 * never lands in a closed month afterwards (usage.ts). A crash between issuing and collecting
 * leaves a draft, collected by the next run.
 */
export async function runBilling(
  pool: Pool,
  provider: BillingProviderDriver,
  prices: PriceList,
  invoicing: InvoicingConfig,
  orgId: string,
  now: Date,
  links: () => Promise<InvoiceLinks>,
): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await tx.query(billingRunLock(orgId));
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
      const subtotal = lines.reduce((sum, line) => sum + line.amountCents, 0);
      const terms = invoiceTerms(invoicing, subtotal);
      const id = invoiceIdOf(orgId, periodStart, demo);
      const inserted = await tx.query(
        `INSERT INTO invoices (id, org_id, status, currency, amount_due_cents, total_cents, period_start, period_end, demo, issued_at,
           seller, tax_name, tax_rate_basis_points, tax_cents)
         VALUES ($1, $2, 'draft', $3, $4, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`,
        [
          id,
          orgId,
          prices.currency,
          terms.totalCents,
          periodStart,
          startOfMonth(periodStart, 1),
          demo,
          now,
          terms.seller,
          terms.tax?.name ?? null,
          terms.tax?.basisPoints ?? null,
          terms.taxCents,
        ],
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
    // Finalized: no longer a draft, and announced in the same transaction (once: only the
    // process whose update finds the draft announces it).
    const invoiceLinks = await links();
    await withTransaction(pool, async (tx) => {
      const { rows: finalized } = await tx.query<InvoiceRow>(
        `UPDATE invoices SET status = $2, amount_due_cents = $3, amount_paid_cents = $4 WHERE id = $1 AND status = 'draft' RETURNING *`,
        [draft.id, collected.status, collected.amountDueCents, collected.amountPaidCents],
      );
      const invoice = finalized[0];
      if (!invoice) return;
      await recordEvents(tx, [
        { orgId, type: 'invoice.finalized', resourceId: invoice.id, data: { invoice: toInvoiceOut(invoice, invoiceLinks) } },
      ]);
    });
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
