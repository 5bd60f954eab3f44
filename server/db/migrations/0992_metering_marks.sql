-- A metering pass costs what changed, not every billable resource: how far each organization has
-- been metered is one mark per organization (the pass's time for it), and metering_cursors keeps
-- only which resources the last pass saw, written when one appears or goes. A pass wrote every
-- resource's cursor and a usage row per resource and meter: at 1,200 instances a 5 s interval kept
-- its lock held most of the time, other processes' passes queued behind it.
-- Every resource of an organization was metered to the same instant (the organization's time at
-- the pass), so the mark is that instant.
CREATE TABLE metering_marks (
  org_id uuid PRIMARY KEY REFERENCES orgs (id),
  metered_until timestamptz NOT NULL
);
INSERT INTO metering_marks (org_id, metered_until)
  SELECT org_id, max(metered_until) FROM metering_cursors GROUP BY org_id;
-- Dropped rather than left unwritten: a process of the earlier version, still running, fails its
-- pass (and tries again) instead of counting by the other rule.
ALTER TABLE metering_cursors DROP COLUMN metered_until;
