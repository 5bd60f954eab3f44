import pg from 'pg';
import { markDatabaseError, READ_TIMEOUT_MESSAGE } from './unavailable.ts';

type Done = (error: Error | undefined, result?: pg.QueryResult) => void;

/**
 * Rebuilds a pooled client's `query` on pg's callback form, with a read timeout of its own in
 * place of pg's `query_timeout`, and the statements of one turn of the event loop in one write.
 *
 * pg sets a query's callback after constructing the query in two places: the promise form of
 * `query` (the form this code uses everywhere) and `query_timeout` (which wraps whatever callback
 * there was in a new one). Measured on a list of a hundred instances read in a loop, either one
 * made V8 carry the rows a query read out of the young generation: 4.3 MB promoted at every
 * scavenge against 0.9 KB, the old generation refilling every second, and each query 17% slower
 * (the cause inside V8 is not established; setting the field again is enough to bring it on). Here
 * the callback is handed to the query's constructor, and the timeout settles that same callback.
 *
 * A query that gets no answer within `readTimeoutMs` (a frozen or unreachable server: PostgreSQL's
 * own statement_timeout answers well before) fails with pg's message, and its connection is
 * destroyed: whatever was queued behind it fails too rather than running later for a caller that
 * was already told it failed, and the pool drops the client when it is released with the error.
 */
export function queryThroughCallbacks(client: pg.Client, readTimeoutMs: number): void {
  const pgQuery = client.query.bind(client) as (config: unknown, values?: unknown, callback?: unknown) => unknown;
  // The statements a transaction sends in one turn of the event loop (its pipelined statements:
  // pool.ts) leave in one write. pg writes each statement on its own; each write wakes the
  // backend, and on a machine with a core or two the woken backend takes the core from this
  // thread: a statement sent with COMMIT cost two such switches, and a batch of successes one per
  // operation. Measured alternating warm servers, 2,000 creations a round: 807-905/s against
  // 658-825/s, Node 730-825 against 780-990 us per creation.
  let corked = false;
  const uncork = () => {
    corked = false;
    client.connection.stream.uncork();
  };
  const run = (config: unknown, values: unknown, done: Done): void => {
    if (!corked) {
      corked = true;
      client.connection.stream.cork();
      process.nextTick(uncork);
    }
    let settled = false;
    const settle: Done = (error, result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) markDatabaseError(error);
      done(error, result);
    };
    const query = new pg.Query(config as pg.QueryConfig, values as unknown[], settle);
    // Declared after `settle`, which reads it: pg never calls a query's callback before it is submitted.
    const timer = setTimeout(() => {
      settle(new Error(READ_TIMEOUT_MESSAGE));
      client.connection.stream.destroy();
    }, readTimeoutMs);
    try {
      pgQuery(query);
    } catch (error) {
      // pg refused it outright (no query at all): fail it now rather than at the timeout, which
      // would destroy a healthy connection.
      settle(error as Error);
    }
  };
  const query = (config: unknown, values?: unknown, callback?: unknown): unknown => {
    // Submittables (a cursor, a Query built elsewhere) keep pg's own handling.
    if (typeof (config as { submit?: unknown } | null)?.submit === 'function') return pgQuery(config, values, callback);
    if (typeof values === 'function') return run(config, undefined, values as Done);
    if (typeof callback === 'function') return run(config, values, callback as Done);
    return new Promise((resolve, reject) => run(config, values, (error, result) => (error ? reject(error) : resolve(result)))).catch(
      (error: unknown) => {
        // As pg's promise form does: the stack then leads back to the code that awaited the query.
        if (error instanceof Error) Error.captureStackTrace(error);
        throw error;
      },
    );
  };
  client.query = query as pg.Client['query'];
}
