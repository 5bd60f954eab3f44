// The store's write groups (server/drivers/embedded/org-write-groups.ts): one organization's
// writes that arrive while a transaction of its writes is under way share the next one; each is
// still its own write (a refused one rolls back alone and hears so only once the group has
// committed), and another organization's writes never wait for them.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPool, type Pool, type PoolClient } from '../../../../server/db/pool.ts';
import { OrgWriteGroups, type Batch, type Outcome } from '../../../../server/drivers/embedded/org-write-groups.ts';
import { eventually } from '../../../support/eventually.ts';
import { createTestDatabase } from '../../../support/server.ts';

let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase({ migrated: true }), 6);
  await pool.query('CREATE TABLE written (id text PRIMARY KEY, org text NOT NULL)');
  await pool.query('CREATE TABLE gate (org text PRIMARY KEY)');
});
afterAll(() => pool?.end());

/** A write as the store makes one: it takes its organization's lock (here a row of `gate`), then writes its row. */
const write =
  (org: string, id: string, refuse = false) =>
  async (tx: PoolClient): Promise<string> => {
    await tx.query('SELECT 1 FROM gate WHERE org = $1 FOR UPDATE', [org]);
    await tx.query('INSERT INTO written (id, org) VALUES ($1, $2)', [id, org]);
    if (refuse) throw new Error(`refused ${id}`);
    const { rows } = await tx.query<{ xid: string }>('SELECT txid_current()::text AS xid');
    return rows[0]!.xid;
  };

const stored = async (ids: string[]) =>
  (await pool.query<{ id: string }>('SELECT id FROM written WHERE id = ANY($1) ORDER BY id', [ids])).rows.map((row) => row.id);

/** Holds `org`'s lock from another connection until the returned function is called. */
async function holdLock(org: string): Promise<() => Promise<void>> {
  const blocker = await pool.connect();
  await blocker.query('BEGIN');
  await blocker.query('SELECT 1 FROM gate WHERE org = $1 FOR UPDATE', [org]);
  return async () => {
    await blocker.query('ROLLBACK');
    blocker.release();
  };
}

/** Waits until a transaction waits on a row lock (the group's first write, behind the blocker). */
const someoneWaitsOnALock = () =>
  eventually(async () => {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    return rows[0]!.n >= 1 ? true : undefined;
  }, 'a write to wait on the lock');

describe("an organization's writes", () => {
  test('that arrive together share a transaction; a refused one rolls back alone, and hears so after the commit', async () => {
    const groups = new OrgWriteGroups(pool);
    const org = randomUUID();
    await pool.query('INSERT INTO gate (org) VALUES ($1)', [org]);
    const release = await holdLock(org);
    const firstId = `first-${org}`;
    const first = groups.run(org, write(org, firstId));
    await someoneWaitsOnALock();
    const ids = Array.from({ length: 5 }, (_, index) => `queued-${index}-${org}`);
    const queued = ids.map((id, index) => groups.run(org, write(org, id, index === 2)));
    const heard: string[] = [];
    const refusal = queued[2]!.then(
      () => 'stored',
      (error: Error) => {
        heard.push('refused');
        return error.message;
      },
    );
    for (const [index, each] of queued.entries())
      if (index !== 2) void each.then((done) => done.committed.then(() => heard.push('committed')));
    await release();

    const firstWrite = await first;
    await firstWrite.committed;
    const done = await Promise.all(queued.filter((_, index) => index !== 2));
    // The four stored writes were one transaction, not the first one's.
    expect(new Set(done.map((each) => each.result)).size).toBe(1);
    expect(done[0]!.result).not.toBe(firstWrite.result);
    await Promise.all(done.map((each) => each.committed));
    const kept = ids.filter((_, index) => index !== 2);
    // The refusal came once the others were committed, and left nothing.
    expect(await refusal).toBe(`refused ${ids[2]}`);
    expect(heard).toEqual(['committed', 'committed', 'committed', 'committed', 'refused']);
    expect(await stored([firstId, ...ids])).toEqual([firstId, ...kept].sort());
  });

  test("wait for nothing of another organization's", async () => {
    const groups = new OrgWriteGroups(pool);
    const [blocked, free] = [randomUUID(), randomUUID()];
    await pool.query('INSERT INTO gate (org) VALUES ($1), ($2)', [blocked, free]);
    const release = await holdLock(blocked);
    try {
      const waiting = groups.run(blocked, write(blocked, `waiting-${blocked}`));
      await someoneWaitsOnALock();
      const other = await groups.run(free, write(free, `other-${free}`));
      await other.committed;
      expect(await stored([`other-${free}`, `waiting-${blocked}`])).toEqual([`other-${free}`]);
      await release();
      await (
        await waiting
      ).committed;
      expect(await stored([`waiting-${blocked}`])).toEqual([`waiting-${blocked}`]);
    } finally {
      await release().catch(() => {});
    }
  });

  test("a batch's writes next to each other in a group go in one call, in order, each refused alone", async () => {
    const groups = new OrgWriteGroups(pool);
    const org = randomUUID();
    await pool.query('INSERT INTO gate (org) VALUES ($1)', [org]);
    // Each call is one run of the batch (store_commit_puts sends it as one statement); its items go
    // in order, a refused one alone.
    const runs: string[][] = [];
    const inserts: Batch<string, string> = {
      async run(tx, ids) {
        runs.push(ids);
        const outcomes: Array<Outcome<string>> = [];
        for (const id of ids) {
          if (id.startsWith('refused-')) outcomes.push({ ok: false, error: new Error(id) });
          else outcomes.push({ ok: true, result: (await write(org, id)(tx)) && id });
        }
        return outcomes;
      },
    };
    const release = await holdLock(org);
    const first = groups.run(org, write(org, `lone-${org}`));
    await someoneWaitsOnALock();
    // Queued behind the lock: three of the batch, a plain write, then two more of the batch.
    const ids = ['b1', 'refused-b2', 'b3', 'plain', 'b4', 'b5'].map((id) => `${id}-${org}`);
    const queued = ids.map((id) => (id.startsWith('plain') ? groups.run(org, write(org, id)) : groups.runBatched(org, inserts, id)));
    const outcomes = Promise.all(
      queued.map((each) =>
        each.then(
          ({ result }) => String(result),
          (error: Error) => `refused: ${error.message}`,
        ),
      ),
    );
    await release();
    await (
      await first
    ).committed;
    const settled = await outcomes;
    expect(runs).toEqual([ids.slice(0, 3), ids.slice(4)]);
    expect(settled[0]).toBe(ids[0]);
    expect(settled[1]).toBe(`refused: ${ids[1]}`);
    expect(settled.slice(4)).toEqual(ids.slice(4));
    expect(await stored([`lone-${org}`, ...ids])).toEqual([`lone-${org}`, ...ids.filter((id) => !id.startsWith('refused'))].sort());
  });

  test('a broken transaction fails every write of its group, and the next group goes on', async () => {
    const groups = new OrgWriteGroups(pool);
    const org = randomUUID();
    await pool.query('INSERT INTO gate (org) VALUES ($1)', [org]);
    const release = await holdLock(org);
    const first = groups.run(org, write(org, `a-${org}`));
    await someoneWaitsOnALock();
    // The second write ends its connection's session: the whole group fails with it.
    const killer = groups.run(org, async (tx) => {
      await write(org, `b-${org}`)(tx);
      await tx.query('SELECT pg_terminate_backend(pg_backend_pid())');
    });
    const bystander = groups.run(org, write(org, `c-${org}`));
    await release();
    await (
      await first
    ).committed;
    await expect(killer).rejects.toThrow();
    await expect(bystander).rejects.toThrow();
    await (
      await groups.run(org, write(org, `d-${org}`))
    ).committed;
    expect(await stored([`a-${org}`, `b-${org}`, `c-${org}`, `d-${org}`])).toEqual([`a-${org}`, `d-${org}`]);
  });
  test("commit only once every write's beforeCommit has settled; one that fails fails the group, and nothing of it is kept", async () => {
    const groups = new OrgWriteGroups(pool);
    for (const outcome of ['durable', 'disk failed'] as const) {
      const org = randomUUID();
      await pool.query('INSERT INTO gate (org) VALUES ($1)', [org]);
      const release = await holdLock(org);
      const first = groups.run(org, write(org, `first-${org}`));
      await someoneWaitsOnALock();
      let settle!: (failed: boolean) => void;
      const durable = new Promise<void>(
        (resolve, reject) => (settle = (failed) => (failed ? reject(new Error('fsync failed')) : resolve())),
      );
      // As the store's own is: a failure is the group's to report.
      durable.catch(() => {});
      const ids = [`a-${org}`, `b-${org}`, `c-${org}`];
      const queued = ids.map((id, index) => groups.run(org, write(org, id), index === 1 ? durable : undefined));
      const settled = queued.map((each) =>
        each
          .then((done) => done.committed)
          .then(
            () => 'committed',
            (error: Error) => error.message,
          ),
      );
      await release();
      await (
        await first
      ).committed;
      // The group's statements are done and it holds the lock, but it may not commit yet.
      await eventually(async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
           WHERE a.state = 'idle in transaction' AND l.relation = 'written'::regclass`,
        );
        return rows[0]!.n >= 1 ? true : undefined;
      }, 'the group to wait for its beforeCommit');
      expect(await stored(ids)).toEqual([]);
      settle(outcome === 'disk failed');
      if (outcome === 'durable') {
        expect(await Promise.all(settled)).toEqual(['committed', 'committed', 'committed']);
        expect(await stored(ids)).toEqual([...ids].sort());
      } else {
        expect(await Promise.all(settled)).toEqual(['fsync failed', 'fsync failed', 'fsync failed']);
        expect(await stored(ids)).toEqual([]);
      }
    }
  });
});
