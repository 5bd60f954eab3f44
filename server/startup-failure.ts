import { ConfigError, type Config } from './config.ts';
import { EmbeddedDatabaseStartError } from './db/embedded.ts';
import { EmbeddedDatabaseAccessError } from './db/postgres-user-access.ts';
import { isDatabaseUnavailable } from './db/unavailable.ts';
import { DataDirInUseError } from './start-checks.ts';

/**
 * One line that tells an operator why the server did not start, and what to change: a stack trace
 * is for bugs, not for a busy port or an unreadable directory. Undefined for anything unforeseen,
 * which is then reported in full.
 */
export function describeStartupFailure(error: unknown, config: Pick<Config, 'host' | 'port' | 'dataDir'>): string | undefined {
  if (error instanceof ConfigError) return `configuration error: ${error.message}`;
  if (error instanceof EmbeddedDatabaseStartError || error instanceof EmbeddedDatabaseAccessError || error instanceof DataDirInUseError)
    return error.message;
  const failure = error as NodeJS.ErrnoException & { address?: string; port?: number };
  switch (failure?.code) {
    case 'EADDRINUSE':
      return `cannot listen on ${config.host}:${failure.port ?? config.port}: the port is already in use; stop the other process or choose another port (PORT, S3_PORT, METRICS_PORT).`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${config.host}: the address is not one of this machine's; set HOST to a local address.`;
    case 'EACCES':
      return failure.syscall === 'listen'
        ? `cannot listen on ${config.host}:${config.port}: permission denied (ports below 1024 need privileges); choose another PORT.`
        : `permission denied: ${failure.path ?? failure.message}; the server needs to read and write DATA_DIR (${config.dataDir}).`;
    case 'ECONNREFUSED':
      return `cannot reach the database (${failure.address ?? 'DATABASE_URL'}:${failure.port ?? ''}): connection refused; check DATABASE_URL or unset it to use the embedded PostgreSQL.`;
    case 'ENOSPC':
      return `no space left on the device holding DATA_DIR (${config.dataDir}).`;
    default:
      return isDatabaseUnavailable(error)
        ? `the database did not answer in time (${(error as Error).message}); check that it is up and not overloaded, or raise DATABASE_CONNECT_TIMEOUT_MS.`
        : undefined;
  }
}
