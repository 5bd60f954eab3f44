// The statements run on every request and operation are prepared once per connection
// (server/db/statements.ts). A newer version's migration can change a table while this process
// runs (a rolling deploy): the prepared statements must keep working, on every connection.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { prepared } from '../../../server/db/statements.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
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
