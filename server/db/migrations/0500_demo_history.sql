-- Invented usage is labelled: organizations get none unless a demo history is asked for, and
-- invoices issued from it say so. The history earlier versions invented for every organization
-- (the months before it existed) is labelled too.
ALTER TABLE usage_totals ADD COLUMN demo boolean NOT NULL DEFAULT false;

UPDATE usage_totals u SET demo = true
FROM orgs o
WHERE u.org_id = o.id AND u.month < date_trunc('month', o.created_at AT TIME ZONE 'UTC');
