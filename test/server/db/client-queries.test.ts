// The pool's clients run every query through pg's callback form with a read timeout of their own
// (server/db/client-queries.ts) instead of pg's query_timeout. Every form of `query` the code and
// pg-pool use must still answer as pg answers, and a query the server does not answer must fail
// in time, taking with it whatever was sent behind it in its transaction rather than letting that
// take effect later.
import type pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPool, withTransaction, type Pool } from '../../../server/db/pool.ts';
import { isDatabaseUnavailable, READ_TIMEOUT_MESSAGE } from '../../../server/db/unavailable.ts';
import { createTestDatabase } from '../../support/server.ts';

/** PostgreSQL cancels statements after 300 ms; the client stops waiting 1 s after that. */
const TIMEOUTS = { connectionTimeoutMs: 2_000, statementTimeoutMs: 300, idleInTransactionTimeoutMs: 10_000 };
const READ_TIMEOUT_MS = TIMEOUTS.statementTimeoutMs + 1_000;

let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase(), 3, TIMEOUTS);
  await pool.query('CREATE TABLE marks (id int PRIMARY KEY)');
});
afterAll(() => pool?.end());

test('the promise, callback and prepared forms answer as pg does, values and errors alike', async () => {
  expect((await pool.query<{ sum: number }>('SELECT $1::int + $2::int AS sum', [2, 3])).rows).toEqual([{ sum: 5 }]);
  expect((await pool.query({ name: 'marks_count', text: 'SELECT count(*)::int AS n FROM marks WHERE id > $1', values: [0] })).rows).toEqual(
    [{ n: 0 }],
  );
  const client = await pool.connect();
  try {
    const viaCallback = await new Promise<pg.QueryResult>((resolve, reject) =>
      client.query('SELECT $1::text AS word', ['callback'], (error, result) => (error ? reject(error) : resolve(result))),
    );
    expect(viaCallback.rows).toEqual([{ word: 'callback' }]);
    const withoutValues = await new Promise<pg.QueryResult>((resolve, reject) =>
      client.query('SELECT 1 AS one', (error: Error | undefined, result: pg.QueryResult) => (error ? reject(error) : resolve(result))),
    );
    expect(withoutValues.rows).toEqual([{ one: 1 }]);
    const syntaxError = (await client.query('SELEC 1').catch((error: unknown) => error)) as Error & { code?: string };
    expect(syntaxError.code).toBe('42601');
    // Its stack leads back to the code that awaited it, as pg's own promise form makes it do.
    expect(syntaxError.stack).toContain('client-queries.test.ts');
    // A statement PostgreSQL cancels is its error, not the read timeout.
    await expect(client.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
    expect((await client.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
  } finally {
    client.release();
  }
  await withTransaction(pool, (tx) => tx.query('INSERT INTO marks VALUES (1)'));
  expect((await pool.query('SELECT id FROM marks')).rows).toEqual([{ id: 1 }]);
});

test('a query the server does not answer fails at the read timeout; what its transaction sent behind it fails too and never takes effect', async () => {
  const client = await pool.connect();
  // PostgreSQL would wait 3 s: nothing cancels the statement, as when the server is frozen.
  await client.query('SET statement_timeout = 0');
  await client.query('BEGIN');
  const started = Date.now();
  const stuck = client.query('SELECT pg_sleep(3)').then(
    () => 'answered',
    (error: Error) => error,
  );
  // Sent at once behind it (the pool's connections pipeline), with the COMMIT.
  const queued = client.query('INSERT INTO marks VALUES (2)').then(
    () => 'inserted',
    (error: Error) => error,
  );
  const committed = client.query('COMMIT').then(
    () => 'committed',
    (error: Error) => error,
  );
  const stuckError = await stuck;
  const waited = Date.now() - started;
  expect(stuckError).toBeInstanceOf(Error);
  expect((stuckError as Error).message).toBe(READ_TIMEOUT_MESSAGE);
  expect(isDatabaseUnavailable(stuckError)).toBe(true);
  // Not before the read timeout. (Not after the sleep's 3 s either, but that is the message above:
  // an answer from PostgreSQL would be no read timeout, and how late one comes depends on the machine.)
  expect(waited).toBeGreaterThanOrEqual(READ_TIMEOUT_MS - 50);
  expect(await queued).toBeInstanceOf(Error);
  expect(await committed).toBeInstanceOf(Error);
  client.release(stuckError as Error);

  // Past the sleep, the insert has still not taken effect (the connection closed with its
  // transaction open, and PostgreSQL rolled it back), and the pool serves on new connections.
  await new Promise((resolve) => setTimeout(resolve, 3_500 - (Date.now() - started)));
  expect((await pool.query('SELECT id FROM marks ORDER BY id')).rows).toEqual([{ id: 1 }]);
});
