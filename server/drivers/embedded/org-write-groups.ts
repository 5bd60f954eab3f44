import { withTransactionCommitLater, type Pool, type PoolClient } from '../../db/pool.ts';
import { isDatabaseUnavailable } from '../../db/unavailable.ts';

/**
 * The store's writes of one organization, in transactions they share.
 *
 * Every write takes its organization's row lock (quota.ts: the quotas stay exact) and holds it
 * through its COMMIT, whose WAL flush is most of the time it holds it. One organization's writes
 * therefore committed one after another: about 160 small PUTs a second here, whatever the
 * number of clients. Now a write that finds a transaction of its organization under way waits
 * for the next one, with every write that arrives meanwhile, and they share its BEGIN, its locks
 * and its COMMIT: one WAL flush for the group.
 *
 * Each write stays its own, as in core/write-groups.ts:
 * - its work runs alone, in order of arrival, each seeing what the earlier ones wrote as it would
 *   after their commits (space they reserved, a version of the same key);
 * - in a savepoint: a write its work refuses (a quota, a condition) is rolled back to it, alone;
 * - a write learns it failed only once its group's transaction has ended (its refusal may rest
 *   on what an earlier write of the group held); one that succeeded gets its result at once and
 *   the group's COMMIT as a promise (a reservation streams its bytes meanwhile).
 *
 * Groups are per organization: their transactions take the organization's lock first, so two
 * groups never wait on each other in opposite orders. One group's statements run while the group
 * before it commits; it waits for that group's locks, then for nothing else.
 */

/** Writes in one transaction at most: each savepoint that writes takes a subtransaction id, and
 * PostgreSQL keeps 64 of them per transaction in shared memory. */
const MAX_GROUP = 32;

/** What a write's work returned, and the COMMIT that makes it durable. */
export interface GroupedWrite<T> {
  result: T;
  committed: Promise<void>;
}

type Work = (tx: PoolClient) => Promise<unknown>;

/** What became of one write of a group: its result, or what refused it. */
export type Outcome<Result = unknown> = { ok: true; result: Result } | { ok: false; error: unknown };

/**
 * Writes of one kind that a group sends to the database together: the writes of a run of them
 * (one after another in the group) go in one statement, which carries out each alone and in
 * order, as a work in its savepoint would be (a refusal, or an error, is that write's alone).
 * Under load each round trip of a group waits for its thread's turn; one for the run rather than
 * one per write is what lets the organization's writes go faster than one such wait each.
 */
export interface Batch<Item, Result> {
  run(tx: PoolClient, items: Item[]): Promise<Array<Outcome<Result>>>;
}

interface Waiting {
  work: Work | { batch: Batch<unknown, unknown>; item: unknown };
  /** Settles before the group may commit (the write's bytes made durable); a failure fails the group. */
  beforeCommit?: Promise<unknown>;
  resolve: (write: GroupedWrite<unknown>) => void;
  reject: (error: unknown) => void;
}

export class OrgWriteGroups {
  /** Organizations with a group under way: the writes waiting for their next one. */
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  /**
   * Runs `work` in a transaction of the organization's writes; resolves once its statements are
   * done. `beforeCommit`: what must be done before the transaction may commit (a row naming a
   * file is committed only once the file is durable), waited for after the group's statements,
   * so that it overlaps them. Should it fail, the whole group rolls back and fails with it (a disk
   * that cannot make a file durable; rolling back one write after its savepoint was released is
   * not possible): each of its writes then cleans up after itself, as after any failure.
   */
  run<T>(orgId: string, work: (tx: PoolClient) => Promise<T>, beforeCommit?: Promise<unknown>): Promise<GroupedWrite<T>> {
    return this.enqueue(orgId, work, beforeCommit);
  }

  /** `run`, for a write that is an item of a batch: sent with the batch's other items next to it in its group. */
  runBatched<Item, T>(orgId: string, batch: Batch<Item, T>, item: Item, beforeCommit?: Promise<unknown>): Promise<GroupedWrite<T>> {
    return this.enqueue(orgId, { batch, item }, beforeCommit);
  }

  private enqueue<T>(orgId: string, work: Waiting['work'], beforeCommit: Promise<unknown> | undefined): Promise<GroupedWrite<T>> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { work, beforeCommit, resolve: resolve as (write: GroupedWrite<unknown>) => void, reject };
      const queue = this.waiting.get(orgId);
      if (queue) {
        queue.push(waiting);
        return;
      }
      this.waiting.set(orgId, [waiting]);
      void this.lead(orgId);
    });
  }

  /** Runs the organization's groups while writes wait. */
  private async lead(orgId: string): Promise<void> {
    const queue = this.waiting.get(orgId)!;
    let committing: Promise<void> = Promise.resolve();
    try {
      while (queue.length > 0) {
        const group = queue.splice(0, MAX_GROUP);
        // The next group starts as soon as this one has sent its COMMIT (its first statement waits
        // for the locks); at most two transactions of the organization, one committing.
        const { ended } = await this.runGroup(group);
        await committing;
        committing = ended;
      }
    } catch (error) {
      // Not expected (runGroup settles every write it takes), but never a queue without a leader,
      // whose writes would wait forever: those waiting fail, and the next write leads anew.
      for (const waiting of queue.splice(0)) waiting.reject(error);
    } finally {
      // In the same turn as the loop's last look at the queue: no write can slip in between.
      this.waiting.delete(orgId);
    }
  }

  /** Runs a group's writes; resolves once their statements are done, with the end of its COMMIT. */
  private async runGroup(group: Waiting[]): Promise<{ ended: Promise<void> }> {
    let transaction: { result: Outcome[]; committed: Promise<void> };
    try {
      transaction = await withTransactionCommitLater(this.pool, async (tx) => {
        const outcomes = await runInSavepoints(tx, group);
        // Only the writes that stay in the transaction: a refused one's file is not committed.
        const durable = group.flatMap(({ beforeCommit }, index) => (outcomes[index]!.ok && beforeCommit ? [beforeCommit] : []));
        await Promise.all(durable);
        return outcomes;
      });
    } catch (error) {
      for (const { reject } of group) reject(error);
      return { ended: Promise.resolve() };
    }
    const { result: outcomes, committed } = transaction;
    const ended = committed.catch(() => {});
    group.forEach(({ resolve, reject }, index) => {
      const outcome = outcomes[index]!;
      if (outcome.ok) resolve({ result: outcome.result, committed });
      else void ended.then(() => reject(outcome.error));
    });
    return { ended };
  }
}

/**
 * Each write's work in a savepoint of its own, and each run of a batch's items in one statement
 * (which gives each item a subtransaction of its own). A savepoint is sent with the work's first
 * statement and released with the next one's: no round trip of their own. Should a release fail,
 * the transaction fails as a whole (rolling back to a later write's savepoint would then undo an
 * earlier write already counted as done).
 */
async function runInSavepoints(tx: PoolClient, group: Waiting[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let released: Promise<unknown> = Promise.resolve();
  for (let index = 0; index < group.length;) {
    const { work } = group[index]!;
    if (typeof work !== 'function') {
      // The run: this item and the same batch's items right after it.
      const items = [work.item];
      for (index++; index < group.length; index++) {
        const next = group[index]!.work;
        if (typeof next === 'function' || next.batch !== work.batch) break;
        items.push(next.item);
      }
      await released;
      // A failure of the statement itself (not of an item) fails the transaction.
      outcomes.push(...(await work.batch.run(tx, items)));
      continue;
    }
    const savepoint = tx.query('SAVEPOINT store_write');
    savepoint.catch(() => {});
    try {
      const result = await work(tx);
      await Promise.all([released, savepoint]);
      released = tx.query('RELEASE SAVEPOINT store_write');
      released.catch(() => {});
      outcomes.push({ ok: true, result });
    } catch (error) {
      await released;
      // The connection is gone: the transaction, every write of it, fails.
      if (isDatabaseUnavailable(error)) throw error;
      await Promise.all([tx.query('ROLLBACK TO SAVEPOINT store_write'), tx.query('RELEASE SAVEPOINT store_write')]);
      outcomes.push({ ok: false, error });
    }
    index++;
  }
  await released;
  return outcomes;
}

const groups = new WeakMap<Pool, OrgWriteGroups>();

/** The write groups of a pool's connections (one per pool: the S3 thread and the API's have each their own). */
export function orgWriteGroups(pool: Pool): OrgWriteGroups {
  let found = groups.get(pool);
  if (!found) {
    found = new OrgWriteGroups(pool);
    groups.set(pool, found);
  }
  return found;
}
