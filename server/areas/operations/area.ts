import { performWrite } from '../../core/write.ts';
import type { OperationEngine } from '../../engine/engine.ts';
import { toOperationRef } from '../../engine/operation-record.ts';
import type { Area, AreaDependencies } from '../area.ts';
import { findOperation, operationsPage } from './operation-rows.ts';
import { createOperationService } from './operation-service.ts';

/**
 * Operations: the records of asynchronous work, listed, read, and cancelled while queued.
 * `engine` cancels queued operations and undoes their change.
 */
export function operationsArea(
  { pool }: AreaDependencies,
  engine: Pick<OperationEngine, 'cancelQueued'>,
): Area<'listOperations' | 'getOperation' | 'cancelOperation'> {
  const operations = createOperationService(engine);
  return {
    executors: {},
    handlers: {
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
    },
  };
}
