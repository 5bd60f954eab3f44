// Operations on one resource never overtake each other: many changes fired at once at one
// instance (firewall, power, size) and one bucket (quota), round after round, leave the backend
// holding exactly what the API shows. Backend latency varies widely and many workers run, so
// operations that ran side by side would finish out of order. And, on the engine alone, an
// earlier operation that is retrying holds back the later ones of its resource, and only those.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { driverMigrations } from '../../../server/drivers/selection.ts';
import { migrate } from '../../../server/db/migrate.ts';
import { createPool } from '../../../server/db/pool.ts';
import { TransientBackendError } from '../../../server/drivers/errors.ts';
import { OperationEngine } from '../../../server/engine/engine.ts';
import type { Executor } from '../../../server/engine/executor.ts';
import { enqueueOperation, type OperationRow } from '../../../server/engine/operation-record.ts';
import { createLogger } from '../../../server/logging.ts';
import { runningVm } from '../areas/compute/fixtures.ts';
import { activeBucket } from '../areas/storage/support.ts';
import { eventually } from '../../support/eventually.ts';
import { createTestDatabase, startTestServer, type ApiResponse, type CallOptions, type TestServer } from '../../support/server.ts';

const ROUNDS = 4;
const CHANGES_PER_ROUND = 8;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ WORKER_CONCURRENCY: '8', SIM_LATENCY_MS: '1-80' });
});
afterAll(() => server?.close());

/**
 * A change, sent again after Retry-After for as long as it is answered 503 (nothing changed; on a
 * busy machine a request can find no database connection in time), as the typed client does.
 */
async function sendChange(method: string, path: string, options: CallOptions = {}): Promise<ApiResponse> {
  for (;;) {
    const answer = await server.org.call(method, path, options);
    if (answer.status !== 503) return answer;
    await new Promise((resolve) => setTimeout(resolve, Number(answer.headers.get('retry-after')) * 1000));
  }
}

/** Waits for every operation the accepted answers carry; each must succeed. */
async function allSucceed(answers: ApiResponse[]): Promise<void> {
  const operations = await Promise.all(
    answers.filter((answer) => answer.status === 202).map((answer) => server.waitForOperation(server.org, answer.body.operation.id)),
  );
  for (const operation of operations) expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
}

/**
 * What happened to the instance, for a failed comparison's message: the simulated server (its
 * boots count every start), the instance's operations and its state changes from the event log.
 * This test has failed once in CI with the API showing `stopped` and the hypervisor `running`
 * after every operation had succeeded, and not again in hundreds of rounds since.
 */
async function timelineOf(vmId: string): Promise<string> {
  const [simulated, operations, changes] = await Promise.all([
    server.pool.query('SELECT power, boots, updated_at FROM sim_servers WHERE server_id = $1', [vmId]),
    server.pool.query(
      `SELECT type, state, attempt, created_at, started_at, finished_at, error_class
       FROM operations WHERE resource_id = $1 AND type <> 'vm.firewall' ORDER BY seq`,
      [vmId],
    ),
    server.pool.query(
      `SELECT created_at, data->>'previous_state' AS previous, data->>'state' AS state, data->>'desired_state' AS desired,
              data->>'observed_status' AS observed
       FROM events WHERE resource_id = $1 AND type = 'instance.state_changed' ORDER BY created_at, ctid`,
      [vmId],
    ),
  ]);
  return JSON.stringify({ simulated: simulated.rows[0], operations: operations.rows, stateChanges: changes.rows }, null, 1);
}

const firewallOf = (round: number, change: number) => ({
  inbound: [{ protocol: 'tcp', ports: String(1000 + round * 100 + change), sources: [`198.51.100.${change}/32`] }],
});

describe('operations on one resource run in the order they were accepted', () => {
  test('firewall changes fired at once: the hypervisor ends with the rules the API shows', async () => {
    const vm = await runningVm(server, server.org);
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all(
        Array.from({ length: CHANGES_PER_ROUND }, (_, change) =>
          sendChange('PUT', `/compute/vms/${vm.id}/firewall`, { body: firewallOf(round, change) }),
        ),
      );
      for (const answer of answers) expect(answer.status, answer.text).toBe(202);
      await allSucceed(answers);
      const shown = (await server.org.call('GET', `/compute/vms/${vm.id}/firewall`)).body;
      const { rows } = await server.pool.query('SELECT firewall FROM sim_servers WHERE server_id = $1', [vm.id]);
      expect(rows[0].firewall, `round ${round}`).toEqual(shown.inbound);
    }
  });

  test('power and size changes among firewall changes: power, size and rules on the hypervisor match the API', async () => {
    const vm = await runningVm(server, server.org);
    for (let round = 0; round < ROUNDS; round++) {
      const current = (await server.org.call('GET', `/compute/vms/${vm.id}`)).body;
      // One state change is accepted at a time (the others are 409 vm_state_conflict); the
      // firewall changes queue behind it and must not overtake it, nor each other.
      const stateChanges = [
        sendChange('POST', `/compute/vms/${vm.id}/${current.state === 'running' ? 'stop' : 'start'}`),
        sendChange('POST', `/compute/vms/${vm.id}/resize`, {
          body: { vcpus: 1 + (round % 3), memory_mb: 1024 * (1 + (round % 2)), disk_gb: 20 + round },
        }),
      ];
      const firewall = Array.from({ length: CHANGES_PER_ROUND / 2 }, (_, change) =>
        sendChange('PUT', `/compute/vms/${vm.id}/firewall`, { body: firewallOf(round, change) }),
      );
      const answers = await Promise.all([...stateChanges, ...firewall]);
      for (const answer of answers) {
        if (answer.status !== 202) expect(answer.body.code, answer.text).toBe('vm_state_conflict');
      }
      expect(answers.filter((answer) => answer.status === 202).length).toBeGreaterThan(CHANGES_PER_ROUND / 2);
      await allSucceed(answers);

      const shown = (await server.org.call('GET', `/compute/vms/${vm.id}`)).body;
      const rules = (await server.org.call('GET', `/compute/vms/${vm.id}/firewall`)).body;
      const { rows } = await server.pool.query('SELECT power, vcpus, memory_mb, disk_gb, firewall FROM sim_servers WHERE server_id = $1', [
        vm.id,
      ]);
      const held = {
        power: rows[0].power,
        vcpus: rows[0].vcpus,
        memory_mb: rows[0].memory_mb,
        disk_gb: rows[0].disk_gb,
        firewall: rows[0].firewall,
      };
      const expected = {
        power: shown.state,
        vcpus: shown.vcpus,
        memory_mb: shown.memory_mb,
        disk_gb: shown.disk_gb,
        firewall: rules.inbound,
      };
      expect(held, `round ${round}${isDeepStrictEqual(held, expected) ? '' : `, what happened: ${await timelineOf(vm.id)}`}`).toEqual(
        expected,
      );
    }
  });

  test('bucket quota changes fired at once: the object store ends with the caps the API shows', async () => {
    const bucket = await activeBucket(server, server.org, 'ordered-quotas');
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all(
        Array.from({ length: CHANGES_PER_ROUND }, (_, change) =>
          sendChange('PUT', `/s3/buckets/${bucket.id}/quota`, {
            body: {
              max_objects: 1000 * (round + 1) + change,
              max_size_bytes: change % 2 === 0 ? null : (round + 1) * 1_048_576 * (change + 1),
            },
          }),
        ),
      );
      for (const answer of answers) expect(answer.status, answer.text).toBe(202);
      await allSucceed(answers);
      const shown = (await server.org.call('GET', `/s3/buckets/${bucket.id}`)).body;
      const { rows } = await server.pool.query('SELECT max_objects, max_size_bytes FROM sim_objectstore_buckets WHERE id = $1', [
        bucket.id,
      ]);
      expect({ max_objects: rows[0].max_objects, max_size_bytes: rows[0].max_size_bytes }, `round ${round}`).toEqual(shown.quota);
    }
  });
});

describe('the claim', () => {
  test('an earlier operation waiting to retry holds back the later ones of its resource, and only those', async () => {
    const pool = createPool(await createTestDatabase({ migrated: true }), 4);
    await migrate(pool, driverMigrations({ compute: 'simulator', objectStore: 'simulator', billing: 'simulator' }));
    const orgId = randomUUID();
    await pool.query("INSERT INTO orgs (id, name) VALUES ($1, 'Claim order')", [orgId]);
    // The first operation fails until the other resource's operation has been performed (twice at
    // least): it is retrying meanwhile. Were the other one held back behind it, it would never be
    // performed, and the first would fail for good.
    let flakyAttempts = 0;
    let elsewherePerformed = false;
    const executor: Executor<void> = {
      async perform(operation) {
        if (operation.payload.flaky && (++flakyAttempts <= 2 || !elsewherePerformed))
          throw new TransientBackendError('compute backend', 'busy');
        if (operation.payload.elsewhere) elsewherePerformed = true;
      },
      succeeded: async () => {},
      failed: async () => {},
      cancelled: async () => {},
    };
    const engine = new OperationEngine(
      pool,
      { 'vm.start': executor },
      { concurrency: 4, pollIntervalMs: 10, leaseMs: 2000, maxAttempts: 100, retryBaseMs: 150, retryMaxMs: 150 },
      createLogger('silent'),
      'claim-order',
    );
    const enqueue = (resourceId: string, payload = {}) =>
      enqueueOperation(pool, { orgId, type: 'vm.start', resourceType: 'vm', resourceId, maxAttempts: 100, payload });
    try {
      const [one, other] = [randomUUID(), randomUUID()];
      const first = await enqueue(one, { flaky: true });
      const second = await enqueue(one);
      const elsewhere = await enqueue(other, { elsewhere: true });
      await engine.start();
      const done = await eventually(async () => {
        const { rows } = await pool.query<OperationRow>('SELECT * FROM operations WHERE id = ANY($1)', [
          [first.id, second.id, elsewhere.id],
        ]);
        if (rows.some((row) => row.state === 'failed')) throw new Error(`an operation failed: ${JSON.stringify(rows)}`);
        return rows.every((row) => row.state === 'succeeded') ? new Map(rows.map((row) => [row.id, row])) : undefined;
      }, 'the operations to succeed');
      // The first retried while another resource's operation ran (else it could not have succeeded)...
      expect(done.get(first.id)!.attempt).toBeGreaterThanOrEqual(3);
      expect(elsewherePerformed).toBe(true);
      // ...and the second of its resource started only once it had finished, after its retries.
      expect(done.get(second.id)!.started_at!.getTime()).toBeGreaterThanOrEqual(done.get(first.id)!.finished_at!.getTime());
    } finally {
      await engine.stop();
      await pool.end();
    }
  });
});
