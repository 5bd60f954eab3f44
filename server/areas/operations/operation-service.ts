import { conflict } from '../../core/errors.ts';
import type { PoolClient } from '../../db/pool.ts';
import type { CancelledOperation, OperationEngine } from '../../engine/engine.ts';
import { findOperation } from './operation-rows.ts';

/** The rule of cancelling: only a queued operation that has not started; the engine undoes its change. */
export function createOperationService(engine: Pick<OperationEngine, 'cancelQueued'>) {
  return {
    async cancel(tx: PoolClient, orgId: string, operationId: string): Promise<CancelledOperation> {
      const cancelled = await engine.cancelQueued(tx, orgId, operationId);
      if (cancelled) return cancelled;
      const existing = await findOperation(tx, orgId, operationId);
      throw conflict(
        'operation_not_cancellable',
        'Operation cannot be cancelled',
        `Operation ${operationId} is ${existing.state === 'running' || existing.attempt > 0 ? 'already started' : existing.state}; only a queued operation that has not started can be cancelled.`,
      );
    },
  };
}

export type OperationService = ReturnType<typeof createOperationService>;
