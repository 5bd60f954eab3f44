/**
 * Whether an error means the database cannot be used right now (down, restarting, unreachable,
 * frozen, or every connection busy), as opposed to a query or a rule failing. Such an error is
 * worth retrying later: a request answers `503 service_unavailable` with Retry-After, and an
 * operation's attempt waits and tries again instead of counting as a failure.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  if (knownUnavailable.has(error)) return true;
  const { code, syscall, message, cause, errors } = error as {
    code?: unknown;
    syscall?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || UNAVAILABLE_SOCKET_CODES.has(code)))
    return true;
  // A Unix-domain socket whose server is not running: its file is gone (`connect ENOENT
  // …/.s.PGSQL.5432`: the embedded PostgreSQL stopped), or left behind with nobody listening.
  // ENOENT only from connect: from anything else it is a missing file, which is no outage.
  if (syscall === 'connect' && typeof code === 'string' && UNAVAILABLE_CONNECT_CODES.has(code)) return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((phrase) => message.includes(phrase))) return true;
  // Connecting to every address of a host name fails as one AggregateError; a wrapper keeps a cause.
  if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(cause, depth + 1);
}

/**
 * Errors judged unavailable where they happened: one that crossed from another thread (core/thread-calls.ts)
 * is made again from its message and code, without the cause or the wrapper that said so.
 */
const knownUnavailable = new WeakSet<object>();

/** Marks an error as meaning the database is unavailable, whatever its code and message say. */
export function markDatabaseUnavailable(error: object): void {
  knownUnavailable.add(error);
}

/** Errors a query on one of the pools' connections failed with (client-queries.ts marks them). */
const databaseErrors = new WeakSet<object>();

/** Marks an error as the database's: a query failed with it (a reset of the database's connection among them). */
export function markDatabaseError(error: unknown): void {
  if (typeof error === 'object' && error !== null) databaseErrors.add(error);
}

/**
 * Whether a query failed with this error. A reset (ECONNRESET) is ambiguous by its code alone: the
 * database's connection and a client's own both reset so; only the database's is an outage.
 */
export function isDatabaseError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && databaseErrors.has(error);
}

/**
 * Whether PostgreSQL rolled the transaction back because it collided with a concurrent one: a
 * deadlock it broke (40P01), or a serialization failure (40001). Nothing of the transaction was
 * kept, and the same work tried again a moment later normally succeeds.
 */
export function isConcurrencyConflict(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
}

/** How long a client should wait before retrying a request that collided with a concurrent one. */
export const CONFLICT_RETRY_AFTER_SECONDS = 1;

/** How long a client should wait before retrying a request the database could not serve. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: PostgreSQL is stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '57014', // query_canceled: statement_timeout (a stuck server, or a lock held too long)
  '25P03', // idle_in_transaction_session_timeout
  '53300', // too_many_connections
  '55P03', // lock_not_available: lock_timeout
]);
// The 08xxx class (connection_exception) is checked by its prefix.

const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTCONN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'EAI_AGAIN',
]);

/** Codes that mean "nobody there" only when connecting (a socket file missing, or not a socket any more). */
const UNAVAILABLE_CONNECT_CODES = new Set(['ENOENT', 'ENOTSOCK', 'EAGAIN']);

/** A query that got no answer within the client's read timeout (client-queries.ts, as pg's own query_timeout words it). */
export const READ_TIMEOUT_MESSAGE = 'Query read timeout';

// pg and pg-pool report these without a code.
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect', // pg-pool: no connection within connectionTimeoutMillis
  'timeout expired', // pg.Client (no pool): no connection within connectionTimeoutMillis
  'Connection terminated', // the server closed the connection, or connecting timed out
  READ_TIMEOUT_MESSAGE, // no answer at all
  'Client has encountered a connection error and is not queryable',
  'Connection ended unexpectedly',
];

/** Waits for `work` at most `ms`; past that, the work goes on unawaited. `work` must not reject. */
export function withinMs(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([work.then(() => undefined), waited]).finally(() => clearTimeout(timer));
}
