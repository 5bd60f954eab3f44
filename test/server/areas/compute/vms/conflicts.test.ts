// A request whose transaction PostgreSQL rolls back to break a deadlock with a concurrent one is
// answered as the contract answers anything transient: 503 service_unavailable with Retry-After,
// nothing changed, and its Idempotency-Key free for the retry. Never a 500.
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { createTestDatabase, startTestServer, type TestServer } from '../../../../support/server.ts';
import { eventually } from '../../../../support/eventually.ts';
import { runningVm } from '../fixtures.ts';

let server: TestServer;
let other: pg.Client;
/**
 * PostgreSQL looks for a deadlock once, deadlock_timeout after a statement starts waiting. The
 * stop's look must come after the test has made the cycle; at the default second, a loaded
 * machine made it late, the stop's look found no cycle and it waited out its statement timeout
 * (503 with Retry-After 5). Five seconds, for every connection of the server to this database,
 * leaves the test that long to make it, and still half the statement timeout (10 s) to spare.
 */
const DEADLOCK_TIMEOUT = '5s';

beforeAll(async () => {
  const databaseUrl = await createTestDatabase({ migrated: true });
  const owner = new pg.Client({ connectionString: databaseUrl });
  await owner.connect();
  await owner.query(`ALTER DATABASE ${await currentDatabase(owner)} SET deadlock_timeout = '${DEADLOCK_TIMEOUT}'`);
  await owner.end();
  server = await startTestServer({ RATE_LIMIT: '100000' }, { databaseUrl });
  other = new pg.Client({ connectionString: server.databaseUrl });
  await other.connect();
  // As another test file of the run might: an advisory lock waited for, in another database.
  const holder = new pg.Client({ connectionString: inject('postgresAdminUrl') });
  await holder.connect();
  await holder.query('SELECT pg_advisory_lock(42)');
  const waiter = new pg.Client({ connectionString: inject('postgresAdminUrl') });
  await waiter.connect();
  void waiter.query('SELECT pg_advisory_lock(42)').catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 500));
});
async function currentDatabase(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ name: string }>('SELECT current_database() AS name');
  return rows[0]!.name;
}

afterAll(async () => {
  await other?.end();
  await server?.close();
});

test('a request chosen as the victim of a deadlock answers 503 with Retry-After, changes nothing, and runs again when retried', async () => {
  const { org } = server;
  const vm = await runningVm(server, org);

  // Another transaction holds the lock under which the instance's operations take their place in
  // line; the stop locks the instance's row, then waits for that lock.
  // Only the stop's backend looks for the deadlock (after DEADLOCK_TIMEOUT of waiting): whichever
  // backend looks first and finds the cycle is the one that fails, and on a loaded machine the
  // other transaction's check, begun a moment later, could run first.
  await other.query("SET deadlock_timeout = '60s'");
  await other.query('BEGIN');
  const lineLock = `operations:${org.orgId}:vm:${vm.id}`;
  await other.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lineLock]);
  const stop = org.call('POST', `/compute/vms/${vm.id}/stop`, { headers: { 'Idempotency-Key': 'stop-after-deadlock' } });
  // The stop is seen waiting for this very lock, blocked by this session, in this database. The
  // test run's PostgreSQL serves every test file at once: a count of all waiting advisory locks
  // could be met by another file's, and the row below be locked before the stop had locked it,
  // which is no deadlock (the stop then waited for the row until its statement timeout: a 503
  // with Retry-After 5). A bigint advisory key is held in pg_locks as classid (high half) and
  // objid (low half).
  const waiter = await eventually(async () => {
    const { rows } = await other.query<{ pid: number; query: string; waitingForMs: number }>(
      `SELECT l.pid, a.query, (extract(epoch FROM clock_timestamp() - a.state_change) * 1000)::int AS "waitingForMs"
       FROM pg_locks l JOIN pg_stat_activity a USING (pid)
       WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)
         AND pg_backend_pid() = ANY(pg_blocking_pids(l.pid))`,
      [lineLock],
    );
    return rows.length === 1 ? rows[0] : undefined;
  }, 'the stop waiting for the lock');
  // The other transaction now asks for the instance's row: each waits for the other. PostgreSQL
  // breaks the cycle after DEADLOCK_TIMEOUT by failing the stop, the one that looks.
  const rowLocked = other.query('SELECT id FROM vms WHERE id = $1 FOR UPDATE', [vm.id]);

  const answer = await stop;
  await rowLocked;
  await other.query('ROLLBACK');
  expect(answer.status, answer.text).toBe(503);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  // Retry-After 5 is a statement timeout, not a deadlock: the waiter seen (its statement, and how
  // long it had waited when seen) says which cycle was not made.
  expect(answer.headers.get('retry-after'), `${answer.text}; the lock's waiter: ${JSON.stringify(waiter)}`).toBe('1');
  expect(answer.body).toMatchObject({ status: 503, code: 'service_unavailable' });
  expect(answer.body.detail).toMatch(/concurrent change/);

  // Nothing was changed: the instance still runs and no stop was queued.
  const after = await org.call('GET', `/compute/vms/${vm.id}`);
  expect(after.body).toMatchObject({ state: 'running', desired_state: 'running' });
  const operations = await org.call('GET', '/operations?resource=vm&limit=100');
  expect(operations.body.items.filter((operation: { type: string }) => operation.type === 'vm.stop')).toEqual([]);

  // The key was released with the 503: the retry runs, and is accepted.
  const retried = await org.call('POST', `/compute/vms/${vm.id}/stop`, { headers: { 'Idempotency-Key': 'stop-after-deadlock' } });
  expect(retried.status, retried.text).toBe(202);
  expect(retried.body.operation.type).toBe('vm.stop');
});
