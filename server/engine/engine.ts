import type { EngineConfig } from '../config.ts';
import { DatabaseListener } from '../db/listener.ts';
import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import { prepared, runPrepared } from '../db/statements.ts';
import { isConcurrencyConflict, isDatabaseUnavailable } from '../db/unavailable.ts';
import { PermanentBackendError, TransientBackendError } from '../drivers/errors.ts';
import type { Logger } from '../logging.ts';
import type { AfterCommit } from '../core/write.ts';
import type { Executor, ExecutorRegistry, OperationFailure } from './executor.ts';
import { recordEvents } from '../core/events.ts';
import { OPERATION_COLUMNS, OPERATIONS_CHANNEL, operationEndEvents, type OperationRow } from './operation-record.ts';

/** A cancelled operation, and the backend work its undoing left for after the commit. */
export interface CancelledOperation {
  operation: OperationRow;
  afterCommit: AfterCommit | undefined;
}

/** How an attempt ended, and so what the engine records. */
type Verdict =
  | { kind: 'succeeded'; outcome: unknown }
  | { kind: 'failed'; failure: OperationFailure }
  | { kind: 'retry'; refundAttempt: boolean }
  | { kind: 'release' };

/** The longest pause between tries while the database cannot be reached. */
const MAX_OUTAGE_BACKOFF_MS = 5_000;
/**
 * The longest pause between tries to record an outcome while the database cannot be reached: a
 * try is one small statement, and the outcome should be on record before the lease lapses.
 */
const MAX_RECORD_RETRY_MS = 1_000;
/** Successes recorded in one transaction at most, and transactions recording them at once. */
const MAX_SUCCESS_BATCH = 64;
const MAX_SUCCESS_WRITERS = 2;

/** A batch of successes, each only if this worker still holds it. */
const FINISH_SUCCEEDED = prepared(
  'operations_finish_succeeded',
  `UPDATE operations SET state = 'succeeded', finished_at = now(), error_class = NULL, error_detail = NULL,
          lease_owner = NULL, lease_expires_at = NULL
   WHERE id = ANY($1::uuid[]) AND lease_owner = $2 AND state = 'running' RETURNING ${OPERATION_COLUMNS}`,
);
/** The claim: database function `claim_operations` (migration 0920). */
const CLAIM = prepared('operations_claim', `SELECT ${OPERATION_COLUMNS} FROM claim_operations($1, $2, $3)`);

/** A successful attempt waiting to be recorded. */
interface PendingSuccess {
  operation: OperationRow;
  outcome: unknown;
  log: Logger;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The operations engine. The operations table is the durable work queue: workers claim an
 * operation with `FOR UPDATE SKIP LOCKED` and a lease, so each operation is worked on by one
 * worker at a time across every process sharing the database. Operations on one resource run
 * one at a time in the order they were accepted (`seq`): one is claimable only when no earlier
 * one of its resource is unfinished, so the backend ends in the state the API last promised.
 *
 * A worker that crashes stops renewing its lease; once it expires, another worker claims the
 * operation and starts another attempt. Transient backend failures are retried with exponential
 * backoff (the operation stays `running`, its lease set to the retry time) until `max_attempts`;
 * then it is `failed`. An unreachable database fails nothing: the attempt is retried without
 * counting, and an outcome that could not be recorded is recorded once the database answers
 * again (the lease renewed meanwhile; should the outage outlast it, another worker takes the
 * operation over and the late record changes nothing). Nothing the
 * engine starts can end in an unhandled rejection.
 */
export class OperationEngine {
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private wake: (() => void)[] = [];
  /** Set by a kick that found nobody waiting (the dispatcher was claiming): its next pause is skipped. */
  private kicked = false;
  private stopped: Promise<void> | undefined;
  /** Successful attempts waiting to be recorded, a batch per transaction (`recordSuccesses`). */
  private successes: PendingSuccess[] = [];
  /** Transactions recording successes now (at most MAX_SUCCESS_WRITERS). */
  private successWriters = 0;

  private readonly pool: Pool;
  /** Partial only for tests that run the engine on a few types; the platform passes them all. */
  private readonly executors: Partial<ExecutorRegistry>;
  private readonly config: EngineConfig;
  private readonly log: Logger;
  private readonly workerId: string;
  /** Announces queued work; the engine's own when none was given, started and stopped with it. */
  private readonly listener: DatabaseListener;
  private readonly ownsListener: boolean;
  private started = false;

  /**
   * `listener`: the process's listener (platform.ts), which the engine subscribes to; it must be
   * started for the engine to hear of queued work. Without one, the engine opens its own.
   */
  constructor(
    pool: Pool,
    executors: Partial<ExecutorRegistry>,
    config: EngineConfig,
    log: Logger,
    workerId: string,
    listener?: DatabaseListener,
  ) {
    this.pool = pool;
    this.executors = executors;
    this.config = config;
    this.log = log;
    this.workerId = workerId;
    this.ownsListener = listener === undefined;
    this.listener = listener ?? new DatabaseListener(pool.options, log, 'cloud-platform-engine-listener');
    // Until it listens (and whenever it cannot), workers find work by polling.
    this.listener.subscribe({
      channels: [OPERATIONS_CHANNEL],
      notified: () => this.kick(),
      // Work queued while nobody listened was not announced.
      listening: () => this.kick(),
      lost: () => {},
    });
  }

  /** Whether the engine was started and is not stopping: its workers take queued work. */
  get running(): boolean {
    return this.started && this.stopped === undefined;
  }

  /** Starts the workers, and its own listener if it has one (resolves once that listener's first try is made). */
  async start(): Promise<void> {
    this.started = true;
    if (this.config.concurrency > 0) this.loops.push(this.dispatchLoop());
    if (this.ownsListener) await this.listener.start();
  }

  /** Wakes idle workers: new work was queued. */
  kick(): void {
    const waiting = this.wake;
    this.wake = [];
    // Work announced while the dispatcher was busy claiming is not lost: it claims again at once.
    if (waiting.length === 0) this.kicked = true;
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
      if (this.ownsListener) await this.listener.stop();
    })();
    return this.stopped;
  }

  /**
   * Cancels a queued operation that has not started, in the caller's transaction. The caller
   * runs `afterCommit`, if any, once that transaction has committed.
   */
  async cancelQueued(tx: PoolClient, orgId: string, operationId: string): Promise<CancelledOperation | undefined> {
    const { rows } = await tx.query<OperationRow>(
      `UPDATE operations SET state = 'cancelled', finished_at = now()
       WHERE id = $1 AND org_id = $2 AND state = 'queued' AND attempt = 0 RETURNING *`,
      [operationId, orgId],
    );
    const operation = rows[0];
    if (!operation) return undefined;
    await recordEvents(tx, operationEndEvents([operation]));
    const afterCommit = await this.executorFor(operation).cancelled(tx, operation);
    return { operation, afterCommit: afterCommit ?? undefined };
  }

  /**
   * Claims work for every free worker slot in one query, and runs each claimed operation's
   * attempt; claims again as soon as a slot frees or work is announced, else polls. When the
   * engine stops, the attempts under way are released, and waited for.
   */
  private async dispatchLoop(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    let failures = 0;
    while (!this.abort.signal.aborted) {
      const free = this.config.concurrency - inFlight.size;
      if (free === 0) {
        // Woken by the attempt that frees a slot (or by the stop).
        await this.pause(this.config.pollIntervalMs);
        continue;
      }
      let claimed: OperationRow[];
      // Whatever was announced until now, this claim sees.
      this.kicked = false;
      try {
        claimed = await this.claim(free);
        if (failures > 0) this.log.info('claiming operations works again');
        failures = 0;
      } catch (error) {
        // The database is unreachable (or the claim broke): wait longer each time, log once.
        if (failures++ === 0) this.logFailure(this.log, error, 'claiming an operation failed; trying again');
        await this.pause(this.outageBackoff(failures));
        continue;
      }
      if (this.abort.signal.aborted) {
        // A claim that was on its way when the engine stopped: handed back as it was, uncounted.
        await this.giveBack(claimed).catch((error: unknown) =>
          this.logFailure(
            this.log,
            error,
            'handing back operations claimed while stopping failed; they are taken over once their lease lapses',
          ),
        );
        break;
      }
      for (const operation of claimed) {
        const attempt: Promise<void> = this.attempt(operation).finally(() => {
          inFlight.delete(attempt);
          this.kick();
        });
        inFlight.add(attempt);
      }
      if (claimed.length < free) await this.pause(this.config.pollIntervalMs);
    }
    await Promise.all(inFlight);
  }

  /** Waits `ms`, or less when work is queued or the engine stops. */
  private pause(ms: number): Promise<void> {
    if (this.abort.signal.aborted) return Promise.resolve();
    if (this.kicked) {
      this.kicked = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private outageBackoff(failures: number): number {
    return Math.min(MAX_OUTAGE_BACKOFF_MS, this.config.pollIntervalMs * 2 ** Math.min(failures, 10));
  }

  /**
   * The oldest claimable operations, `limit` at most: queued, or running with a lapsed lease (its
   * worker crashed, or it waits to retry), and the first unfinished operation of its resource (so
   * one claim never takes two operations of one resource). The query is the database function
   * `claim_operations` (migration 0920), which walks the queue in order and stops at `limit`, so
   * a claim costs what it takes, not what is queued.
   */
  private async claim(limit: number): Promise<OperationRow[]> {
    const { rows } = await runPrepared<OperationRow>(this.pool, CLAIM, [this.workerId, this.config.leaseMs, limit]);
    // The UPDATE returns rows in no set order: attempts start oldest first.
    return rows.sort((a, b) => a.seq - b.seq);
  }

  /**
   * One attempt: the backend work, then its record. Never throws. The lease is renewed until the
   * outcome is recorded, not only while the backend works: a success waits its turn in a batch,
   * and an operation whose lease lapsed meanwhile would be attempted again (and its outcome lost).
   */
  private async attempt(operation: OperationRow): Promise<void> {
    const log = this.log.child({ operation_id: operation.id, type: operation.type, attempt: operation.attempt });
    const stopRenewing = this.keepLeased(operation);
    try {
      await this.performAndRecord(operation, log);
    } finally {
      stopRenewing();
    }
  }

  private async performAndRecord(operation: OperationRow, log: Logger): Promise<void> {
    const verdict =
      operation.attempt > operation.max_attempts
        ? // Every attempt was started and none finished: the workers running them kept crashing.
          ({
            kind: 'failed',
            failure: {
              errorClass: 'internal_error',
              errorDetail: `The operation did not finish after ${operation.max_attempts} attempts. [${operation.type}]`,
            },
          } as const)
        : await this.perform(operation, log);
    for (let outageTries = 0; ; outageTries++) {
      try {
        await this.record(operation, verdict, log);
        if (outageTries > 0) log.info('the outcome of the attempt was recorded once the database answered again');
        return;
      } catch (error) {
        // The database is away: the outcome is kept and recorded once it answers (the heartbeat
        // keeps the lease meanwhile), so that an outage neither counts an attempt nor repeats the
        // backend work. Anything else (the executor's bookkeeping broke), or a stop, leaves the
        // operation ours until the lease lapses; it is then claimed and attempted again.
        if (isDatabaseUnavailable(error) && !this.abort.signal.aborted) {
          if (outageTries === 0)
            this.logFailure(log, error, 'recording the outcome of an attempt failed; recorded once the database answers');
          await sleepUnlessAborted(Math.min(MAX_RECORD_RETRY_MS, this.outageBackoff(outageTries + 1)), this.abort.signal);
          continue;
        }
        this.logFailure(log, error, 'recording the outcome of an attempt failed; the operation is attempted again once its lease lapses');
        return;
      }
    }
  }

  /**
   * Renews the operation's lease every third of it until the returned function is called. A
   * renewal after the outcome is recorded changes nothing: it only extends a lease this worker
   * still holds, and recording gives the lease up.
   */
  private keepLeased(operation: OperationRow): () => void {
    let renewing = false;
    const heartbeat = setInterval(
      () => {
        // One renewal at a time: against a stuck database they would pile up.
        if (renewing) return;
        renewing = true;
        this.renewLease(operation)
          .catch(() => {})
          .finally(() => (renewing = false));
      },
      Math.max(50, this.config.leaseMs / 3),
    );
    return () => clearInterval(heartbeat);
  }

  /** Runs the executor's backend work and judges how it ended. */
  private async perform(operation: OperationRow, log: Logger): Promise<Verdict> {
    try {
      const attempt = this.executorFor(operation).perform(operation, { log, signal: this.abort.signal });
      return { kind: 'succeeded', outcome: await untilAborted(attempt, this.abort.signal) };
    } catch (error) {
      return this.judge(operation, error, log);
    }
  }

  private judge(operation: OperationRow, error: unknown, log: Logger): Verdict {
    if (this.abort.signal.aborted) return { kind: 'release' };
    if (isDatabaseUnavailable(error)) {
      // Our own outage is not the operation's failure: it waits and tries again, uncounted.
      log.warn({ reason: (error as Error).message }, 'the database was unavailable during the attempt; retrying');
      return { kind: 'retry', refundAttempt: true };
    }
    if (isConcurrencyConflict(error)) {
      // Nor is a collision with our own concurrent work (a deadlock PostgreSQL broke).
      log.warn({ reason: (error as Error).message }, 'the attempt collided with a concurrent transaction; retrying');
      return { kind: 'retry', refundAttempt: true };
    }
    if (error instanceof PermanentBackendError) {
      log.warn({ reason: error.message }, 'backend refused the operation');
      return {
        kind: 'failed',
        failure: { errorClass: 'backend_rejected', errorDetail: `The ${error.backend} refused the request. [${operation.type}]` },
      };
    }
    const transient = error instanceof TransientBackendError;
    log[transient ? 'warn' : 'error']({ err: transient ? undefined : error, reason: (error as Error).message }, 'operation attempt failed');
    if (operation.attempt < operation.max_attempts) return { kind: 'retry', refundAttempt: false };
    return {
      kind: 'failed',
      failure: transient
        ? {
            errorClass: 'backend_unavailable',
            errorDetail: `The ${error.backend} was unavailable after ${operation.attempt} attempts. [${operation.type}]`,
          }
        : { errorClass: 'internal_error', errorDetail: `The operation failed because of an internal error. [${operation.type}]` },
    };
  }

  private async record(operation: OperationRow, verdict: Verdict, log: Logger): Promise<void> {
    switch (verdict.kind) {
      case 'succeeded':
        return this.succeed(operation, verdict.outcome, log);
      case 'failed':
        return this.fail(operation, verdict.failure, log);
      case 'retry':
        return this.retryLater(operation, verdict.refundAttempt);
      case 'release':
        return this.release(operation);
    }
  }

  /**
   * Records a success. Successes are recorded in batches, one transaction each (at most
   * MAX_SUCCESS_WRITERS at once): those that finish while a batch is being written go together in
   * the next, so under load an operation costs a share of one BEGIN/UPDATE/COMMIT rather than its
   * own. Should a batch fail, each of its operations is recorded alone, so that one broken
   * operation never holds the others back (it alone stays leased, to be attempted again).
   */
  private succeed(operation: OperationRow, outcome: unknown, log: Logger): Promise<void> {
    return new Promise((resolve, reject) => {
      this.successes.push({ operation, outcome, log, resolve, reject });
      void this.recordSuccesses();
    });
  }

  private async recordSuccesses(): Promise<void> {
    if (this.successWriters >= MAX_SUCCESS_WRITERS) return;
    this.successWriters++;
    try {
      // Successes that come in the same turn of the event loop go in one batch.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.successes.length > 0) {
        const batch = this.successes.splice(0, MAX_SUCCESS_BATCH);
        try {
          await withTransaction(this.pool, (tx) => this.succeedAll(tx, batch));
          batch.forEach((success) => success.resolve());
        } catch (error) {
          if (batch.length === 1) {
            batch[0]!.reject(error);
            continue;
          }
          for (const success of batch) {
            await withTransaction(this.pool, (tx) => this.succeedAll(tx, [success])).then(success.resolve, success.reject);
          }
        }
      }
    } finally {
      this.successWriters--;
    }
  }

  /**
   * Marks the batch's operations succeeded (those this worker still holds) and lets each executor
   * record its outcome, in the order the operations were accepted. The executors that succeed in
   * one statement (`succeedsInOneStatement`: a creation) go first and together, in one round trip
   * rather than one each; the others follow one at a time, each free to read before it writes.
   */
  private async succeedAll(tx: PoolClient, batch: PendingSuccess[]): Promise<void> {
    const { rows } = await runPrepared<OperationRow>(tx, FINISH_SUCCEEDED, [batch.map((success) => success.operation.id), this.workerId]);
    const finished = new Map(rows.map((row) => [row.id, row]));
    // The ends are announced in the same transaction; the statement goes at once (the connection
    // pipelines) and is awaited last, so that it costs no round trip of its own.
    const announced = recordEvents(tx, operationEndEvents(rows));
    announced.catch(() => {});
    // The locks are taken before anything else the batch sends (the connection pipelines, in
    // order): the statements that follow need not wait for their answer, and go with them.
    const locked = this.lockResources(tx, rows);
    locked.catch(() => {});
    const inOrder = [...batch].sort((a, b) => a.operation.seq - b.operation.seq);
    const record = async (success: PendingSuccess): Promise<void> => {
      const operation = finished.get(success.operation.id);
      if (!operation) return success.log.warn('lost the lease before finishing; another worker owns the operation');
      const result = await this.executorFor(operation).succeeded(tx, operation, success.outcome);
      if (result) await tx.query('UPDATE operations SET result = $2 WHERE id = $1', [operation.id, JSON.stringify(result)]);
    };
    const inOneStatement = (success: PendingSuccess) => this.executorFor(success.operation).succeedsInOneStatement === true;
    await Promise.all([locked, ...inOrder.filter(inOneStatement).map(record)]);
    for (const success of inOrder.filter((success) => !inOneStatement(success))) await record(success);
    await announced;
  }

  /**
   * Locks the rows the batch's executors will lock, before any of them does: tables by name, rows
   * by id (see `lockingRows`). Their own locks are then taken again, at no cost and no wait.
   */
  private async lockResources(tx: PoolClient, operations: OperationRow[]): Promise<void> {
    // Every statement is sent before the first is answered: sent in one turn, they leave together.
    const idsByTable = new Map<string, string[]>();
    for (const operation of operations) {
      const table = this.executorFor(operation).lockedTable;
      if (table === undefined) continue;
      const ids = idsByTable.get(table);
      if (ids) ids.push(operation.resource_id);
      else idsByTable.set(table, [operation.resource_id]);
    }
    await Promise.all(
      [...idsByTable.keys()]
        .sort()
        .map((table) => tx.query(`SELECT 1 FROM ${table} WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [idsByTable.get(table)])),
    );
  }

  private async fail(operation: OperationRow, failure: OperationFailure, log: Logger): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      const finished = await this.finish(tx, operation, 'failed', failure);
      if (!finished) return log.warn('lost the lease before failing; another worker owns the operation');
      await recordEvents(tx, operationEndEvents([finished]));
      await this.executorFor(operation).failed(tx, finished, failure);
    });
  }

  /**
   * Marks the operation terminal if this worker still holds it; undefined if it does not. The
   * condition makes finishing twice impossible, whoever tries.
   */
  private async finish(
    tx: PoolClient,
    operation: OperationRow,
    state: 'succeeded' | 'failed',
    failure?: OperationFailure,
  ): Promise<OperationRow | undefined> {
    const { rows } = await tx.query<OperationRow>(
      `UPDATE operations SET state = $3, finished_at = now(), error_class = $4, error_detail = $5,
              lease_owner = NULL, lease_expires_at = NULL
       WHERE id = $1 AND lease_owner = $2 AND state = 'running' RETURNING *`,
      [operation.id, this.workerId, state, failure?.errorClass ?? null, failure?.errorDetail ?? null],
    );
    return rows[0];
  }

  /** Lets the operation be claimed again after a backoff; a refunded attempt does not count. */
  private async retryLater(operation: OperationRow, refundAttempt: boolean): Promise<void> {
    const backoff = Math.min(this.config.retryMaxMs, this.config.retryBaseMs * 2 ** Math.max(0, operation.attempt - 1));
    const jittered = backoff * (0.8 + Math.random() * 0.4);
    await this.pool.query(
      `UPDATE operations SET lease_owner = NULL, lease_expires_at = now() + make_interval(secs => $3::double precision / 1000),
              attempt = attempt - $4
       WHERE id = $1 AND lease_owner = $2`,
      [operation.id, this.workerId, jittered, refundAttempt ? 1 : 0],
    );
  }

  private async renewLease(operation: OperationRow): Promise<void> {
    await this.pool.query(
      `UPDATE operations SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
       WHERE id = $1 AND lease_owner = $2`,
      [operation.id, this.workerId, this.config.leaseMs],
    );
  }

  /**
   * Operations claimed but never started, as they were before the claim: the attempt it counted
   * taken back, and one that was queued queued again (and so still cancellable).
   */
  private async giveBack(claimed: OperationRow[]): Promise<void> {
    if (claimed.length === 0) return;
    await this.pool.query(
      `UPDATE operations SET attempt = attempt - 1, lease_owner = NULL, lease_expires_at = now(),
              state = CASE WHEN attempt = 1 THEN 'queued' ELSE state END,
              started_at = CASE WHEN attempt = 1 THEN NULL ELSE started_at END
       WHERE id = ANY($1::uuid[]) AND lease_owner = $2`,
      [claimed.map((operation) => operation.id), this.workerId],
    );
  }

  private async release(operation: OperationRow): Promise<void> {
    await this.pool.query(`UPDATE operations SET lease_owner = NULL, lease_expires_at = now() WHERE id = $1 AND lease_owner = $2`, [
      operation.id,
      this.workerId,
    ]);
  }

  private logFailure(log: Logger, error: unknown, message: string): void {
    if (isDatabaseUnavailable(error)) log.warn({ reason: (error as Error).message }, `${message} (the database is unavailable)`);
    else if (isConcurrencyConflict(error)) log.warn({ reason: (error as Error).message }, `${message} (a concurrent transaction collided)`);
    else log.error({ err: error }, message);
  }

  private executorFor(operation: OperationRow): Executor {
    const executor = this.executors[operation.type];
    if (!executor) throw new Error(`no executor for ${operation.type}`);
    return executor;
  }
}

/**
 * Settles as `work` does, or rejects as soon as `signal` aborts, whichever comes first. Stopping
 * the engine must not wait on an executor that misses or ignores the abort: the attempt is
 * released either way, and whatever the executor still does is repeated by the next attempt
 * (executors are safe to repeat).
 */
/** Waits `ms`, or less when the signal aborts. */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(new Error('the engine is stopping'));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => {});
      reject(new Error('the engine is stopping'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
