import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../core/clock.ts';
import { decodeCursor, DEFAULT_PAGE_SIZE, page, sortKeySql } from '../../core/pagination.ts';
import type { Area, AreaDependencies } from '../area.ts';

type AuditEventOut = components['schemas']['AuditEventOut'];

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
  sort_key: string;
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

/** Audit events, newest first, with filters. */
export function auditArea({ pool }: AreaDependencies): Area<'listAuditEvents'> {
  return {
    executors: {},
    handlers: {
      async listAuditEvents(request, context) {
        const { resource_type = null, resource_id = null, action = null, since = null, until = null } = request.query;
        const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
        const after = decodeCursor('audit-events', request.query.cursor);
        const { rows } = await pool.query<AuditRow>(
          `SELECT *, ${sortKeySql('ts')} AS sort_key FROM audit_events
           WHERE org_id = $1
             AND ($2::text IS NULL OR resource_type = $2) AND ($3::text IS NULL OR resource_id = $3)
             AND ($4::text IS NULL OR action = $4)
             AND ($5::timestamptz IS NULL OR ts >= $5) AND ($6::timestamptz IS NULL OR ts < $6)
             AND ($7::timestamptz IS NULL OR (ts, id) < ($7::timestamptz, $8::uuid))
           ORDER BY ts DESC, id DESC LIMIT $9`,
          [context.principal.orgId, resource_type, resource_id, action, since, until, after?.key ?? null, after?.id ?? '00000000-0000-0000-0000-000000000000', limit + 1],
        );
        return { status: 200, body: page('audit-events', rows, limit, (row) => ({ key: row.sort_key, id: row.id }), toAuditEventOut) };
      },
    },
  };
}
