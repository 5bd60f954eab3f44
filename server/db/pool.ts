import { AsyncLocalStorage } from 'node:async_hooks';
import { isInteger, parse } from 'lossless-json';
import pg from 'pg';
import { parseTimestamptz, TIMESTAMPTZ_OID } from './timestamps.ts';
import { queryThroughCallbacks } from './client-queries.ts';
import { isDatabaseUnavailable } from './unavailable.ts';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

const INT8_OID = 20;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * An integer as an exact number: a number when it fits, a bigint beyond 2^53 (the spend budget
 * reaches 2^63-1). Fifteen digits and a sign always fit (2^53 has sixteen): those, nearly every
 * bigint column read, skip the BigInt.
 */
const exactInteger = (digits: string): number | bigint => {
  if (digits.length <= 15) return Number(digits);
  const value = BigInt(digits);
  return value > MAX_SAFE || value < -MAX_SAFE ? value : Number(value);
};

// `bigint` columns arrive exact; numeric parsing keeps pg's default.
pg.types.setTypeParser(INT8_OID, exactInteger);
// Timestamps are read by position (timestamps.ts), pg's own parser taking what that does not know.
pg.types.setTypeParser(TIMESTAMPTZ_OID, parseTimestamptz);

// JSON columns (audit snapshots) keep big integers exact too.
const JSON_OID = 114;
const JSONB_OID = 3802;
// JSON.parse reads them exactly unless an integer has 16 digits or more (2^53 has 16): only
// such text goes through the slower exact parser (a long run of digits in a string also does).
const MAYBE_UNSAFE_INTEGER = /\d{16}/;
const parseExactJson = (text: string): unknown =>
  MAYBE_UNSAFE_INTEGER.test(text)
    ? parse(text, undefined, (digits) => (isInteger(digits) ? exactInteger(digits) : Number(digits)))
    : (JSON.parse(text) as unknown);
pg.types.setTypeParser(JSON_OID, parseExactJson);
pg.types.setTypeParser(JSONB_OID, parseExactJson);

/** How long the database may take before a request gives up with a 503 rather than hanging. */
export interface DatabaseTimeouts {
  /** Waiting for a connection: opening one, or for a free one when the pool is exhausted. */
  connectionTimeoutMs: number;
  /** PostgreSQL cancels a statement that runs longer (`statement_timeout`). */
  statementTimeoutMs: number;
  /** PostgreSQL ends a session whose transaction sits idle longer (`idle_in_transaction_session_timeout`). */
  idleInTransactionTimeoutMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = {
  connectionTimeoutMs: 5_000,
  statementTimeoutMs: 15_000,
  idleInTransactionTimeoutMs: 30_000,
};

/**
 * The client gives up on an answer a little after PostgreSQL would have cancelled the statement:
 * a frozen or unreachable server never answers, so `statement_timeout` alone would wait forever.
 */
const QUERY_TIMEOUT_MARGIN_MS = 1_000;

/**
 * A connection beyond those the pool keeps is closed once idle this long. Each is a PostgreSQL
 * backend of 10 to 25 MiB resident; a burst opens the pool's full size, and with pg's default (10 s)
 * a server back at rest kept them all that long. Reopening one costs a few milliseconds, once per
 * burst.
 */
const IDLE_CONNECTION_MS = 1_000;

/**
 * A pool whose connections carry the timeouts, TCP keepalive, and the transaction guard: inside
 * `withTransaction`, asking this pool (or any other) for a connection is a programming error,
 * refused at once. A transaction that waits for a second connection can wait forever: with every
 * connection held by transactions doing the same, nothing is ever released.
 */
export function createPool(
  connectionString: string,
  max = 10,
  timeouts: DatabaseTimeouts = DEFAULT_DATABASE_TIMEOUTS,
  applicationName = 'cloud-platform-api',
  /** Connections kept however long they are idle: the API's first, so light traffic never waits for one. */
  keptIdle = 1,
): Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    min: keptIdle,
    idleTimeoutMillis: IDLE_CONNECTION_MS,
    application_name: applicationName,
    connectionTimeoutMillis: timeouts.connectionTimeoutMs,
    statement_timeout: timeouts.statementTimeoutMs,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
    // A peer that vanished without closing the connection (a host gone, a network cut) is noticed.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // A statement sent while an earlier one of the same connection awaits its answer goes at once
    // instead of waiting for it: a transaction sends statements that do not depend on each other
    // (and its last with COMMIT, `withTransaction`) in one round trip. A caller that awaits each
    // statement sees no difference.
    pipeline: true,
  });
  // An idle client that loses its connection must not crash the process: the pool drops it.
  pool.on('error', () => {});
  // Nor may one in use. pg-pool listens for errors only on idle clients; on a checked-out one
  // (a transaction, the LISTEN connection), an 'error' event without a listener is an uncaught
  // exception. The query in flight fails with the error, and the pool drops the client on release.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // pg's query_timeout is not set: the read timeout is rebuilt with the query (client-queries.ts).
    queryThroughCallbacks(client, timeouts.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS);
  });
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => refusedInTransaction('pool.connect') ?? connect(...args)) as Pool['connect'];
  pool.query = ((...args: unknown[]) => refusedInTransaction('pool.query') ?? query(...args)) as Pool['query'];
  return pool;
}

/** Set for the duration of the work of `withTransaction`, and everything that work starts. */
const transaction = new AsyncLocalStorage<true>();

/** A query, connection or backend call made inside a transaction: a bug, never a condition to handle. */
export class InsideTransactionError extends Error {
  constructor(what: string) {
    super(
      `${what} inside a transaction: a transaction holds a connection and must not wait for another ` +
        "(or for a backend); use the transaction's client, or do this before or after it",
    );
    this.name = 'InsideTransactionError';
  }
}

/** Throws when called inside a transaction: for calls to external systems, which never belong in one. */
export function assertOutsideTransaction(what: string): void {
  if (transaction.getStore()) throw new InsideTransactionError(what);
}

function refusedInTransaction(what: string): Promise<never> | undefined {
  return transaction.getStore() ? Promise.reject(new InsideTransactionError(what)) : undefined;
}

/**
 * Runs `work` in one transaction: committed when it returns, rolled back when it throws.
 *
 * `finalStatement`, given the work's result, is the transaction's last statement (or statements),
 * sent together with COMMIT (one round trip for all: each wakes PostgreSQL's backend, and on a busy machine the
 * wake-ups cost more than the statements). Should it fail, PostgreSQL has aborted the transaction
 * and answers the COMMIT with a rollback: nothing is kept, and its error is thrown.
 */
export async function withTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  finalStatement?: (result: T) => pg.QueryConfig | readonly pg.QueryConfig[],
): Promise<T> {
  const client = await pool.connect();
  let broken: unknown;
  let ended = false;
  // BEGIN is not waited for: it leaves with the work's first statement, one round trip fewer per
  // transaction. It cannot fail on a connection that then runs the next statement (it parses
  // nothing and takes nothing), and should the connection fail, so do the statements behind it.
  const begun = client.query('BEGIN');
  begun.catch(() => {});
  try {
    const result = await transaction.run(true, () => work(client));
    await begun;
    const finals = finalStatement ? [finalStatement(result)].flat() : [];
    const sent = finals.map((statement) => client.query(statement));
    const commit = client.query('COMMIT');
    const [commitOutcome, ...finalOutcomes] = await Promise.allSettled([commit, ...sent]);
    if (commitOutcome.status === 'rejected') throw commitOutcome.reason;
    ended = true;
    const failed = finalOutcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    assertCommitted(commitOutcome.value);
    return result;
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      // The connection is gone or stuck: a ROLLBACK would wait as long again. PostgreSQL rolls
      // the transaction back when the connection closes.
      broken = error;
    } else if (!ended) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
    }
    throw error;
  } finally {
    // A broken connection leaves the pool instead of going to the next caller.
    client.release(broken instanceof Error ? broken : broken === undefined ? undefined : new Error('connection broken'));
  }
}

/**
 * PostgreSQL answers COMMIT with ROLLBACK when a statement of the transaction failed: a statement
 * whose failure went unnoticed (sent without being awaited) must not pass for kept.
 */
export function assertCommitted(answer: pg.QueryResult): void {
  if (answer.command !== 'COMMIT') throw new Error(`the transaction was rolled back (${answer.command})`);
}

/**
 * Like `withTransaction`, but does not wait for COMMIT: it returns once `work` is done and COMMIT
 * is sent, with `committed`, which settles when PostgreSQL has made the transaction durable (or
 * rejects; it is always handled, so a caller that stops caring leaks no rejection). Its locks
 * are held, and its effects unseen by others, until then. For work that may go on while the
 * commit's WAL flush happens, and must wait for `committed` before anything depends on it.
 */
export async function withTransactionCommitLater<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<{ result: T; committed: Promise<void> }> {
  const client = await pool.connect();
  let result: T;
  try {
    await client.query('BEGIN');
    result = await transaction.run(true, () => work(client));
  } catch (error) {
    let broken: unknown;
    if (isDatabaseUnavailable(error)) broken = error;
    else await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
    client.release(broken instanceof Error ? broken : broken === undefined ? undefined : new Error('connection broken'));
    throw error;
  }
  const committed = client.query('COMMIT').then(
    (answer) => {
      client.release();
      assertCommitted(answer);
    },
    (error: unknown) => {
      // A failed COMMIT rolled back; a connection that broke meanwhile leaves the pool.
      client.release(error instanceof Error ? error : new Error('commit failed'));
      throw error;
    },
  );
  committed.catch(() => {});
  return { result, committed };
}
