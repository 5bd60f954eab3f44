// Rows are locked in one order, by id, wherever several instances are locked in one transaction:
// the reconciler's batch of observations, the engine's batch of successes, the scheduler's batch of
// due runs. Two such transactions then wait for each other at most one way and never deadlock
// (the reconciler's batch once deadlocked with an engine batch locking the same rows in the order
// their operations were accepted). Each batch is shown waiting on the instance with the lower id,
// held by the test, while the one with the higher id, which comes first in the batch, is still free.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createScheduler } from '../../../server/areas/compute/schedules/scheduler.ts';
import type { VmServiceDependencies } from '../../../server/areas/compute/vms/vm-service.ts';
import { recordObservations } from '../../../server/areas/compute/vms/vm-rows.ts';
import { systemClock } from '../../../server/core/clock.ts';
import { createOrganizationClock } from '../../../server/core/test-clocks.ts';
import { OperationEngine } from '../../../server/engine/engine.ts';
import { lockingRows, type Executor } from '../../../server/engine/executor.ts';
import { createLogger } from '../../../server/logging.ts';
import { eventually } from '../../support/eventually.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  // No engine of its own: the operations its instances queued wait for the test's engine.
  server = await startTestServer({ BACKGROUND_WORK: 'false' });
});
afterAll(() => server?.close());

/**
 * Two instances, `first` created (and its operation queued) before `second`, whose id is lower:
 * a batch in the order things were accepted meets `first` before `second`, by id the other way.
 */
async function twoInstancesAgainstIdOrder(): Promise<{ first: string; second: string }> {
  const created: string[] = [];
  for (;;) {
    const answer = await server.org.call('POST', '/compute/vms', {
      body: {
        name: `lock-order-${randomUUID().slice(0, 8)}`,
        image: 'ubuntu-24.04',
        region: 'fra1',
        vcpus: 1,
        memory_mb: 1024,
        disk_gb: 20,
        storage_pool: 'fra1-ssd',
        network_profile: 'fra1-standard',
      },
    });
    expect(answer.status, answer.text).toBe(202);
    const id = answer.body.vm.id as string;
    const earlier = created.find((other) => other > id);
    if (earlier !== undefined) return { first: earlier, second: id };
    created.push(id);
  }
}

/**
 * Holds `lower` (as a request holding the row would), runs `batch` until it waits for that lock,
 * and says whether `higher` is free meanwhile; then lets the batch finish.
 */
async function higherFreeWhileWaiting(lower: string, higher: string, batch: () => Promise<unknown>): Promise<boolean> {
  const holder = new pg.Client({ connectionString: server.databaseUrl });
  const probe = new pg.Client({ connectionString: server.databaseUrl });
  await Promise.all([holder.connect(), probe.connect()]);
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM vms WHERE id = $1 FOR UPDATE', [lower]);
    const running = batch();
    running.catch(() => {});
    await eventually(async () => {
      const { rows } = await probe.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> $1`,
        [(holder as unknown as { processID: number }).processID],
      );
      return rows.length > 0 ? true : undefined;
    }, 'the batch to wait for the held instance');
    let free: boolean;
    await probe.query('BEGIN');
    try {
      await probe.query('SELECT 1 FROM vms WHERE id = $1 FOR UPDATE NOWAIT', [higher]);
      free = true;
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03') throw error;
      free = false;
    }
    await probe.query('ROLLBACK');
    await holder.query('ROLLBACK');
    await running;
    return free;
  } finally {
    await Promise.all([holder.end(), probe.end()]);
  }
}

describe('a batch that locks several instances locks them by id', () => {
  test("the reconciler's observations", async () => {
    const { first, second } = await twoInstancesAgainstIdOrder();
    const observedAt = new Date(Date.now() + 60_000);
    const report = (serverId: string) => ({
      serverId,
      status: 'running' as const,
      addresses: { private_ipv4: [], public_ipv4: [], ipv6: [] },
      observedAt,
    });
    const free = await higherFreeWhileWaiting(second, first, () => recordObservations(server.pool, [report(first), report(second)]));
    expect(free).toBe(true);
    const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM vms WHERE id = ANY($1) AND observed_at = $2', [
      [first, second],
      observedAt,
    ]);
    expect(rows[0].n).toBe(2);
  });

  test("the engine's batch of successes, whose operations were accepted in the other order", async () => {
    const { first, second } = await twoInstancesAgainstIdOrder();
    // The creations the two instances queued, recorded by an executor that updates its instance.
    const create: Executor<void> = {
      perform: async () => {},
      async succeeded(tx, operation) {
        await tx.query('UPDATE vms SET updated_at = now() WHERE id = $1', [operation.resource_id]);
      },
      failed: async () => {},
      cancelled: async () => {},
    };
    const engine = new OperationEngine(
      server.pool,
      lockingRows('vms', { 'vm.create': create }),
      { concurrency: 8, pollIntervalMs: 20, leaseMs: 30_000, maxAttempts: 3, retryBaseMs: 20, retryMaxMs: 100 },
      createLogger('silent'),
      `lock-order-${randomUUID().slice(0, 6)}`,
    );
    const finished = async () => {
      const { rows } = await server.pool.query(
        `SELECT count(*)::int AS n FROM operations WHERE resource_id = ANY($1) AND type = 'vm.create' AND state = 'succeeded'`,
        [[first, second]],
      );
      return rows[0].n === 2 ? true : undefined;
    };
    try {
      const free = await higherFreeWhileWaiting(second, first, async () => {
        await engine.start();
        await eventually(finished, 'both creations to be recorded', 20_000);
      });
      expect(free).toBe(true);
    } finally {
      await engine.stop();
    }
  });

  test("the scheduler's due runs, the first due on the instance with the higher id", async () => {
    const { first, second } = await twoInstancesAgainstIdOrder();
    const due = Date.now() - 60_000;
    for (const [vmId, at] of [
      [first, due],
      [second, due + 1_000],
    ] as const) {
      await server.pool.query(
        `INSERT INTO scheduled_actions (id, org_id, vm_id, kind, run_at, timezone, state, next_run_at)
         VALUES ($1, $2, $3, 'once', $4, 'UTC', 'scheduled', $4)`,
        [randomUUID(), server.org.orgId, vmId, new Date(at)],
      );
    }
    // Neither instance is running (nothing created them): each run is refused once its instance is read.
    const scheduler = createScheduler({
      pool: server.pool,
      orgClock: createOrganizationClock(systemClock, false),
      vms: {} as VmServiceDependencies,
    });
    const free = await higherFreeWhileWaiting(second, first, () => scheduler.runDue());
    expect(free).toBe(true);
    const { rows } = await server.pool.query(`SELECT last_outcome FROM scheduled_actions WHERE vm_id = ANY($1)`, [[first, second]]);
    expect(rows).toEqual([{ last_outcome: 'refused' }, { last_outcome: 'refused' }]);
  });
});
