import type pg from 'pg';
import type { EngineConfig } from '../config.ts';
import { withTransaction, type Pool } from '../db/pool.ts';
import { PermanentBackendError, TransientBackendError } from '../drivers/errors.ts';
import type { Logger } from '../logging.ts';
import type { Executor, ExecutorRegistry, OperationFailure } from './executor.ts';
import type { OperationRow } from './operation-record.ts';

export const OPERATIONS_CHANNEL = 'operations_queued';

/**
 * The operations engine. The operations table is the durable work queue: workers claim an
 * operation with `FOR UPDATE SKIP LOCKED` and a lease, so each operation is worked on by one
 * worker at a time across every process sharing the database. A worker that crashes stops
 * renewing its lease; once it expires, another worker claims the operation and starts another
 * attempt. Transient backend failures are retried with exponential backoff (the operation stays
 * `running`, its lease set to the retry time) until `max_attempts`; then it is `failed`.
 */
export class OperationEngine {
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private wake: (() => void)[] = [];
  private listener: pg.PoolClient | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly executors: ExecutorRegistry,
    private readonly config: EngineConfig,
    private readonly log: Logger,
    private readonly workerId: string,
  ) {}

  /** Refuses to start when an operation type has no executor. */
  static checkRegistry(executors: ExecutorRegistry, types: readonly string[]): void {
    const missing = types.filter((type) => !(type in executors));
    if (missing.length > 0) throw new Error(`no executor for operation types: ${missing.join(', ')}`);
  }

  async start(): Promise<void> {
    this.listener = await this.pool.connect();
    this.listener.on('notification', () => this.kick());
    // Losing the listening connection only slows pick-up to the polling interval.
    this.listener.on('error', (error) => this.log.warn({ err: error }, 'operations listener lost its connection; polling continues'));
    await this.listener.query(`LISTEN ${OPERATIONS_CHANNEL}`);
    for (let worker = 0; worker < this.config.concurrency; worker++) this.loops.push(this.workLoop());
  }

  /** Wakes idle workers: new work was queued. */
  kick(): void {
    const waiting = this.wake;
    this.wake = [];
    waiting.forEach((resolve) => resolve());
  }

  /**
   * Stops claiming work and ends the attempts under way: they are released (lease expired now)
   * so that the next process to run picks them up at once.
   */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.abort.abort();
      this.kick();
      await Promise.all(this.loops);
      if (this.listener) {
        await this.listener.query(`UNLISTEN ${OPERATIONS_CHANNEL}`).catch(() => {});
        this.listener.release();
      }
    })();
    return this.stopped;
  }

  /** Cancels a queued operation that has not started, in the caller's transaction. */
  async cancelQueued(tx: pg.PoolClient, orgId: string, operationId: string): Promise<OperationRow | undefined> {
    const { rows } = await tx.query<OperationRow>(
      `UPDATE operations SET state = 'cancelled', finished_at = now()
       WHERE id = $1 AND org_id = $2 AND state = 'queued' AND attempt = 0 RETURNING *`,
      [operationId, orgId],
    );
    const operation = rows[0];
    if (operation) await this.executorFor(operation).cancelled(tx, operation);
    return operation;
  }

  private async workLoop(): Promise<void> {
    while (!this.abort.signal.aborted) {
      let operation: OperationRow | undefined;
      try {
        operation = await this.claim();
      } catch (error) {
        this.log.error({ err: error }, 'claiming an operation failed');
      }
      if (operation) await this.attempt(operation);
      else await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, this.config.pollIntervalMs);
      this.wake.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async claim(): Promise<OperationRow | undefined> {
    const { rows } = await this.pool.query<OperationRow>(
      `WITH next AS (
         SELECT id FROM operations
         WHERE state = 'queued' OR (state = 'running' AND lease_expires_at < now())
         ORDER BY created_at
         FOR UPDATE SKIP LOCKED
         LIMIT 1
       )
       UPDATE operations o
       SET state = 'running', attempt = o.attempt + 1, started_at = coalesce(o.started_at, now()),
           lease_owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
       FROM next WHERE o.id = next.id
       RETURNING o.*`,
      [this.workerId, this.config.leaseMs],
    );
    return rows[0];
  }

  private async attempt(operation: OperationRow): Promise<void> {
    const log = this.log.child({ operation_id: operation.id, type: operation.type, attempt: operation.attempt });
    if (operation.attempt > operation.max_attempts) {
      // Every attempt was started and none finished: the workers running them kept crashing.
      await this.fail(operation, { errorClass: 'internal_error', errorDetail: `The operation did not finish after ${operation.max_attempts} attempts. [${operation.type}]` }, log);
      return;
    }
    const heartbeat = setInterval(() => this.renewLease(operation).catch(() => {}), Math.max(50, this.config.leaseMs / 3));
    try {
      const outcome = await this.executorFor(operation).perform(operation, { log, signal: this.abort.signal });
      await this.succeed(operation, outcome, log);
    } catch (error) {
      if (this.abort.signal.aborted) {
        await this.release(operation);
      } else if (error instanceof PermanentBackendError) {
        log.warn({ reason: error.message }, 'backend refused the operation');
        await this.fail(operation, { errorClass: 'backend_rejected', errorDetail: `The ${error.backend} refused the request. [${operation.type}]` }, log);
      } else {
        const transient = error instanceof TransientBackendError;
        log[transient ? 'warn' : 'error']({ err: transient ? undefined : error, reason: (error as Error).message }, 'operation attempt failed');
        if (operation.attempt < operation.max_attempts) {
          await this.retryLater(operation);
        } else {
          await this.fail(
            operation,
            transient
              ? { errorClass: 'backend_unavailable', errorDetail: `The ${error.backend} was unavailable after ${operation.attempt} attempts. [${operation.type}]` }
              : { errorClass: 'internal_error', errorDetail: `The operation failed because of an internal error. [${operation.type}]` },
            log,
          );
        }
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async succeed(operation: OperationRow, outcome: unknown, log: Logger): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      const finished = await this.finish(tx, operation, 'succeeded');
      if (!finished) return log.warn('lost the lease before finishing; another worker owns the operation');
      const result = await this.executorFor(operation).succeeded(tx, finished, outcome);
      if (result) await tx.query('UPDATE operations SET result = $2 WHERE id = $1', [operation.id, JSON.stringify(result)]);
    });
  }

  private async fail(operation: OperationRow, failure: OperationFailure, log: Logger): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      const finished = await this.finish(tx, operation, 'failed', failure);
      if (!finished) return log.warn('lost the lease before failing; another worker owns the operation');
      await this.executorFor(operation).failed(tx, finished, failure);
    });
  }

  /** Marks the operation terminal if this worker still holds it; undefined if it does not. */
  private async finish(tx: pg.PoolClient, operation: OperationRow, state: 'succeeded' | 'failed', failure?: OperationFailure): Promise<OperationRow | undefined> {
    const { rows } = await tx.query<OperationRow>(
      `UPDATE operations SET state = $3, finished_at = now(), error_class = $4, error_detail = $5,
              lease_owner = NULL, lease_expires_at = NULL
       WHERE id = $1 AND lease_owner = $2 AND state = 'running' RETURNING *`,
      [operation.id, this.workerId, state, failure?.errorClass ?? null, failure?.errorDetail ?? null],
    );
    return rows[0];
  }

  private async retryLater(operation: OperationRow): Promise<void> {
    const backoff = Math.min(this.config.retryMaxMs, this.config.retryBaseMs * 2 ** (operation.attempt - 1));
    const jittered = backoff * (0.8 + Math.random() * 0.4);
    await this.pool.query(
      `UPDATE operations SET lease_owner = NULL, lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
       WHERE id = $1 AND lease_owner = $2`,
      [operation.id, this.workerId, jittered],
    );
  }

  private async renewLease(operation: OperationRow): Promise<void> {
    await this.pool.query(
      `UPDATE operations SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
       WHERE id = $1 AND lease_owner = $2`,
      [operation.id, this.workerId, this.config.leaseMs],
    );
  }

  private async release(operation: OperationRow): Promise<void> {
    await this.pool
      .query(`UPDATE operations SET lease_owner = NULL, lease_expires_at = now() WHERE id = $1 AND lease_owner = $2`, [operation.id, this.workerId])
      .catch(() => {});
  }

  private executorFor(operation: OperationRow): Executor {
    const executor = this.executors[operation.type];
    if (!executor) throw new Error(`no executor for ${operation.type}`);
    return executor;
  }
}
