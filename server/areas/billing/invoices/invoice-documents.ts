import { Router, type Request, type Response } from 'express';
import { INVOICE_DOCUMENTS_PATH, type InvoiceFormat, type InvoiceLinks } from './invoice-links.ts';
import { renderInvoiceHtml, renderInvoicePdf } from './invoice-render.ts';
import { invoiceDocument } from './invoice-rows.ts';
import type { Pool } from '../../../db/pool.ts';

/**
 * An invoice's page and PDF, as `hosted_invoice_url` and `invoice_pdf` name them
 * (`/billing/invoices/<id>.html|.pdf?expires=…&signature=…`): outside /v1 and the contract, for a
 * browser, opened by a signed link that expires (no API key needed). A wrong or expired signature
 * is 403, an unknown invoice 404; drafts have no pages yet.
 */
export function invoiceDocuments(pool: Pool, links: () => Promise<InvoiceLinks>): Router {
  const router = Router();
  const page = (res: Response, status: number, text: string) => res.status(status).type('text/plain; charset=utf-8').send(`${text}\n`);

  router.get(`${INVOICE_DOCUMENTS_PATH}:file`, async (req: Request<{ file: string }>, res: Response) => {
    const match = /^(in_[A-Za-z0-9_]{1,60})\.(html|pdf)$/.exec(req.params.file);
    const expires = typeof req.query.expires === 'string' ? req.query.expires : '';
    const signature = typeof req.query.signature === 'string' ? req.query.signature : '';
    if (!match) return page(res, 404, 'No such invoice document.');
    const [, invoiceId, format] = match as unknown as [string, string, InvoiceFormat];
    const document = await invoiceDocument(pool, invoiceId);
    // The signature is checked before anything of the invoice is told, even whether it exists.
    const verdict = document ? (await links()).verify(document.organization.id, invoiceId, format, expires, signature) : 'invalid';
    if (verdict === 'expired')
      return page(res, 403, 'This invoice link has expired. Get a fresh one from the API (getInvoice or listInvoices).');
    if (verdict !== 'valid' || !document)
      return page(res, 403, 'This invoice link is not valid. Get a fresh one from the API (getInvoice or listInvoices).');
    if (document.invoice.status === 'draft') return page(res, 404, 'This invoice is still being issued; try again shortly.');
    res.setHeader('Cache-Control', 'private, no-store');
    if (format === 'html') {
      res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
      return res.type('text/html; charset=utf-8').send(renderInvoiceHtml(document));
    }
    res.setHeader('Content-Disposition', `inline; filename="${invoiceId}.pdf"`);
    return res.type('application/pdf').send(await renderInvoicePdf(document));
  });
  return router;
}
