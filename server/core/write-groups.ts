import type pg from 'pg';
import { groupedCall } from '../db/batched-lookup.ts';
import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import { isConcurrencyConflict, isDatabaseUnavailable } from '../db/unavailable.ts';

/**
 * Group acceptance: the changes of requests that arrive together committed in one transaction.
 *
 * Under load most of what a small change costs is its transaction, not its statements: BEGIN,
 * COMMIT and its WAL flush, the wake-ups of PostgreSQL's backend and of this process, a connection
 * taken from the pool and given back. A request that finds `MAX_LEADERS` transactions of its
 * group already under way waits for the next one, with everything else that arrived meanwhile
 * (`MAX_GROUP` at most), and those requests then share its BEGIN and COMMIT.
 *
 * Each request's change stays its own:
 * - its work runs alone, one request after another in the order they arrived, so each sees what
 *   the earlier ones changed as it would after their commits (a name taken, a budget spent);
 * - its work and its final statements (its audit event, its Idempotency-Key's completion, its
 *   events) run inside a savepoint: a request that fails is rolled back to it, alone, and the
 *   others go on;
 * - nobody is answered before the COMMIT (a failed request neither: its answer may rest on what
 *   an earlier request of the group changed). A crash before the COMMIT keeps none of the group,
 *   and none of them was answered; after it, all of them are kept.
 *
 * Requests whose work may wait on each other's locks must not be grouped: inside one transaction
 * they would not wait, and two groups taking such locks in different orders would deadlock. The
 * grouped writes are creations, which lock only what they create.
 */

/** Transactions of one group under way at once: the others' requests wait for the next. */
export const MAX_LEADERS = 3;
/**
 * Requests in one transaction at most. Each savepoint that writes takes a subtransaction id, and
 * PostgreSQL keeps 64 of them per transaction in shared memory; past that, every other session's
 * snapshot has to look them up on disk.
 */
const MAX_GROUP = 32;

/** A request's change, as a group runs it: its work, then its final statements. */
export interface GroupedChange<T> {
  work: (tx: PoolClient) => Promise<T>;
  /** The statements that end the change (audit, key, events), given its result. */
  finalStatements: (result: T) => readonly pg.QueryConfig[];
}

type Outcome = { ok: true; result: unknown } | { ok: false; error: unknown };

/** The grouped changes of one pool. */
class WriteGroup {
  private readonly pool: Pool;
  /** A change's outcome in the transaction of the group it went in: MAX_LEADERS groups under way, MAX_GROUP changes each. */
  private readonly committed: (change: GroupedChange<unknown>) => Promise<Outcome>;

  constructor(pool: Pool) {
    this.pool = pool;
    this.committed = groupedCall(
      (changes: GroupedChange<unknown>[]) =>
        this.commit(changes).catch((error: unknown) => changes.map((): Outcome => ({ ok: false, error }))),
      { leaders: MAX_LEADERS, maxBatch: MAX_GROUP },
    );
  }

  async run<T>(change: GroupedChange<T>): Promise<T> {
    const outcome = await this.committed(change as GroupedChange<unknown>);
    if (outcome.ok) return outcome.result as T;
    // A collision with another group (two groups creating one name in opposite orders deadlock
    // where two transactions of one request each would only wait): the change is run again alone,
    // as it would have run ungrouped.
    if (isConcurrencyConflict(outcome.error)) return withTransaction(this.pool, change.work, change.finalStatements);
    // The error is the change's own, as thrown (a problem, a database error): passed on as is.
    throw outcome.error;
  }

  /**
   * One transaction for the group: each change in its savepoint. A change's final statements and
   * release are not waited for: they leave with the next change's savepoint and first statements,
   * one round trip per change. Should they fail, the transaction stops there (what follows fails
   * too): it goes back to that change's savepoint, which its failed release left in place, and the
   * next change runs again. Throws if the transaction fails as a whole.
   */
  private commit(group: GroupedChange<unknown>[]): Promise<Outcome[]> {
    return withTransaction(this.pool, async (tx) => {
      const outcomes: Outcome[] = [];
      const rollBack = () => Promise.all([tx.query('ROLLBACK TO SAVEPOINT grouped_write'), tx.query('RELEASE SAVEPOINT grouped_write')]);
      /** The last change whose work succeeded, its final statements sent: their error, or undefined once they succeeded. */
      let ending: { index: number; result: unknown; failure: Promise<unknown> } | undefined;
      const ended = async (): Promise<void> => {
        if (!ending) return;
        const { index, result, failure } = ending;
        ending = undefined;
        const error = await failure;
        if (error === undefined) {
          outcomes[index] = { ok: true, result };
          return;
        }
        if (isDatabaseUnavailable(error)) throw error as Error;
        await rollBack();
        outcomes[index] = { ok: false, error };
      };
      for (let index = 0; index < group.length; index++) {
        const change = group[index]!;
        // Sent with the change's first statement: no round trip of its own.
        const savepoint = tx.query('SAVEPOINT grouped_write');
        savepoint.catch(() => {});
        let result: unknown;
        let finals: readonly pg.QueryConfig[];
        try {
          result = await change.work(tx);
          // Answered after everything sent before it: the previous change's final statements succeeded.
          await savepoint;
          finals = change.finalStatements(result);
        } catch (error) {
          const previous = ending?.index;
          await ended();
          if (previous !== undefined && outcomes[previous]?.ok === false) {
            // The previous change's end failed, and this change with it: run this one again.
            index--;
            continue;
          }
          // The connection is gone: the transaction, every change of it, fails.
          if (isDatabaseUnavailable(error)) throw error;
          await rollBack();
          outcomes[index] = { ok: false, error };
          continue;
        }
        await ended();
        const failure = Promise.all([...finals.map((statement) => tx.query(statement)), tx.query('RELEASE SAVEPOINT grouped_write')]).then(
          () => undefined,
          (error: unknown) => error,
        );
        ending = { index, result, failure };
      }
      await ended();
      return outcomes;
    });
  }
}

const groups = new WeakMap<Pool, WriteGroup>();

/** Runs the change in a transaction shared with the changes arriving with it (see above); settles once that commits. */
export function runGrouped<T>(pool: Pool, change: GroupedChange<T>): Promise<T> {
  let group = groups.get(pool);
  if (!group) {
    group = new WriteGroup(pool);
    groups.set(pool, group);
  }
  return group.run(change);
}
