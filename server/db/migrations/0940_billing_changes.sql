-- A change to a billing account (its spend budget, its state) or to a month's usage is announced
-- on commit, so that every process drops the billing figures it cached (areas/billing/account.ts)
-- at once, whichever process or tool made it (the metering run, an operator's SQL). The payload
-- names the organization; a transaction announces each organization once.
CREATE FUNCTION announce_billing_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('billing_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD.org_id ELSE NEW.org_id END)::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER billing_accounts_changed AFTER INSERT OR UPDATE OR DELETE ON billing_accounts
  FOR EACH ROW EXECUTE FUNCTION announce_billing_change();
CREATE TRIGGER usage_totals_changed AFTER INSERT OR UPDATE OR DELETE ON usage_totals
  FOR EACH ROW EXECUTE FUNCTION announce_billing_change();
