import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperationHandlers } from '../generated/operations.ts';
import { createApp } from './app.ts';
import type { Area, AreaDependencies } from './areas/area.ts';
import { apiTokensArea } from './areas/api-tokens/area.ts';
import { auditArea } from './areas/audit/area.ts';
import { billingArea, createBudgetGuard } from './areas/billing/area.ts';
import { computeArea } from './areas/compute/area.ts';
import { healthArea } from './areas/health/area.ts';
import { operationsArea } from './areas/operations/area.ts';
import { organizationArea } from './areas/organization/area.ts';
import { storageArea } from './areas/storage/area.ts';
import { storageQuotaOf } from './areas/storage/quota-figures.ts';
import { IdentityResolver } from './auth/identity.ts';
import { OidcVerifier } from './auth/oidc.ts';
import type { Config } from './config.ts';
import { BackgroundRunner } from './core/background.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { purgeExpiredKeys } from './core/idempotency.ts';
import type { RequestContext } from './core/request-context.ts';
import { startEmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { createPool, type Pool } from './db/pool.ts';
import type { Drivers } from './drivers/index.ts';
import { createDrivers, driverMigrations } from './drivers/selection.ts';
import { OperationEngine } from './engine/engine.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { createRateLimits } from './http/rate-limit.ts';
import type { ExecutorRegistry } from './engine/executor.ts';
import type { Logger } from './logging.ts';
import { Metrics } from './metrics.ts';

export interface Platform {
  /** Where the API listens, such as http://127.0.0.1:8080. */
  url: string;
  /** Where Prometheus scrapes, such as http://127.0.0.1:8082/metrics; undefined when METRICS_PORT=off. */
  metricsUrl: string | undefined;
  pool: Pool;
  /** Graceful: stops accepting requests, lets in-flight ones finish, releases claimed work. */
  close(): Promise<void>;
}

/** The database this configuration names: DATABASE_URL, or the embedded one in DATA_DIR. */
export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  const embedded = config.databaseUrl ? undefined : await startEmbeddedDatabase(config.dataDir, (message) => log.info(message));
  const connectionString = config.databaseUrl ?? embedded!.connectionString;
  const pool = createPool(connectionString, config.database.poolSize, config.database);
  try {
    await migrate(pool, driverMigrations(config.drivers));
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
  options: { clock?: Clock; drivers?: (pool: Pool) => Drivers } = {},
): Promise<Platform> {
  const database = await openDatabase(config, log);
  // The simulated backends stand for systems outside the platform: they have connections of
  // their own, so that a backend call never waits for one of the API's, and the transaction
  // guard refuses a backend call made inside a transaction.
  const backendPool = createPool(database.connectionString, config.simulators.poolSize, config.database, 'cloud-platform-simulators');
  try {
    const drivers = options.drivers?.(backendPool) ?? createDrivers(config.drivers, backendPool, config.simulators, config.rgw);
    return await composePlatform(config, log, options.clock ?? systemClock, drivers, database, backendPool);
  } catch (error) {
    // A refused start (a bad catalogue, a port in use) stops the database it opened.
    await backendPool.end().catch(() => {});
    await database.stop().catch(() => {});
    throw error;
  }
}

async function composePlatform(
  config: Config,
  log: Logger,
  clock: Clock,
  drivers: Drivers,
  database: Database,
  backendPool: Pool,
): Promise<Platform> {
  const { pool } = database;
  const dependencies: AreaDependencies = { pool, config, clock, log, drivers, budget: createBudgetGuard(clock) };
  const organization = organizationArea(dependencies, storageQuotaOf);
  const apiTokens = apiTokensArea(dependencies);
  const compute = computeArea(dependencies);
  const storage = storageArea(dependencies);
  const billing = billingArea(
    dependencies,
    [compute.usage, storage.usage].filter((source) => source !== undefined),
  );
  const audit = auditArea(dependencies);
  // Typed as the whole registry: an operation type of the contract without an executor does not compile.
  const executors: ExecutorRegistry = { ...compute.executors, ...storage.executors };
  const engine = new OperationEngine(
    pool,
    executors,
    config.engine,
    log.child({ component: 'engine' }),
    `${process.pid}-${randomUUID().slice(0, 8)}`,
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

  const identity = new IdentityResolver(pool, config.oidc ? new OidcVerifier(config.oidc) : undefined);
  const metrics = new Metrics();
  metrics.watchPool('api', pool);
  metrics.watchPool('backends', backendPool);
  metrics.watchOperations(pool);
  const rateLimits = createRateLimits(config.rateLimit);
  const app = createApp({ config, pool, log, identity, handlers, metrics, rateLimits });
  const server = await listen(app, config.port, config.host);
  const metricsEndpoint =
    config.metricsPort === undefined
      ? undefined
      : await metrics.serve(config.metricsPort, config.host).catch(async (error: unknown) => {
          await new Promise((resolve) => server.close(resolve));
          throw error;
        });
  answerClientErrors(server, log.child({ component: 'http' }), { https: config.publicBaseUrl?.startsWith('https:') ?? false, rateLimits });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  const background = new BackgroundRunner(log.child({ component: 'background' }), metrics);
  if (config.background) {
    await engine.start();
    background.start([
      ...areas.flatMap((area) => area.background ?? []),
      { name: 'idempotency-purge', intervalMs: 3_600_000, run: async () => void (await purgeExpiredKeys(pool)) },
    ]);
  }

  return {
    url,
    metricsUrl: metricsEndpoint?.url,
    pool,
    async close() {
      // No new connections; requests in flight finish. Keep-alive connections are closed as
      // soon as they are idle, rather than when their keep-alive timeout ends.
      await new Promise<void>((resolve) => {
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      });
      await background.stop();
      if (config.background) await engine.stop();
      await metricsEndpoint?.close();
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
