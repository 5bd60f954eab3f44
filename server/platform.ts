import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperationHandlers } from '../generated/operations.ts';
import type { RequestHandler } from 'express';
import { createApp } from './app.ts';
import type { Area, AreaDependencies } from './areas/area.ts';
import { apiTokensArea } from './areas/api-tokens/area.ts';
import { auditArea } from './areas/audit/area.ts';
import { billingArea, createBillingCache, createBudgetGuard } from './areas/billing/area.ts';
import { computeArea } from './areas/compute/area.ts';
import { healthArea } from './areas/health/area.ts';
import { operationsArea } from './areas/operations/area.ts';
import { organizationArea } from './areas/organization/area.ts';
import { storageArea } from './areas/storage/area.ts';
import { storageQuotaOf } from './areas/storage/quota-figures.ts';
import { CredentialCache } from './auth/credential-cache.ts';
import { IdentityResolver } from './auth/identity.ts';
import { OidcVerifier } from './auth/oidc.ts';
import type { Config } from './config.ts';
import { BackgroundRunner } from './core/background.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { createOrganizationClock } from './core/test-clocks.ts';
import { createConsoleGateway } from './http/console-gateway.ts';
import { invoiceDocuments } from './http/invoice-documents.ts';
import { invoiceLinkSource } from './areas/billing/invoice-links.ts';
import { loadPriceList } from './areas/billing/prices.ts';
import { consolePage } from './http/console-page.ts';
import { contractValidator, warmUpContractValidator } from './http/validation.ts';
import { purgeExpiredKeys } from './core/idempotency.ts';
import type { RequestContext } from './core/request-context.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { isDatabaseUnavailable } from './db/unavailable.ts';
import { DatabaseListener } from './db/listener.ts';
import { createPool, type Pool } from './db/pool.ts';
import type { Drivers } from './drivers/index.ts';
import type { EmbeddedObjectStore } from './drivers/embedded/store.ts';
import { createDrivers, driverMigrations, type DriverSet } from './drivers/selection.ts';
import { OperationEngine } from './engine/engine.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { createRateLimits } from './http/rate-limit.ts';
import { bearerCredential } from './http/authentication.ts';
import type { ExecutorRegistry } from './engine/executor.ts';
import type { Logger } from './logging.ts';
import { Metrics } from './metrics.ts';
import { createAccess, type Caller } from './s3/access.ts';
import { startS3Endpoint } from './s3/server.ts';
import { startIdleCollection } from './idle-collection.ts';

/** Connections the embedded object store adds to the backends' pool (S3 requests use them). */
const EMBEDDED_STORE_CONNECTIONS = 12;

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
export async function openDatabase(config: Config, log: Logger, starting?: Promise<EmbeddedDatabase>): Promise<Database> {
  const embedded = config.databaseUrl
    ? undefined
    : await (starting ?? startEmbeddedDatabase(config.dataDir, (message) => log.info(message)));
  const connectionString = config.databaseUrl ?? embedded!.connectionString;
  const pool = createPool(connectionString, config.database.poolSize, config.database);
  try {
    await migrateOnceReachable(pool, driverMigrations(config.drivers), log);
  } catch (error) {
    await pool.end().catch(() => {});
    if (embedded?.ownsServer) await embedded.stop().catch(() => {});
    throw error;
  }
  return {
    pool,
    connectionString,
    async stop() {
      await pool.end();
      if (embedded?.ownsServer) await embedded.stop();
    },
  };
}

/** How long a start waits for a database that is there but does not answer yet. */
const DATABASE_STARTUP_WAIT_MS = 30_000;

/**
 * Migrates, waiting for a database that is there but slow to answer (starting, in recovery, or
 * busy past DATABASE_CONNECT_TIMEOUT_MS), as an orchestrated start would wait for it. One that
 * refuses the connection (nothing listens) ends the start at once, with the line that says so.
 * Migrations run in transactions under a lock: a try that failed left nothing behind.
 */
async function migrateOnceReachable(pool: Pool, driverFolders: readonly string[], log: Logger): Promise<void> {
  const deadline = Date.now() + DATABASE_STARTUP_WAIT_MS;
  for (let tries = 1; ; tries++) {
    try {
      await migrate(pool, driverFolders);
      return;
    } catch (error) {
      const refused = (error as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
      if (refused || !isDatabaseUnavailable(error) || Date.now() >= deadline) throw error;
      log.warn({ reason: (error as Error).message }, 'the database does not answer yet; trying again');
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 250 * tries)));
    }
  }
}

export interface Database {
  pool: Pool;
  connectionString: string;
  stop(): Promise<void>;
}

/**
 * Composes the server: database and migrations, drivers, areas, the operations engine, the HTTP
 * application and the background loops. Used by `npm start` and by the tests.
 */
export async function startPlatform(
  config: Config,
  log: Logger,
  options: { clock?: Clock; drivers?: (pool: Pool) => Drivers; embedded?: Promise<EmbeddedDatabase> } = {},
): Promise<Platform> {
  // The validator loads and compiles the contract while the database starts (and migrates).
  const contract = contractValidator({ validateResponses: config.validateResponses });
  const contractWarmedUp = warmUpContractValidator(contract);
  const database = await openDatabase(config, log, options.embedded);
  // The simulated backends stand for systems outside the platform: they have connections of
  // their own, so that a backend call never waits for one of the API's, and the transaction
  // guard refuses a backend call made inside a transaction.
  // The embedded object store serves S3 requests on these connections too: a few more of them.
  // None is kept while idle: a backend at rest needs no connection (each is a PostgreSQL process
  // of 15 to 25 MiB), and the first call after a quiet second opens one in a few milliseconds.
  const backendPoolSize = config.simulators.poolSize + (config.drivers.objectStore === 'embedded' ? EMBEDDED_STORE_CONNECTIONS : 0);
  const backendPool = createPool(database.connectionString, backendPoolSize, config.database, 'cloud-platform-backends', 0);
  // The process's own connection: it LISTENs for the engine and the credential cache, and holds
  // the embedded store's instance lock. Started once everything has subscribed (composePlatform).
  const listener = new DatabaseListener(database.pool.options, log.child({ component: 'listener' }));
  let embeddedStore: EmbeddedObjectStore | undefined;
  try {
    const drivers: DriverSet = options.drivers
      ? { ...options.drivers(backendPool), embeddedStore: undefined }
      : await createDrivers(config.drivers, backendPool, {
          simulators: config.simulators,
          dataDir: config.dataDir,
          secretStoreKey: config.s3.secretStoreKey,
          incompleteUploadRetentionMs: config.s3.incompleteUploadRetentionSeconds * 1000,
          rgw: config.rgw,
          listener,
          qemu: config.qemu,
          log,
        });
    embeddedStore = drivers.embeddedStore;
    await contractWarmedUp;
    return await composePlatform(config, log, options.clock ?? systemClock, drivers, database, backendPool, contract, listener);
  } catch (error) {
    // A refused start (a bad catalogue, a port in use) stops the database it opened.
    await embeddedStore?.close().catch(() => {});
    await backendPool.end().catch(() => {});
    await database.stop().catch(() => {});
    throw error;
  }
}

async function composePlatform(
  config: Config,
  log: Logger,
  clock: Clock,
  drivers: DriverSet,
  database: Database,
  backendPool: Pool,
  contract: RequestHandler[],
  listener: DatabaseListener,
): Promise<Platform> {
  const { pool } = database;
  const orgClock = createOrganizationClock(clock, config.testClocks);
  // A bad price list stops start-up here, with a message naming the file and the entry.
  const prices = loadPriceList(config.priceListFile);
  // Known once the server listens (PORT=0 picks a port); PUBLIC_BASE_URL wins when set.
  let listeningUrl = `http://${config.host}:${config.port}`;
  const publicBaseUrl = () => config.publicBaseUrl ?? listeningUrl;
  const dependencies: AreaDependencies = {
    pool,
    config,
    clock,
    orgClock,
    publicBaseUrl,
    log,
    drivers,
    budget: createBudgetGuard(orgClock, prices),
  };
  const organization = organizationArea(dependencies, storageQuotaOf);
  // API keys already looked up; emptied on every change a process announces (LISTEN/NOTIFY).
  const credentials = new CredentialCache(listener);
  const apiTokens = apiTokensArea(dependencies, () => credentials.changed());
  const compute = computeArea(dependencies);
  // S3 keys are cached in a section of the same cache: the revoke's answer waits for the announcement.
  const storage = storageArea(dependencies, () => credentials.changed());
  const invoiceLinks = invoiceLinkSource(pool, { baseUrl: publicBaseUrl, ttlSeconds: config.invoiceLinkTtlSeconds });
  const billing = billingArea(dependencies, {
    usageSources: [compute.usage, storage.usage].filter((source) => source !== undefined),
    prices,
    links: invoiceLinks,
    // Emptied on every change of an account or its usage a process announces (LISTEN/NOTIFY).
    cache: createBillingCache(listener),
  });
  const audit = auditArea(dependencies);
  // Typed as the whole registry: an operation type of the contract without an executor does not compile.
  const executors: ExecutorRegistry = { ...compute.executors, ...storage.executors };
  const engine = new OperationEngine(
    pool,
    executors,
    config.engine,
    log.child({ component: 'engine' }),
    `${process.pid}-${randomUUID().slice(0, 8)}`,
    listener,
  );
  const operations = operationsArea(dependencies, engine);
  const health = healthArea(dependencies, engine);
  // Typed by the generated OperationHandlers: an operation without a handler does not compile.
  const handlers: OperationHandlers<RequestContext> = {
    ...organization.handlers,
    ...apiTokens.handlers,
    ...billing.handlers,
    ...operations.handlers,
    ...audit.handlers,
    ...compute.handlers,
    ...storage.handlers,
    ...health.handlers,
  };
  const areas: Array<Pick<Area<never>, 'background'>> = [organization, apiTokens, billing, operations, audit, compute, storage];

  const identity = new IdentityResolver(pool, config.oidc ? new OidcVerifier(config.oidc) : undefined, credentials);
  const metrics = new Metrics();
  metrics.watchPool('api', pool);
  metrics.watchPool('backends', backendPool);
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
    handlers,
    metrics,
    rateLimits,
    contract,
    pages: [consolePage(), invoiceDocuments(pool, invoiceLinks)],
  });
  await listener.start();
  const server = await listen(app, config.port, config.host).catch(async (error: unknown) => {
    await listener.stop();
    throw error;
  });
  const consoleGateway = createConsoleGateway({
    pool,
    orgClock,
    hypervisor: drivers.hypervisor,
    config: config.console,
    log: log.child({ component: 'console-gateway' }),
  });
  consoleGateway.attach(server);
  metrics.watchConsoleSessions(() => consoleGateway.openSessions);
  const metricsEndpoint =
    config.metricsPort === undefined
      ? undefined
      : await metrics.serve(config.metricsPort, config.host).catch(async (error: unknown) => {
          await new Promise((resolve) => server.close(resolve));
          await listener.stop();
          throw error;
        });
  const s3 = drivers.embeddedStore
    ? await startS3Endpoint({
        store: drivers.embeddedStore,
        access: createAccess(pool, drivers.embeddedStore, credentials.section<Caller>('s3')),
        port: config.s3.port,
        host: config.host,
        region: config.s3.region,
        log: log.child({ component: 's3' }),
      }).catch(async (error: unknown) => {
        await new Promise((resolve) => server.close(resolve));
        await metricsEndpoint?.close();
        await listener.stop();
        throw error;
      })
    : undefined;
  answerClientErrors(server, log.child({ component: 'http' }), { https: config.publicBaseUrl?.startsWith('https:') ?? false, rateLimits });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  listeningUrl = url;

  const background = new BackgroundRunner(log.child({ component: 'background' }), metrics);
  if (config.background) {
    await engine.start();
    background.start([
      ...areas.flatMap((area) => area.background ?? []),
      { name: 'idempotency-purge', intervalMs: 3_600_000, run: async () => void (await purgeExpiredKeys(pool)) },
      ...(drivers.embeddedStore
        ? [{ name: 'object-store-sweep', intervalMs: config.intervals.objectStoreSweepMs, run: () => drivers.embeddedStore!.sweep() }]
        : []),
    ]);
  }

  const idleCollection = config.collectWhenIdle ? await startIdleCollection(log) : undefined;

  return {
    url,
    s3Url: s3?.url ?? config.rgw?.endpoint,
    s3PublicUrl: config.rgw ? config.rgw.publicUrl : s3 ? (config.s3.publicUrl ?? s3.url) : undefined,
    metricsUrl: metricsEndpoint?.url,
    pool,
    async close() {
      // No new connections; requests in flight finish. Keep-alive connections are closed as
      // soon as they are idle, rather than when their keep-alive timeout ends.
      consoleGateway.close();
      await new Promise<void>((resolve) => {
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      });
      idleCollection?.stop();
      await background.stop();
      if (config.background) await engine.stop();
      await metricsEndpoint?.close();
      await s3?.close();
      await drivers.embeddedStore?.close();
      // Last: it holds the store's instance lock, which S3 writes finishing above still need.
      await listener.stop();
      await backendPool.end();
      await database.stop();
    },
  };
}

function listen(app: ReturnType<typeof createApp>, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(server)));
  });
}
