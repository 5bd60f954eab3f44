import type { OperationHandlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { performWrite } from '../../core/write.ts';
import type { Pool } from '../../db/pool.ts';
import { toOperationRef } from '../../engine/operation-record.ts';
import { findOperation, operationsPage } from './operation-rows.ts';
import type { OperationService } from './operation-service.ts';

/** The records of asynchronous work: listed, read, and cancelled while queued. */
export function operationHandlers({
  pool,
  operations,
}: {
  pool: Pool;
  operations: OperationService;
}): Pick<OperationHandlers<RequestContext>, 'listOperations' | 'getOperation' | 'cancelOperation'> {
  return {
    async listOperations(request, context) {
      const { resource = null, state = null } = request.query;
      return { status: 200, body: await operationsPage(pool, context.principal.orgId, { resource, state }, request.query) };
    },

    async getOperation(request, context) {
      return { status: 200, body: toOperationRef(await findOperation(pool, context.principal.orgId, request.path.operation_id)) };
    },

    cancelOperation: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const operationId = request.path.operation_id;
        const cancelled = await operations.cancel(tx, context.principal.orgId, operationId);
        return {
          response: { status: 200 as const, body: toOperationRef(cancelled.operation) },
          audit: { resourceId: operationId, after: { state: 'cancelled' }, operationId },
          afterCommit: cancelled.afterCommit,
        };
      }),
  };
}
