import type pg from 'pg';
import { assertCommitted, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { isDatabaseUnavailable } from './unavailable.ts';

/**
 * A statement each connection has PostgreSQL parse and plan once, then only bind and run.
 * Planning was most of PostgreSQL's time for the statements run on every request or operation
 * (pg_stat_statements: 60 of 82 µs for an instance read by id, 72 of 200 µs for queueing an
 * operation).
 *
 * Only for statements whose best plan does not depend on their values (a lookup by key, an
 * insert): after five runs PostgreSQL may keep one generic plan for every value. The lists stay
 * unprepared: their filters decide which index serves them.
 *
 * The text names its columns. A `*` is expanded when the statement is prepared; once a newer
 * process's migration adds a column, PostgreSQL refuses the prepared statement ("cached plan
 * must not change result type") on every connection that holds it, for as long as it lives.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

const STAR = /(?:\bSELECT|\bRETURNING|,)\s+(?:\w+\.)?\*/i;
const named = new Map<string, string>();

export function prepared(name: string, text: string): PreparedStatement {
  if (STAR.test(text)) throw new Error(`prepared statement ${name}: name the columns instead of *`);
  const earlier = named.get(name);
  if (earlier !== undefined && earlier !== text) throw new Error(`two prepared statements are named ${name}`);
  named.set(name, text);
  return { name, text };
}

/** Runs a prepared statement with its values. */
export function runPrepared<Row extends pg.QueryResultRow>(
  db: Queryable,
  statement: PreparedStatement,
  values: unknown[],
): Promise<pg.QueryResult<Row>> {
  return db.query<Row>({ name: statement.name, text: statement.text, values });
}

/**
 * Runs a prepared statement on its generic plan, in the caller's transaction (the plan cache mode
 * is set for the statement alone, in the same round trip): for a statement whose plan depends on
 * none of its values, on a table that grows. Left to choose, PostgreSQL plans the statement again
 * at every run after each ANALYZE of such a table (every few seconds under load): it compares the
 * new generic plan's cost with the average of the custom plans made before, which trails it while
 * the table grows. Planning the webhook claim took 1.1 ms, most of its cost.
 */
export async function runGeneric<Row extends pg.QueryResultRow>(
  tx: PoolClient,
  statement: PreparedStatement,
  values: unknown[],
): Promise<pg.QueryResult<Row>> {
  const [, result] = await Promise.all([
    tx.query('SET LOCAL plan_cache_mode = force_generic_plan'),
    runPrepared<Row>(tx, statement, values),
    tx.query('SET LOCAL plan_cache_mode = DEFAULT'),
  ]);
  return result;
}

/**
 * `runGeneric` for a statement that is a transaction of its own, in one round trip: BEGIN, the
 * plan cache mode, the statement and COMMIT leave together (a failed statement makes the COMMIT
 * a rollback, and its error is thrown).
 */
export async function runGenericAlone<Row extends pg.QueryResultRow>(
  pool: Pool,
  statement: PreparedStatement,
  values: unknown[],
): Promise<pg.QueryResult<Row>> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const sent = [
      client.query('BEGIN'),
      client.query('SET LOCAL plan_cache_mode = force_generic_plan'),
      runPrepared<Row>(client, statement, values),
      client.query('COMMIT'),
    ] as const;
    // Every answer is waited for before the connection goes back (the first failure is thrown).
    for (const outcome of await Promise.allSettled(sent)) if (outcome.status === 'rejected') throw outcome.reason;
    const [, , ran, committed] = await Promise.all(sent);
    assertCommitted(committed);
    return ran;
  } catch (error) {
    // A connection gone or stuck leaves the pool rather than going to the next caller.
    if (isDatabaseUnavailable(error)) broken = error instanceof Error ? error : new Error('connection broken');
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * The column list of a row type, for a statement's text: the compiler checks that it names every
 * field of the row and nothing else (`{ id: true, ... }`).
 */
export function columnsOf<Row>(columns: Record<keyof Row & string, true>, alias?: string): string {
  return Object.keys(columns)
    .map((column) => (alias ? `${alias}.${column}` : column))
    .join(', ');
}
