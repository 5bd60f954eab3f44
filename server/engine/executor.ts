import type { PoolClient } from '../db/pool.ts';
import type { AfterCommit } from '../core/write.ts';
import type { Logger } from '../logging.ts';
import type { OperationRow, OperationType } from './operation-record.ts';

/**
 * Carries out one type of operation. The engine calls `perform` (the backend work, which must
 * be safe to repeat: a crashed attempt is attempted again), then, in one transaction with the
 * operation's final state, `succeeded` or `failed` to update the resource. `cancelled` runs when
 * a queued operation is cancelled, to undo what the request changed.
 *
 * Only `perform` may call a backend: the other three run inside a transaction, where a backend
 * call (or a query on another connection) is refused. What undoing needs from a backend,
 * `cancelled` returns as `AfterCommit` work, run once the cancel has committed.
 */
export interface Executor<Outcome = unknown> {
  perform(operation: OperationRow, context: ExecutionContext): Promise<Outcome>;
  succeeded(tx: PoolClient, operation: OperationRow, outcome: Outcome): Promise<Record<string, unknown> | void>;
  failed(tx: PoolClient, operation: OperationRow, failure: OperationFailure): Promise<void>;
  cancelled(tx: PoolClient, operation: OperationRow): Promise<AfterCommit | void>;
  /**
   * Set when `succeeded` sends exactly one statement, before it awaits anything, and does nothing
   * with its answer but fail: the engine then sends those of a batch of successes together, in one
   * round trip, instead of one after another.
   */
  readonly succeedsInOneStatement?: true;
  /**
   * The table of the row (`id` = the operation's resource_id) that `succeeded` locks: a batch of
   * successes locks every such row before recording any, tables by name and rows by id, the one
   * order every batch that meets them takes (see `lockingRows`).
   */
  readonly lockedTable?: string;
}

export interface ExecutionContext {
  log: Logger;
  /** Aborted when the process shuts down: the attempt stops and the operation is released. */
  signal: AbortSignal;
}

export interface OperationFailure {
  errorClass: 'backend_unavailable' | 'backend_rejected' | 'internal_error';
  /** The fixed phrase with its context label, as stored in `error_detail`. */
  errorDetail: string;
}

/**
 * An executor for every operation type of the contract: the platform composes it from the areas'
 * `Executors`, and a type without one does not compile.
 */
// `any`: each executor has its own outcome type, and the engine only passes it from perform to succeeded.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ExecutorRegistry = { [Type in OperationType]: Executor<any> };

/** The executors of some operation types (an area's share of the registry). */
export type Executors<Types extends OperationType> = Pick<ExecutorRegistry, Types>;

/**
 * Executors whose operations' resources are rows of `table`. Rows are always locked in one order,
 * by id, wherever several are locked in one transaction (a batch of successes, the reconciler's
 * observations, the scheduler's due runs): two such transactions then wait for each other at most
 * one way, never deadlock. A batch recording successes in the order its operations were accepted
 * would lock its instances in that order, against a reconciler locking them by id.
 */
export function lockingRows<Types extends OperationType>(table: string, executors: Executors<Types>): Executors<Types> {
  return Object.fromEntries(
    Object.entries(executors).map(([type, executor]) => [type, { ...(executor as Executor), lockedTable: table }]),
  ) as Executors<Types>;
}
