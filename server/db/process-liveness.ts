import { randomInt } from 'node:crypto';

/**
 * A server process's liveness, as every process sharing the database can tell it: each one holds
 * the session advisory lock (PROCESS_LOCK_NAMESPACE, its instance number) on its listener's
 * connection (listener.ts) for as long as it lives, and takes it again when that connection comes
 * back. A process that ends, however it ends (SIGKILL, a crash, its host gone), loses the
 * connection, and PostgreSQL releases the lock with it: what the process held is known orphaned at
 * once, not when some lease lapses.
 */
export const PROCESS_LOCK_NAMESPACE = 7_361_206;

/** A number for this process's lock (random: processes on several hosts share the database). */
export const newProcessInstance = (): number => randomInt(1, 2 ** 31 - 1);

/**
 * SQL: whether the process whose instance number is the expression `instance` holds its lock
 * (advisory locks are per database: the lock of this database's processes).
 */
export const PROCESS_ALIVE = (instance: string): string =>
  `EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = ${PROCESS_LOCK_NAMESPACE}
     AND objid::bigint = ${instance} AND objsubid = 2 AND granted
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`;
