// A PostgreSQL of a test's own, to be stopped, started again, frozen and thawed (the shared test
// PostgreSQL is never stopped): it listens on loopback TCP and on a Unix-domain socket in its
// data directory, as the embedded PostgreSQL of `npm start` does.
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadEmbeddedPostgres, stopOnExit, type EmbeddedPostgresClass } from '../../server/db/embedded-postgres-loader.ts';
import { descendantsOf, freePort } from './processes.ts';
import { databaseUrlBeside } from './run-databases.ts';

export interface StoppablePostgres {
  /** The `postgres` database over TCP. */
  adminUrl: string;
  /** The Unix-domain socket's file (gone while PostgreSQL is stopped). */
  socketFile: string;
  /** A new database: its URL over TCP, over the Unix-domain socket, and a one-connection pool for the test's own reads. */
  newDatabase(): Promise<{ url: string; socketUrl: string; db: pg.Pool }>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops every PostgreSQL process (SIGSTOP): connections stay open and nothing answers. */
  freeze(): Promise<void>;
  thaw(): void;
  /** Thaws, stops and removes it. */
  close(): Promise<void>;
}

export async function startStoppablePostgres(): Promise<StoppablePostgres> {
  const directory = mkdtempSync(path.join(tmpdir(), 'cloud-platform-stoppable-pg-'));
  // As root, PostgreSQL runs as its own OS user, which must be able to enter the directory.
  chmodSync(directory, 0o755);
  const clusterDir = path.join(directory, 'cluster');
  const port = await freePort();
  const password = 'stoppable';
  const EmbeddedPostgres: EmbeddedPostgresClass = await loadEmbeddedPostgres();
  const postgres = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password,
    port,
    // Kept across stop and start: the tests stop it on purpose.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // The socket in the cluster's own directory, which PostgreSQL's OS user owns.
    postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', `unix_socket_directories=${clusterDir}`],
    onLog: () => {},
  });
  await postgres.initialise();
  await postgres.start();
  const removeExitHook = stopOnExit(clusterDir);
  const adminUrl = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;

  /** The postmaster's pid, or undefined when it is not running. */
  const postmasterPid = (): number | undefined => {
    try {
      return Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  };
  const thaw = (): void => {
    const root = postmasterPid();
    if (root === undefined) return;
    for (const pid of [root, ...descendantsOf(root)]) signal(pid, 'SIGCONT');
  };

  return {
    adminUrl,
    socketFile: path.join(clusterDir, `.s.PGSQL.${port}`),
    async newDatabase() {
      const name = `outage_${randomUUID().slice(0, 8)}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = databaseUrlBeside(adminUrl, name);
      const socketUrl = `postgres://postgres:${password}@/${name}?host=${encodeURIComponent(clusterDir)}&port=${port}`;
      const db = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 2000 });
      db.on('error', () => {});
      return { url, socketUrl, db };
    },
    stop: () => postgres.stop(),
    start: () => postgres.start(),
    /**
     * The postmaster stops first and is seen stopped before its children are listed: listing them
     * first let a backend forked in between (a pool opening a connection) escape the freeze and
     * answer requests. Then every process under it, until /proc shows each one stopped.
     */
    async freeze() {
      const root = postmasterPid();
      if (root === undefined) throw new Error('PostgreSQL is not running');
      signal(root, 'SIGSTOP');
      for (let running = [root]; running.length > 0; running = [root, ...descendantsOf(root)].filter((pid) => !isStopped(pid))) {
        for (const pid of running) signal(pid, 'SIGSTOP');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    thaw,
    async close() {
      // Thawed first: should a test have failed while PostgreSQL was frozen, nothing could stop.
      thaw();
      if (existsSync(path.join(clusterDir, 'postmaster.pid'))) await postgres.stop();
      removeExitHook();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Whether a process cannot run: stopped by a signal (T), or ended (a zombie its stopped parent cannot reap, or gone). */
function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return 'TtZX'.includes(stat[stat.lastIndexOf(')') + 2]!);
  } catch {
    return true;
  }
}

function signal(pid: number, name: 'SIGSTOP' | 'SIGCONT'): void {
  try {
    process.kill(pid, name);
  } catch {
    // Exited meanwhile.
  }
}
