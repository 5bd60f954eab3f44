// The statements run on every request and operation are prepared once per connection
// (server/db/statements.ts). A newer version's migration can change a table while this process
// runs (a rolling deploy): the prepared statements must keep working, on every connection.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPool } from '../../../server/db/pool.ts';
import { prepared, runGenericAlone } from '../../../server/db/statements.ts';
import { createTestDatabase, startTestServer, type TestServer } from '../../support/server.ts';
import { vmRequest } from '../areas/compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

test('columns added by a migration while the server runs break neither reads, creations nor the engine', async () => {
  const { org } = server;
  const first = await org.call('POST', '/compute/vms', { body: vmRequest({ name: 'before-migration' }) });
  expect(first.status).toBe(202);
  await server.waitForOperation(org, first.body.operation.id);
  // Every pooled connection has prepared the reads: many at once spread over the pool.
  const reads = await Promise.all(Array.from({ length: 20 }, () => org.call('GET', `/compute/vms/${first.body.vm.id}`)));
  expect(reads.map((read) => read.status)).toEqual(Array(20).fill(200));
  expect((await org.call('GET', '/billing')).status).toBe(200);

  // What a newer version's migration might do to the tables these statements read and return.
  for (const table of ['vms', 'operations', 'billing_accounts', 'sim_servers'])
    await server.pool.query(`ALTER TABLE ${table} ADD COLUMN added_by_a_later_version text`);

  const again = await Promise.all(Array.from({ length: 20 }, () => org.call('GET', `/compute/vms/${first.body.vm.id}`)));
  expect(again.map((read) => read.status)).toEqual(Array(20).fill(200));
  expect(again[0]!.body).toMatchObject({ id: first.body.vm.id, name: 'before-migration', state: 'running' });
  expect((await org.call('GET', '/billing')).status).toBe(200);
  const second = await org.call('POST', '/compute/vms', { body: vmRequest({ name: 'after-migration' }) });
  expect(second.status, second.text).toBe(202);
  expect((await server.waitForOperation(org, second.body.operation.id)).state).toBe('succeeded');
  expect((await org.call('GET', `/compute/vms/${second.body.vm.id}`)).body.state).toBe('running');
});

test('a statement to prepare that returns * is refused when it is defined', () => {
  expect(() => prepared('test_star', 'SELECT * FROM vms WHERE id = $1')).toThrow(/name the columns/);
  expect(() => prepared('test_returning_star', 'UPDATE vms SET name = $2 WHERE id = $1 RETURNING *')).toThrow(/name the columns/);
  expect(() => prepared('test_alias_star', 'SELECT v.* FROM vms v')).toThrow(/name the columns/);
  expect(prepared('test_columns', 'SELECT count(*) AS n FROM vms').name).toBe('test_columns');
});

test('two different statements under one name are refused', () => {
  prepared('test_twice', 'SELECT id FROM vms WHERE id = $1');
  expect(prepared('test_twice', 'SELECT id FROM vms WHERE id = $1').name).toBe('test_twice');
  expect(() => prepared('test_twice', 'SELECT name FROM vms WHERE id = $1')).toThrow(/two prepared statements/);
});

test('a statement run alone on its generic plan is kept when it succeeds, undone when it fails, and leaves its connection as it was', async () => {
  const pool = createPool(await createTestDatabase(), 1);
  try {
    await pool.query('CREATE TABLE generic_alone (id integer PRIMARY KEY)');
    const insert = prepared('test_generic_alone', 'INSERT INTO generic_alone SELECT unnest($1::int[]) RETURNING id');
    expect((await runGenericAlone<{ id: number }>(pool, insert, [[1, 2]])).rows).toEqual([{ id: 1 }, { id: 2 }]);
    // A failure (a duplicate key) keeps nothing of the statement: 3 is not there.
    await expect(runGenericAlone(pool, insert, [[3, 1]])).rejects.toMatchObject({ code: '23505' });
    expect((await runGenericAlone<{ id: number }>(pool, insert, [[4]])).rows).toEqual([{ id: 4 }]);
    expect((await pool.query('SELECT id FROM generic_alone ORDER BY id')).rows).toEqual([{ id: 1 }, { id: 2 }, { id: 4 }]);
    // One connection: every run used the generic plan, and the setting ended with each.
    expect((await pool.query('SHOW plan_cache_mode')).rows).toEqual([{ plan_cache_mode: 'auto' }]);
    const { rows } = await pool.query(`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'test_generic_alone'`);
    expect(rows).toEqual([{ generic_plans: 3, custom_plans: 0 }]);
  } finally {
    await pool.end();
  }
});
