// A process killed (SIGKILL) in the middle of a group of creations (server/core/write-groups.ts):
// what it had answered 202 is kept and carried out once; what the group had done but not committed
// is gone, none of it half kept; and each request of the group, retried with its key on another
// process, runs once.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { MAX_LEADERS } from '../../../server/core/write-groups.ts';
import { eventually } from '../../support/eventually.ts';
import type { Started } from '../../support/processes.ts';
import { call, createTestDatabase, readBootstrap, startServerProcess, type ApiResponse } from '../../support/server.ts';
import { uniqueName, vmRequest } from '../areas/compute/fixtures.ts';

let databaseUrl: string;
let db: pg.Pool;
const processes: Started[] = [];

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  db = new pg.Pool({ connectionString: databaseUrl, max: 4 });
});

afterAll(async () => {
  await Promise.all(processes.map((started) => started.stop()));
  await db?.end();
});

/** Backends of the test's database waiting on a lock while running a statement that starts with `statement`. */
async function waitingOn(statement: string): Promise<Array<{ pid: number }>> {
  const { rows } = await db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE $1`,
    [`${statement}%`],
  );
  return rows;
}

test('a SIGKILL mid-group loses nothing answered 202 and keeps nothing of the group, which runs once when retried', async () => {
  const doomed = await startServerProcess(databaseUrl, { SIM_LATENCY_MS: '5-20' });
  processes.push(doomed);
  const { org_id: orgId, api_key: apiKey } = await readBootstrap(doomed.dataDir, doomed);
  const create = (url: string, name: string, key?: string): Promise<ApiResponse> =>
    call(url, 'POST', `/v1/orgs/${orgId}/compute/vms`, {
      defaultKey: apiKey,
      body: vmRequest({ name }),
      headers: key ? { 'Idempotency-Key': key } : {},
    });

  // Accepted before anything is held up.
  const before = await Promise.all(Array.from({ length: 5 }, () => create(doomed.url, uniqueName('before'))));
  expect(before.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);

  // Creations take every transaction a group runs at once and wait on the audit table, held by the test; the
  // group's requests queue behind them, three first, then one whose name another transaction holds,
  // then one more.
  const audit = await db.connect();
  const nameHolder = await db.connect();
  const group = [uniqueName('first'), uniqueName('first'), uniqueName('first'), uniqueName('held'), uniqueName('after')].map((name) => ({
    name,
    key: randomUUID(),
  }));
  try {
    await audit.query('BEGIN');
    await audit.query('LOCK TABLE audit_events IN SHARE ROW EXCLUSIVE MODE');
    const leaders = Promise.all(Array.from({ length: MAX_LEADERS }, () => create(doomed.url, uniqueName('leader'))));
    await eventually(
      async () => ((await waitingOn('INSERT INTO audit_events')).length === MAX_LEADERS ? true : undefined),
      'the transactions',
    );
    const claimed = async (requests: typeof group) => {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ANY($1)', [
        requests.map((request) => request.key),
      ]);
      return rows[0]!.n === requests.length ? true : undefined;
    };
    const inGroup: Array<Promise<unknown>> = group
      .slice(0, 3)
      .map((request) => create(doomed.url, request.name, request.key).catch((error: unknown) => error));
    await eventually(() => claimed(group.slice(0, 3)), 'the first three to queue');
    // Then the held one, then the last, one after the other: sent together, the last could queue
    // first and be done with the first three before the group stops at the held name.
    for (const [index, request] of group.slice(3).entries()) {
      inGroup.push(create(doomed.url, request.name, request.key).catch((error: unknown) => error));
      await eventually(() => claimed(group.slice(0, 4 + index)), 'the rest to queue, in order');
    }

    // Another transaction holds the fourth one's name: the group stops there, its first three done.
    await nameHolder.query('BEGIN');
    await nameHolder.query(
      `INSERT INTO vms SELECT * FROM jsonb_populate_record(NULL::vms,
         (SELECT to_jsonb(v) || jsonb_build_object('id', gen_random_uuid(), 'name', $2::text) FROM vms v WHERE id = $1))`,
      [before[0]!.body.vm.id, group[3]!.name],
    );
    await audit.query('ROLLBACK');
    const answered = await leaders;
    expect(answered.every((answer) => answer.status === 202)).toBe(true);
    const [stalled] = await eventually(async () => {
      const waiting = await waitingOn('INSERT INTO vms');
      return waiting.length === 1 ? waiting : undefined;
    }, 'the group to reach the held name');
    // The group's transaction holds the resource locks of the three creations it has made.
    const { rows: held } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND locktype = 'advisory'`,
      [stalled!.pid],
    );
    expect(held[0]!.n).toBe(3);

    process.kill(-doomed.child.pid!, 'SIGKILL');
    await new Promise((resolve) => doomed.child.once('exit', resolve));
    await nameHolder.query('ROLLBACK');
    // None of the group was answered.
    for (const outcome of await Promise.all(inGroup)) expect(outcome).toBeInstanceOf(Error);

    // Nothing of the group was kept: no instance, operation or audit event.
    const { rows: kept } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM vms WHERE name = ANY($1)', [
      group.map((request) => request.name),
    ]);
    expect(kept[0]!.n).toBe(0);

    // Another process carries out every accepted creation, once.
    const survivor = await startServerProcess(databaseUrl, { SIM_LATENCY_MS: '5-20' });
    processes.push(survivor);
    const accepted = [...before, ...answered];
    await eventually(
      async () => {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM operations WHERE id = ANY($1::uuid[]) AND state = 'succeeded'`,
          [accepted.map((answer) => answer.body.operation.id)],
        );
        return rows[0]!.n === accepted.length ? true : undefined;
      },
      'the accepted creations to succeed',
      30_000,
    );
    const vmIds = accepted.map((answer) => answer.body.vm.id);
    const { rows: once } = await db.query<{ vms: number; operations: number; audited: number; servers: number }>(
      `SELECT (SELECT count(*)::int FROM vms WHERE id = ANY($1::uuid[]) AND state = 'running') AS vms,
              (SELECT count(*)::int FROM operations WHERE resource_id = ANY($2::text[])) AS operations,
              (SELECT count(*)::int FROM audit_events WHERE resource_id = ANY($2::text[]) AND action = 'vm.create') AS audited,
              (SELECT count(*)::int FROM sim_servers WHERE server_id = ANY($1::uuid[])) AS servers`,
      [vmIds, vmIds],
    );
    const n = accepted.length;
    expect(once[0]).toEqual({ vms: n, operations: n, audited: n, servers: n });

    // The group's requests, retried with their keys, run now (their process is gone), each once.
    const retried = await Promise.all(group.map((request) => create(survivor.url, request.name, request.key)));
    expect(retried.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
    expect(retried.map((answer) => answer.headers.get('idempotent-replayed'))).toEqual([null, null, null, null, null]);
    const { rows: made } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM vms WHERE name = ANY($1)', [
      group.map((request) => request.name),
    ]);
    expect(made[0]!.n).toBe(5);
  } finally {
    // Dropped rather than reused: a failed test may leave either in its transaction.
    audit.release(true);
    nameHolder.release(true);
  }
});
