import type { OperationHandlers } from '../../../../generated/operations.ts';
import { notFound } from '../../../core/errors.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import type { Pool } from '../../../db/pool.ts';
import type { InvoiceLinks } from './invoice-links.ts';
import { findInvoice, invoicesPage, toInvoiceOut } from './invoice-rows.ts';

/** The organization's invoices, newest period first, each with signed links to its page and PDF. */
export function invoiceHandlers({
  pool,
  links,
}: {
  pool: Pool;
  links: () => Promise<InvoiceLinks>;
}): Pick<OperationHandlers<RequestContext>, 'listInvoices' | 'getInvoice'> {
  return {
    async listInvoices(request, context) {
      return { status: 200, body: await invoicesPage(pool, context.principal.orgId, request.query, await links()) };
    },

    async getInvoice(request, context) {
      const invoice = await findInvoice(pool, context.principal.orgId, request.path.invoice_id);
      if (!invoice) throw notFound(`No invoice ${request.path.invoice_id} in this organization.`);
      return { status: 200, body: toInvoiceOut(invoice, await links()) };
    },
  };
}
