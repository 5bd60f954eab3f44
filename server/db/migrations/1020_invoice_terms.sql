-- What an invoice says beyond its lines, fixed when it is issued so that a later change of the
-- configuration never rewrites an invoice already issued:
--   seller                 the seller's details as configured then ({legal_name, address_lines,
--                          tax_id, email}); null when none were configured, as the documents say;
--   tax_name, tax_rate_basis_points
--                          the tax and its rate in hundredths of a percent; null when no rate was
--                          configured (no tax, and the documents say so);
--   tax_cents              the tax on the lines' sum, which total_cents includes.
-- And what the billing provider has collected, beside what remains due (amount_due_cents).
ALTER TABLE invoices
  ADD COLUMN seller jsonb,
  ADD COLUMN tax_name text,
  ADD COLUMN tax_rate_basis_points integer CHECK (tax_rate_basis_points BETWEEN 0 AND 10000),
  ADD COLUMN tax_cents bigint NOT NULL DEFAULT 0 CHECK (tax_cents >= 0),
  ADD COLUMN amount_paid_cents bigint NOT NULL DEFAULT 0 CHECK (amount_paid_cents >= 0);

-- Invoices issued before carry no tax and no seller. What they had collected is the total less
-- what remained due (a void invoice collected nothing).
UPDATE invoices SET amount_paid_cents = total_cents - amount_due_cents WHERE status IN ('open', 'paid', 'uncollectible');

-- The provider never collects more than the total, nor leaves more than it due.
ALTER TABLE invoices ADD CONSTRAINT invoices_collected_within_total
  CHECK (tax_cents <= total_cents AND amount_paid_cents + amount_due_cents <= total_cents);
