// A transaction never asks for a second connection, nor calls a backend: by construction, the
// pool refuses it at once inside withTransaction (a transaction waiting for another connection
// from a pool whose connections are all held by such transactions waits forever). The
// transaction is rolled back; outside it, the same calls work.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { driverMigrations } from '../../../server/drivers/selection.ts';
import { migrate } from '../../../server/db/migrate.ts';
import { createPool, InsideTransactionError, withTransaction, type Pool } from '../../../server/db/pool.ts';
import { FaultInjector } from '../../../server/drivers/simulators/faults.ts';
import { createObjectStoreSimulator } from '../../../server/drivers/simulators/object-store.ts';
import { createTestDatabase } from '../../support/server.ts';

let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase(), 2);
  await migrate(pool, driverMigrations({ compute: 'simulator', objectStore: 'simulator', billing: 'simulator' }));
  await pool.query('CREATE TABLE marks (note text NOT NULL)');
});
afterAll(() => pool?.end());

const marks = async () => (await pool.query<{ note: string }>('SELECT note FROM marks ORDER BY note')).rows.map((row) => row.note);

describe('inside a transaction', () => {
  test('a query on the pool is refused, and the transaction rolls back', async () => {
    const attempt = withTransaction(pool, async (tx) => {
      await tx.query("INSERT INTO marks VALUES ('rolled back')");
      await pool.query('SELECT 1');
    });
    await expect(attempt).rejects.toBeInstanceOf(InsideTransactionError);
    await expect(attempt).rejects.toThrow(/pool\.query inside a transaction/);
    expect(await marks()).toEqual([]);
  });

  test('a nested transaction (a second connection) is refused, even from a timer the transaction started', async () => {
    await expect(withTransaction(pool, () => withTransaction(pool, async () => 'nested'))).rejects.toThrow(
      /pool\.connect inside a transaction/,
    );
    const later = withTransaction(
      pool,
      () => new Promise((resolve, reject) => setTimeout(() => pool.query('SELECT 1').then(resolve, reject), 10)),
    );
    await expect(later).rejects.toBeInstanceOf(InsideTransactionError);
  });

  test('a backend call is refused', async () => {
    const store = createObjectStoreSimulator({ pool, latencyMs: [0, 0], faults: new FaultInjector(pool, []) });
    await expect(withTransaction(pool, () => store.secrets.destroy('orgs/x/s3-access-keys/y'))).rejects.toThrow(
      /a backend call inside a transaction/,
    );
    // Outside a transaction, the same call works.
    await expect(store.secrets.destroy('orgs/x/s3-access-keys/y')).resolves.toBeUndefined();
  });

  test("the transaction's own client works, and the pool works again once it has committed", async () => {
    await withTransaction(pool, async (tx) => void (await tx.query("INSERT INTO marks VALUES ('committed')")));
    expect(await marks()).toEqual(['committed']);
    // Both connections of the pool are still usable: none was lost to a refused call.
    await Promise.all([pool.query('SELECT pg_sleep(0.05)'), pool.query('SELECT pg_sleep(0.05)')]);
    expect(pool.totalCount).toBeLessThanOrEqual(2);
  });
});

describe('statements sent together', () => {
  const notes = async () => (await pool.query<{ note: string }>('SELECT note FROM together ORDER BY note')).rows.map((row) => row.note);
  beforeAll(() => pool.query('CREATE TABLE together (note text NOT NULL)'));

  test('the final statement goes with the COMMIT, and both the work and it are kept', async () => {
    const result = await withTransaction(
      pool,
      async (tx) => {
        await tx.query("INSERT INTO together VALUES ('work')");
        return 'final';
      },
      (note) => ({ text: 'INSERT INTO together VALUES ($1)', values: [note] }),
    );
    expect(result).toBe('final');
    expect(await notes()).toEqual(['final', 'work']);
  });

  test('a final statement that fails keeps nothing of the transaction, throws its own error, and leaves the connection usable', async () => {
    const attempt = withTransaction(
      pool,
      async (tx) => void (await tx.query("INSERT INTO together VALUES ('lost with the final statement')")),
      () => ({ text: 'INSERT INTO together VALUES (NULL)' }),
    );
    await expect(attempt).rejects.toMatchObject({ code: '23502' });
    expect(await notes()).toEqual(['final', 'work']);
    // Both connections serve the next transactions: neither was left inside the failed one.
    await Promise.all(
      ['again 1', 'again 2'].map((note) =>
        withTransaction(pool, async (tx) => void (await tx.query('INSERT INTO together SELECT $1 FROM pg_sleep(0.05)', [note]))),
      ),
    );
    expect(await notes()).toEqual(['again 1', 'again 2', 'final', 'work']);
  });

  test('a statement sent without waiting for it fails the transaction when it fails: what came before it is not committed', async () => {
    const attempt = withTransaction(pool, async (tx) => {
      await tx.query("INSERT INTO together VALUES ('before the unwatched failure')");
      // Its failure is caught and never looked at; the work returns before it is even answered.
      tx.query('INSERT INTO together VALUES (NULL)').catch(() => {});
    });
    await expect(attempt).rejects.toThrow(/the transaction was rolled back/);
    expect(await notes()).not.toContain('before the unwatched failure');
  });
});
