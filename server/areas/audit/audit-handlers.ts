import type { OperationHandlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../core/request-context.ts';
import type { Pool } from '../../db/pool.ts';
import { timestamptzInput } from '../../db/timestamps.ts';
import { auditEventsPage } from './audit-event-rows.ts';

/** Audit events, newest first, with filters (written by core/request-audit.ts and the platform's own actions). */
export function auditHandlers({ pool }: { pool: Pool }): Pick<OperationHandlers<RequestContext>, 'listAuditEvents'> {
  return {
    async listAuditEvents(request, context) {
      const { resource_type = null, resource_id = null, action = null, since, until } = request.query;
      const filters = {
        resourceType: resource_type,
        resourceId: resource_id,
        action,
        since: since === undefined ? null : timestamptzInput(since),
        until: until === undefined ? null : timestamptzInput(until),
      };
      return { status: 200, body: await auditEventsPage(pool, context.principal.orgId, filters, request.query) };
    },
  };
}
