-- Every documented list filter has an index that returns its rows already in the list's order,
-- so that a filtered page, and a page deep into a filtered list, reads about as many rows as the
-- unfiltered first page. Instances (oldest first, live only): by state, by region, and by label
-- (GIN: `labels @> {"key": "value"}`, for labels too rare to find by walking the list in order).
CREATE INDEX vms_org_state_page ON vms (org_id, state, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX vms_org_region_page ON vms (org_id, region_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX vms_labels ON vms USING gin (labels jsonb_path_ops) WHERE deleted_at IS NULL;

-- Operations (newest first): by resource type and by state.
CREATE INDEX operations_org_resource_type_page ON operations (org_id, resource_type, created_at DESC, id DESC);
CREATE INDEX operations_org_state_page ON operations (org_id, state, created_at DESC, id DESC);

-- Audit events (newest first): by resource type, resource and action; since and until are
-- ranges of the order itself (audit_events_org_page).
CREATE INDEX audit_events_org_resource_type_page ON audit_events (org_id, resource_type, ts DESC, id DESC);
CREATE INDEX audit_events_org_resource_page ON audit_events (org_id, resource_id, ts DESC, id DESC);
CREATE INDEX audit_events_org_action_page ON audit_events (org_id, action, ts DESC, id DESC);
