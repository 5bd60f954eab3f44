import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import type { Pool } from '../../../db/pool.ts';
import { timestamptzInput } from '../../../db/timestamps.ts';
import { eventsPage, findEvent, toEventOut } from './event-rows.ts';

/** The event log, newest first with filters, and one event. */
export function eventHandlers({ pool }: { pool: Pool }): Pick<OperationHandlers<RequestContext>, 'listEvents' | 'getEvent'> {
  return {
    async listEvents(request, context) {
      const { type = null, resource_type = null, resource_id = null, since, until } = request.query;
      const filters = {
        type,
        resourceType: resource_type,
        resourceId: resource_id,
        since: since === undefined ? null : timestamptzInput(since),
        until: until === undefined ? null : timestamptzInput(until),
      };
      return { status: 200, body: await eventsPage(pool, context.principal.orgId, filters, request.query) };
    },

    async getEvent(request, context) {
      return { status: 200, body: toEventOut(await findEvent(pool, context.principal.orgId, request.path.event_id)) };
    },
  };
}
