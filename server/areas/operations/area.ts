import { defineArea, type AreaDependencies } from '../area.ts';
import { operationHandlers } from './operation-handlers.ts';
import { createOperationService } from './operation-service.ts';

/** Operations: the records of asynchronous work, listed, read, and cancelled while queued (the engine undoes their change). */
export function operationsArea({ pool, ports }: AreaDependencies) {
  return defineArea({
    executors: {},
    handlers: operationHandlers({
      pool,
      operations: createOperationService({ cancelQueued: (...args) => ports.engine.cancelQueued(...args) }),
    }),
    auditNames: {
      cancelOperation: { action: 'operation.cancel', resourceType: 'operation', idParam: 'operation_id' },
    },
  });
}
