import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../core/clock.ts';
import { keysetPage } from '../../core/pagination.ts';
import type { Queryable } from '../../db/pool.ts';

type AuditEventOut = components['schemas']['AuditEventOut'];

/** An audit event as stored (written by core/audit.ts). */
interface AuditRow {
  id: string;
  ts: Date;
  action: string;
  resource_type: AuditEventOut['resource_type'];
  resource_id: string | null;
  result: AuditEventOut['result'];
  actor_sub: string;
  actor_realm: string;
  actor_token_id: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  operation_id: string | null;
  reason: string | null;
  request_id: string | null;
}

const toAuditEventOut = (row: AuditRow): AuditEventOut => ({
  id: row.id,
  ts: iso(row.ts),
  action: row.action,
  resource_type: row.resource_type,
  result: row.result,
  actor_sub: row.actor_sub,
  actor_realm: row.actor_realm,
  actor_token_id: row.actor_token_id,
  after: row.after,
  before: row.before,
  operation_id: row.operation_id,
  reason: row.reason,
  request_id: row.request_id,
  resource_id: row.resource_id,
});

/** The filters of listAuditEvents; null: any. `since` is inclusive, `until` exclusive. */
export interface AuditFilters {
  resourceType: string | null;
  resourceId: string | null;
  action: string | null;
  since: string | null;
  until: string | null;
}

/** A page of the organization's audit events, newest first, filtered. */
export function auditEventsPage(db: Queryable, orgId: string, filters: AuditFilters, query: { cursor?: string; limit?: number }) {
  const list = {
    name: 'audit-events',
    from: `audit_events WHERE org_id = $1
             AND ($2::text IS NULL OR resource_type = $2) AND ($3::text IS NULL OR resource_id = $3)
             AND ($4::text IS NULL OR action = $4)
             AND ($5::timestamptz IS NULL OR ts >= $5) AND ($6::timestamptz IS NULL OR ts < $6)`,
    params: [orgId, filters.resourceType, filters.resourceId, filters.action, filters.since, filters.until],
    sortColumn: 'ts',
    order: 'newest first',
  } as const;
  return keysetPage(db, list, query, toAuditEventOut);
}
