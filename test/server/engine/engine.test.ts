// The operations engine on a real PostgreSQL: retries with backoff, permanent failures with fixed
// phrases, a crashed worker's operation taken over once its lease expires, each operation
// executed by exactly one worker across engines, and cancellation while queued.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { EngineConfig } from '../../../server/config.ts';
import { driverMigrations } from '../../../server/drivers/selection.ts';
import { migrate } from '../../../server/db/migrate.ts';
import { createPool, withTransaction, type Pool } from '../../../server/db/pool.ts';
import { PermanentBackendError, TransientBackendError } from '../../../server/drivers/errors.ts';
import { OperationEngine } from '../../../server/engine/engine.ts';
import type { Executor, ExecutorRegistry } from '../../../server/engine/executor.ts';
import { enqueueOperation, type OperationRow } from '../../../server/engine/operation-record.ts';
import { createLogger } from '../../../server/logging.ts';
import { eventually } from '../../support/eventually.ts';
import { createTestDatabase } from '../../support/server.ts';

const config: EngineConfig = {
  concurrency: 4,
  pollIntervalMs: 20,
  leaseMs: 1000,
  maxAttempts: 4,
  retryBaseMs: 20,
  retryMaxMs: 100,
};

let pool: Pool;
let orgId: string;
const engines: OperationEngine[] = [];

beforeAll(async () => {
  pool = createPool(await createTestDatabase({ migrated: true }), 20);
  await migrate(pool, driverMigrations({ compute: 'simulator', objectStore: 'simulator', billing: 'simulator' }));
  orgId = randomUUID();
  await pool.query("INSERT INTO orgs (id, name) VALUES ($1, 'Engine tests')", [orgId]);
  await pool.query('CREATE TABLE executions (operation_id uuid NOT NULL, attempt integer NOT NULL, UNIQUE (operation_id, attempt))');
  await pool.query('CREATE TABLE applied (operation_id uuid PRIMARY KEY, outcome text NOT NULL)');
});
afterAll(async () => {
  await Promise.all(engines.map((engine) => engine.stop()));
  await pool?.end();
});

/** An executor whose behaviour each test scripts, recording every attempt and what was applied. */
function scriptedExecutor(behaviour: (operation: OperationRow) => Promise<string>): Executor<string> {
  return {
    async perform(operation) {
      await pool.query('INSERT INTO executions (operation_id, attempt) VALUES ($1, $2)', [operation.id, operation.attempt]);
      return behaviour(operation);
    },
    async succeeded(tx, operation, outcome) {
      await tx.query('INSERT INTO applied (operation_id, outcome) VALUES ($1, $2)', [operation.id, outcome]);
      return { outcome };
    },
    async failed(tx, operation, failure) {
      await tx.query('INSERT INTO applied (operation_id, outcome) VALUES ($1, $2)', [operation.id, `failed:${failure.errorClass}`]);
    },
    async cancelled(tx, operation) {
      await tx.query('INSERT INTO applied (operation_id, outcome) VALUES ($1, $2)', [operation.id, 'cancelled']);
    },
  };
}

async function startEngine(executors: Partial<ExecutorRegistry>, overrides: Partial<EngineConfig> = {}): Promise<OperationEngine> {
  const engine = new OperationEngine(
    pool,
    executors,
    { ...config, ...overrides },
    createLogger('silent'),
    `worker-${randomUUID().slice(0, 6)}`,
  );
  await engine.start();
  engines.push(engine);
  return engine;
}

async function enqueue(type: OperationRow['type'], resourceId = randomUUID()): Promise<OperationRow> {
  return enqueueOperation(pool, { orgId, type, resourceType: 'vm', resourceId, maxAttempts: config.maxAttempts });
}

async function finished(operationId: string, timeoutMs = 10_000): Promise<OperationRow> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<OperationRow>('SELECT * FROM operations WHERE id = $1', [operationId]);
    if (rows[0]!.finished_at) return rows[0]!;
    if (Date.now() > deadline) throw new Error(`operation still ${rows[0]!.state}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function appliedOutcomes(operationId: string): Promise<string[]> {
  const { rows } = await pool.query<{ outcome: string }>('SELECT outcome FROM applied WHERE operation_id = $1', [operationId]);
  return rows.map((row) => row.outcome);
}

describe('the operations engine', () => {
  // First in the file: no engine of another test is running yet to claim these operations.
  test('successes are recorded together, and one whose record fails holds back none of the others', async () => {
    const started: Array<() => void> = [];
    let release = () => {};
    const allStarted = new Promise<void>((resolve) => (release = resolve));
    const executor: Executor<string> = {
      ...scriptedExecutor(async () => {
        // All four finish in one turn of the event loop, so their successes form one batch.
        await new Promise<void>((resolve) => {
          started.push(resolve);
          if (started.length === 4) release();
        });
        return 'rescued';
      }),
      async succeeded(tx, operation, outcome) {
        if (operation.payload.broken) throw new Error('the record of this outcome fails');
        await tx.query('INSERT INTO applied (operation_id, outcome) VALUES ($1, $2)', [operation.id, outcome]);
      },
    };
    const engine = await startEngine({ 'vm.rescue': executor }, { leaseMs: 60_000 });
    const queue = (broken: boolean) =>
      enqueueOperation(pool, {
        orgId,
        type: 'vm.rescue',
        resourceType: 'vm',
        resourceId: randomUUID(),
        payload: { broken },
        maxAttempts: 4,
      });
    const good = [await queue(false), await queue(false), await queue(false)];
    const broken = await queue(true);
    engine.kick();
    await allStarted;
    started.forEach((resolve) => resolve());
    for (const operation of good) {
      // Recorded on their first attempt: not left to be attempted again once the lease lapses.
      expect(await finished(operation.id)).toMatchObject({ state: 'succeeded', attempt: 1 });
      expect(await appliedOutcomes(operation.id)).toEqual(['rescued']);
    }
    const { rows } = await pool.query('SELECT state, attempt, finished_at FROM operations WHERE id = $1', [broken.id]);
    expect(rows[0]).toEqual({ state: 'running', attempt: 1, finished_at: null });
    expect(await appliedOutcomes(broken.id)).toEqual([]);
    await engine.stop();
  });

  test('retries transient failures with backoff and succeeds, counting attempts', async () => {
    const failures = new Map<string, number>();
    const engine = await startEngine({
      'vm.start': scriptedExecutor(async (operation) => {
        const failed = failures.get(operation.id) ?? 0;
        if (failed < 2) {
          failures.set(operation.id, failed + 1);
          throw new TransientBackendError('compute backend', 'timeout');
        }
        return 'started';
      }),
    });
    const operation = await enqueue('vm.start');
    engine.kick();
    const done = await finished(operation.id);
    expect(done).toMatchObject({ state: 'succeeded', attempt: 3, error_class: null, error_detail: null, result: { outcome: 'started' } });
    expect(done.finished_at).not.toBeNull();
    expect(await appliedOutcomes(operation.id)).toEqual(['started']);
    await engine.stop();
  });

  test('a permanent failure ends the operation failed at once, with a fixed phrase', async () => {
    const engine = await startEngine({
      'vm.reboot': scriptedExecutor(async () => {
        throw new PermanentBackendError('compute backend', 'HTTP 400 from hv-17.internal: {"error":"bad flavor"}');
      }),
    });
    const operation = await enqueue('vm.reboot');
    const done = await finished(operation.id);
    expect(done).toMatchObject({
      state: 'failed',
      attempt: 1,
      error_class: 'backend_rejected',
      error_detail: 'The compute backend refused the request. [vm.reboot]',
    });
    expect(await appliedOutcomes(operation.id)).toEqual(['failed:backend_rejected']);
    await engine.stop();
  });

  test('transient failures past max_attempts end failed as backend_unavailable', async () => {
    const engine = await startEngine({
      'vm.stop': scriptedExecutor(async () => {
        throw new TransientBackendError('object store', 'connection reset');
      }),
    });
    const operation = await enqueue('vm.stop');
    const done = await finished(operation.id);
    expect(done).toMatchObject({
      state: 'failed',
      attempt: config.maxAttempts,
      error_class: 'backend_unavailable',
      error_detail: `The object store was unavailable after ${config.maxAttempts} attempts. [vm.stop]`,
    });
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM executions WHERE operation_id = $1', [operation.id]);
    expect(rows[0].n).toBe(config.maxAttempts);
    await engine.stop();
  });

  test("a crashed worker's operation is attempted again once its lease expires, and applied once", async () => {
    const operation = await enqueue('vm.rescue');
    // What a worker that died mid-attempt leaves behind: running, attempt 1, a lease that lapsed.
    await pool.query(
      "UPDATE operations SET state = 'running', attempt = 1, started_at = now(), lease_owner = 'dead-worker', lease_expires_at = now() - interval '1 second' WHERE id = $1",
      [operation.id],
    );
    const engine = await startEngine({ 'vm.rescue': scriptedExecutor(async () => 'rescued') });
    const done = await finished(operation.id);
    expect(done).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(await appliedOutcomes(operation.id)).toEqual(['rescued']);
    await engine.stop();
  });

  test('an operation whose lease is still held by a live worker is left alone', async () => {
    const operation = await enqueue('vm.unrescue');
    await pool.query(
      "UPDATE operations SET state = 'running', attempt = 1, lease_owner = 'busy-worker', lease_expires_at = now() + interval '1 hour' WHERE id = $1",
      [operation.id],
    );
    const engine = await startEngine({ 'vm.unrescue': scriptedExecutor(async () => 'unrescued') });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { rows } = await pool.query('SELECT state, attempt FROM operations WHERE id = $1', [operation.id]);
    expect(rows[0]).toEqual({ state: 'running', attempt: 1 });
    await engine.stop();
  });

  test('two engines working one queue execute every operation exactly once', async () => {
    const executors = { 'vm.resize': scriptedExecutor(async () => new Promise((resolve) => setTimeout(() => resolve('resized'), 5))) };
    const [first, second] = [await startEngine(executors), await startEngine(executors)];
    const operations = await Promise.all(Array.from({ length: 40 }, () => enqueue('vm.resize')));
    first.kick();
    second.kick();
    for (const operation of operations) await finished(operation.id);
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE operation_id = ANY($1)', [
      operations.map((operation) => operation.id),
    ]);
    expect(rows[0]!.n).toBe(40);
    const applied = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM applied WHERE operation_id = ANY($1)', [
      operations.map((operation) => operation.id),
    ]);
    expect(applied.rows[0]!.n).toBe(40);
    await Promise.all([first.stop(), second.stop()]);
  });

  test('a queued operation can be cancelled; a started one cannot', async () => {
    const engine = new OperationEngine(
      pool,
      { 'vm.rebuild': scriptedExecutor(async () => 'rebuilt') },
      config,
      createLogger('silent'),
      'cancel-tests',
    );
    const queued = await enqueue('vm.rebuild');
    const cancelled = await withTransaction(pool, (tx) => engine.cancelQueued(tx, orgId, queued.id));
    expect(cancelled?.operation).toMatchObject({ state: 'cancelled' });
    expect(cancelled!.operation.finished_at).not.toBeNull();
    expect(await appliedOutcomes(queued.id)).toEqual(['cancelled']);
    const started = await enqueue('vm.rebuild');
    await pool.query("UPDATE operations SET state = 'running', attempt = 1 WHERE id = $1", [started.id]);
    expect(await withTransaction(pool, (tx) => engine.cancelQueued(tx, orgId, started.id))).toBeUndefined();
    expect(await withTransaction(pool, (tx) => engine.cancelQueued(tx, randomUUID(), queued.id))).toBeUndefined();
  });

  test('a success waiting its turn to be recorded keeps its lease, and is not attempted again', async () => {
    // Recording is slow for reboots: the two batch writers are both busy with one each (the
    // second reboot finishes while the first's batch is being written), and the resize that
    // finishes next waits for a writer about twice as long as its lease lasts. The lease is
    // renewed every third of it: 900 ms leaves a busy machine 600 ms to run each renewal.
    const slowRecord: Executor<string> = {
      ...scriptedExecutor(async (operation) => {
        await new Promise((resolve) => setTimeout(resolve, operation.payload.delayMs as number));
        return 'rebooted';
      }),
      async succeeded(tx, operation, outcome) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        await tx.query('INSERT INTO applied (operation_id, outcome) VALUES ($1, $2)', [operation.id, outcome]);
        return { outcome };
      },
    };
    const resize = scriptedExecutor(async () => new Promise((resolve) => setTimeout(() => resolve('resized'), 250)));
    const engine = await startEngine({ 'vm.reboot': slowRecord, 'vm.resize': resize }, { leaseMs: 900 });
    const [first, second] = [
      await enqueueOperation(pool, {
        orgId,
        type: 'vm.reboot',
        resourceType: 'vm',
        resourceId: randomUUID(),
        maxAttempts: 4,
        payload: { delayMs: 0 },
      }),
      await enqueueOperation(pool, {
        orgId,
        type: 'vm.reboot',
        resourceType: 'vm',
        resourceId: randomUUID(),
        maxAttempts: 4,
        payload: { delayMs: 100 },
      }),
    ];
    const waiting = await enqueue('vm.resize');
    engine.kick();
    expect(await finished(waiting.id)).toMatchObject({ state: 'succeeded', attempt: 1 });
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE operation_id = $1', [waiting.id]);
    expect(rows[0]!.n).toBe(1);
    await finished(first.id);
    await finished(second.id);
    await engine.stop();
  });

  test('operations claimed while the engine stops are handed back as they were, not attempted', async () => {
    const operation = await enqueue('vm.start');
    // The engine's first claim waits behind this lock; the engine is told to stop meanwhile.
    const locker = await pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE operations IN ACCESS EXCLUSIVE MODE');
      const engine = await startEngine({ 'vm.start': scriptedExecutor(async () => 'started') });
      await eventually(async () => {
        const { rows } = await pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'operations'::regclass AND NOT granted",
        );
        return rows[0]!.n > 0 ? true : undefined;
      }, 'the engine to wait for the lock');
      const stopped = engine.stop();
      await locker.query('COMMIT');
      await stopped;
      const { rows } = await pool.query('SELECT state, attempt, lease_owner, started_at FROM operations WHERE id = $1', [operation.id]);
      expect(rows[0]).toEqual({ state: 'queued', attempt: 0, lease_owner: null, started_at: null });
      const { rows: executions } = await pool.query('SELECT count(*)::int AS n FROM executions WHERE operation_id = $1', [operation.id]);
      expect(executions[0].n).toBe(0);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
    }
  });

  test('stopping ends the attempts under way and releases them, so another process takes them at once', async () => {
    // This executor never settles and ignores the abort signal (as a backend call stuck on a dead
    // socket would): stopping must not wait for it.
    const blocking: Executor<string> = {
      ...scriptedExecutor(async () => 'never'),
      async perform(operation) {
        await pool.query('INSERT INTO executions (operation_id, attempt) VALUES ($1, $2)', [operation.id, operation.attempt]);
        return new Promise<string>(() => {});
      },
    };
    const engine = await startEngine({ 'vm.delete': blocking });
    const operation = await enqueue('vm.delete');
    engine.kick();
    while ((await pool.query('SELECT count(*)::int AS n FROM executions WHERE operation_id = $1', [operation.id])).rows[0].n === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await engine.stop();
    const { rows } = await pool.query(
      'SELECT state, attempt, lease_owner, lease_expires_at <= now() AS lapsed FROM operations WHERE id = $1',
      [operation.id],
    );
    expect(rows[0]).toEqual({ state: 'running', attempt: 1, lease_owner: null, lapsed: true });
    const next = await startEngine({ 'vm.delete': scriptedExecutor(async () => 'deleted') }, { leaseMs: 60_000 });
    next.kick();
    expect(await finished(operation.id, 3000)).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(await appliedOutcomes(operation.id)).toEqual(['deleted']);
  });
});
