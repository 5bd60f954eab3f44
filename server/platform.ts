import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { createApp } from './app.ts';
import type { StartedPart } from './areas/area.ts';
import { CredentialCache } from './areas/identity/credentials/credential-cache.ts';
import { IdentityResolver } from './areas/identity/credentials/identity-resolver.ts';
import { OidcVerifier } from './areas/identity/credentials/oidc.ts';
import { composeAreas } from './compose-areas.ts';
import type { Config } from './config.ts';
import { BackgroundRunner } from './core/background.ts';
import { claimPassesIn } from './core/background-passes.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { purgeExpiredKeys, type KeyHolder } from './core/idempotency.ts';
import { Teardown } from './core/teardown.ts';
import { setEventLogRecording } from './core/events.ts';
import { createOrganizationClock } from './core/test-clocks.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './db/embedded.ts';
import { DatabaseListener } from './db/listener.ts';
import { newProcessInstance, PROCESS_LOCK_NAMESPACE } from './db/process-liveness.ts';
import { migrate } from './db/migrate.ts';
import { createPool, type Pool } from './db/pool.ts';
import { isDatabaseUnavailable } from './db/unavailable.ts';
import type { Drivers } from './drivers/index.ts';
import { createDrivers, embeddedStoreSettingsOf, driverMigrations, type DriverSet } from './drivers/selection.ts';
import { OperationEngine } from './engine/engine.ts';
import { ApiActivity } from './core/api-activity.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { bearerCredential } from './http/authentication.ts';
import { createRateLimits } from './http/rate-limit.ts';
import { contractValidator, warmUpContractValidator } from './http/validation.ts';
import { startIdleCollection } from './idle-collection.ts';
import type { Logger } from './logging.ts';
import { Metrics } from './metrics.ts';

/** Connections the embedded object store adds to the backends' pool: its driver calls and sweeps (S3 requests have the S3 thread's own). */
const EMBEDDED_STORE_CONNECTIONS = 2;

export interface Platform {
  /** Where the API listens, such as http://127.0.0.1:8080. */
  url: string;
  /**
   * Where the S3 endpoint listens: the embedded object store's, or the Ceph gateway's with the rgw
   * driver (RGW serves S3 itself); undefined with the simulator.
   */
  s3Url: string | undefined;
  /**
   * The S3 endpoint users are told (bootstrap.json, the start-up log): with the rgw driver the
   * gateway's public address (RGW_PUBLIC_URL or S3_PUBLIC_URL, else RGW_ENDPOINT); with the embedded
   * store S3_PUBLIC_URL, or where it listens; undefined with the simulator.
   */
  s3PublicUrl: string | undefined;
  /** Where Prometheus scrapes, such as http://127.0.0.1:8082/metrics; undefined when METRICS_PORT=off. */
  metricsUrl: string | undefined;
  pool: Pool;
  /** Graceful: stops accepting requests, lets in-flight ones finish, releases claimed work. */
  close(): Promise<void>;
}

/**
 * The database this configuration names: DATABASE_URL, or the embedded one in DATA_DIR (`starting`:
 * already being started by the caller: main.ts starts it before loading the rest of the server).
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  starting?: Promise<EmbeddedDatabase>,
  signal?: AbortSignal,
): Promise<Database> {
  const embedded = config.databaseUrl
    ? undefined
    : await (starting ?? startEmbeddedDatabase(config.dataDir, (message) => log.info(message), { signal }));
  const connectionString = withEventLogSetting(config.databaseUrl ?? embedded!.connectionString, config.events.recording);
  setEventLogRecording(config.events.recording);
  const pool = createPool(connectionString, config.database.poolSize, config.database);
  try {
    signal?.throwIfAborted();
    await migrateOnceReachable(pool, driverMigrations(config.drivers), log, signal);
    signal?.throwIfAborted();
  } catch (error) {
    await pool.end().catch(() => {});
    if (embedded?.ownsServer) await embedded.stop().catch(() => {});
    throw error;
  }
  return {
    pool,
    connectionString,
    tidyUp: () => embedded?.tidyUp(),
    async stop() {
      await pool.end();
      if (embedded?.ownsServer) await embedded.stop();
    },
  };
}

/**
 * The connection string with the event log's switch for the database's own recorder (the trigger
 * on vms, migration 1000): set only when the operator turned the log off (EVENT_LOG=false).
 */
function withEventLogSetting(connectionString: string, recording: boolean): string {
  if (recording) return connectionString;
  // Appended as text: the embedded database's address (a socket folder, no host) is no WHATWG URL.
  return `${connectionString}${connectionString.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c cloud_platform.event_log=off')}`;
}

/** How long a start waits for a database that is there but does not answer yet. */
const DATABASE_STARTUP_WAIT_MS = 30_000;

/**
 * Migrates, waiting for a database that is there but slow to answer (starting, in recovery, or
 * busy past DATABASE_CONNECT_TIMEOUT_MS), as an orchestrated start would wait for it. One that
 * refuses the connection (nothing listens) ends the start at once, with the line that says so.
 * Migrations run in transactions under a lock: a try that failed left nothing behind.
 */
async function migrateOnceReachable(pool: Pool, driverFolders: readonly string[], log: Logger, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + DATABASE_STARTUP_WAIT_MS;
  for (let tries = 1; ; tries++) {
    try {
      await migrate(pool, driverFolders);
      return;
    } catch (error) {
      const refused = (error as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
      if (refused || !isDatabaseUnavailable(error) || Date.now() >= deadline || signal?.aborted) throw error;
      log.warn({ reason: (error as Error).message }, 'the database does not answer yet; trying again');
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, Math.min(2_000, 250 * tries));
        // A start interrupted while it waits stops waiting.
        signal?.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
      });
      signal?.throwIfAborted();
    }
  }
}

export interface Database {
  pool: Pool;
  connectionString: string;
  /** Begins, in the background, what the database leaves for once the platform serves (EmbeddedDatabase.tidyUp). */
  tidyUp(): void;
  stop(): Promise<void>;
}

/**
 * Composes the server: database and migrations, drivers, areas, the operations engine, the HTTP
 * application and the background loops. Used by `npm start` and by the tests.
 */
export async function startPlatform(
  config: Config,
  log: Logger,
  options: {
    clock?: Clock;
    drivers?: (pool: Pool) => Drivers;
    embedded?: Promise<EmbeddedDatabase>;
    /** Resolves outside host names (webhook URLs); the system's resolver when absent. */
    resolveHost?: (hostname: string) => Promise<string[]>;
    /** Aborted: the start stops at its next step, what it opened closed (main.ts: a signal came). */
    signal?: AbortSignal;
  } = {},
): Promise<Platform> {
  const { signal } = options;
  // The validator loads and compiles the contract while the database starts (and migrates).
  const contract = contractValidator({ validateResponses: config.validateResponses });
  const contractWarmedUp = warmUpContractValidator(contract);
  const database = await openDatabase(config, log, options.embedded, signal);
  // What the start opens, closed in reverse when it fails or when the platform stops.
  const teardown = new Teardown();
  teardown.add('database', () => database.stop());
  // The simulated backends stand for systems outside the platform: they have connections of
  // their own, so that a backend call never waits for one of the API's, and the transaction
  // guard refuses a backend call made inside a transaction.
  // The embedded object store's driver calls use these connections too: a few more of them.
  // None is kept while idle: a backend at rest needs no connection (each is a PostgreSQL process
  // of 15 to 25 MiB), and the first call after a quiet second opens one in a few milliseconds.
  const backendPoolSize = config.simulators.poolSize + (config.drivers.objectStore === 'embedded' ? EMBEDDED_STORE_CONNECTIONS : 0);
  const backendPool = createPool(database.connectionString, backendPoolSize, config.database, 'cloud-platform-backends', 0);
  teardown.add('backends pool', () => backendPool.end());
  // The process's own connection: it LISTENs for the engine and the credential cache, and holds
  // the embedded store's instance lock. Started once everything has subscribed (composePlatform).
  const listener = new DatabaseListener(database.pool.options, log.child({ component: 'listener' }));
  // This process's liveness, for the Idempotency-Keys it claims (a dead process's are taken over at once).
  const keyHolder = { instance: newProcessInstance() };
  listener.holdLock(PROCESS_LOCK_NAMESPACE, keyHolder.instance);
  try {
    const drivers: DriverSet = options.drivers
      ? { ...options.drivers(backendPool), embeddedStore: undefined }
      : await createDrivers(config.drivers, backendPool, {
          ...embeddedStoreSettingsOf(config),
          rgw: config.rgw,
          listener,
          qemu: config.qemu,
          log,
        });
    const { embeddedStore } = drivers;
    if (embeddedStore) teardown.add('embedded object store', () => embeddedStore.close());
    await contractWarmedUp;
    signal?.throwIfAborted();
    const platform = await composePlatform(
      config,
      log,
      options.clock ?? systemClock,
      drivers,
      contract,
      listener,
      { api: database.pool, backends: backendPool },
      teardown,
      options.resolveHost,
      keyHolder,
      signal,
    );
    database.tidyUp();
    return { ...platform, close: () => teardown.run((step, error) => log.error({ err: error, step }, 'a part failed to stop')) };
  } catch (error) {
    // A refused start (a bad catalogue, a port in use) closes what it opened, the database last.
    await teardown.run();
    throw error;
  }
}

async function composePlatform(
  config: Config,
  log: Logger,
  clock: Clock,
  drivers: DriverSet,
  contract: RequestHandler[],
  listener: DatabaseListener,
  pools: { api: Pool; backends: Pool },
  teardown: Teardown,
  resolveHost: ((hostname: string) => Promise<string[]>) | undefined,
  keyHolder: KeyHolder,
  signal: AbortSignal | undefined,
): Promise<Omit<Platform, 'close'>> {
  const pool = pools.api;
  // Known once the server listens (PORT=0 picks a port); PUBLIC_BASE_URL wins when set.
  let listeningUrl = `http://${config.host}:${config.port}`;
  const metrics = new Metrics();
  // API keys already looked up; emptied on every change a process announces (LISTEN/NOTIFY).
  const credentials = new CredentialCache(listener);
  const apiActivity = new ApiActivity();
  metrics.watchRequestsInFlight(() => apiActivity.inFlight);
  const composed = composeAreas({
    pool,
    config,
    clock,
    orgClock: createOrganizationClock(clock, config.testClocks),
    publicBaseUrl: () => config.publicBaseUrl ?? listeningUrl,
    log,
    metrics,
    drivers,
    embeddedStore: drivers.embeddedStore,
    listener,
    credentials,
    apiActivity,
    ...(resolveHost && { resolveHost }),
  });
  const engine = new OperationEngine(
    pool,
    composed.executors,
    config.engine,
    log.child({ component: 'engine' }),
    `${process.pid}-${randomUUID().slice(0, 8)}`,
    listener,
  );
  composed.bindEngine(engine);
  const { areas } = composed;

  const identity = new IdentityResolver(pool, config.oidc ? new OidcVerifier(config.oidc) : undefined, credentials);
  metrics.watchPool('api', pool);
  metrics.watchPool('backends', pools.backends);
  metrics.watchOperations(pool);
  const rateLimits = createRateLimits(config.rateLimit, (req) => {
    const credential = bearerCredential(req);
    return credential !== undefined && identity.isKnownApiKey(credential);
  });
  const app = createApp({
    config,
    pool,
    log,
    identity,
    handlers: composed.handlers,
    auditNames: composed.auditNames,
    metrics,
    rateLimits,
    contract,
    pages: areas.flatMap((area) => area.pages ?? []),
    keyHolder,
  });
  await listener.start();
  teardown.add('listener', () => listener.stop());
  signal?.throwIfAborted();
  const server = await listen(app, config.port, config.host);
  teardown.add('api server', () => closeServer(server));
  apiActivity.track(server);
  for (const upgrade of areas.flatMap((area) => area.upgrades ?? [])) {
    const attached = upgrade.attach(server);
    teardown.add('websocket endpoint', () => attached.close());
  }
  const metricsEndpoint = config.metricsPort === undefined ? undefined : await metrics.serve(config.metricsPort, config.host);
  if (metricsEndpoint) teardown.add('metrics endpoint', () => metricsEndpoint.close());
  const parts: StartedPart[] = [];
  for (const area of areas) {
    const part = await area.start?.();
    if (!part) continue;
    parts.push(part);
    teardown.add('part', () => part.close());
  }
  answerClientErrors(server, log.child({ component: 'http' }), { https: config.publicBaseUrl?.startsWith('https:') ?? false, rateLimits });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  listeningUrl = url;

  signal?.throwIfAborted();
  if (config.background) {
    await engine.start();
    teardown.add('engine', () => engine.stop());
    const background = new BackgroundRunner(log.child({ component: 'background' }), metrics, claimPassesIn(pool));
    background.start([
      ...areas.flatMap((area) => area.background ?? []),
      { name: 'idempotency-purge', intervalMs: 3_600_000, run: async () => void (await purgeExpiredKeys(pool)) },
    ]);
    teardown.add('background work', () => background.stop());
  }
  if (config.collectWhenIdle) {
    const idleCollection = await startIdleCollection(log);
    teardown.add('idle collection', () => idleCollection.stop());
  }

  // The embedded store's S3 endpoint is the one part that listens.
  const s3 = parts[0];
  return {
    url,
    s3Url: s3?.url ?? config.rgw?.endpoint,
    s3PublicUrl: config.rgw ? config.rgw.publicUrl : s3 ? (config.s3.publicUrl ?? s3.url) : undefined,
    metricsUrl: metricsEndpoint?.url,
    pool,
  };
}

/**
 * No new connections; requests in flight finish. Keep-alive connections are closed as soon as
 * they are idle, rather than when their keep-alive timeout ends.
 */
function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}

function listen(app: ReturnType<typeof createApp>, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(server)));
  });
}
