import { availableParallelism } from 'node:os';
import path from 'node:path';

/**
 * The server's configuration, parsed once at start-up from the environment. A bad value stops
 * start-up with a message naming the variable.
 */
export interface Config {
  host: string;
  port: number;
  /** The address clients use, written to bootstrap.json; the listening address when unset. */
  publicBaseUrl: string | undefined;
  /** Where the embedded PostgreSQL and bootstrap.json live. */
  dataDir: string;
  /** An external PostgreSQL; when absent, an embedded one runs in `dataDir`. */
  databaseUrl: string | undefined;
  database: DatabaseConfig;
  logLevel: string;
  /** `pretty` (human-readable lines) or `json`; by default pretty on a terminal, JSON otherwise. */
  logFormat: 'pretty' | 'json';
  /** Where Prometheus metrics are served (`/metrics`): a port of their own; undefined when off. */
  metricsPort: number | undefined;
  /** Validate every response against the contract (a failure is a 500 and a log line). */
  validateResponses: boolean;
  oidc: OidcConfig | undefined;
  rateLimit: { limit: number; anonymousLimit: number; windowSeconds: number };
  engine: EngineConfig;
  intervals: LoopIntervals;
  /**
   * Which backend each driver talks to (see drivers/selection.ts). The object store's default is
   * `embedded` (drivers/embedded/: objects stored under DATA_DIR, served by the S3 endpoint);
   * `simulator` keeps objects as figures only, with no S3 endpoint; `rgw` is a Ceph RADOS Gateway,
   * which serves S3 itself (the embedded endpoint is then not started).
   */
  drivers: { compute: 'simulator'; objectStore: 'embedded' | 'simulator' | 'rgw'; billing: 'simulator' };
  /** The S3 endpoint of the embedded object store. */
  s3: S3Config;
  simulators: SimulatorConfig;
  /** The Ceph RADOS Gateway of OBJECT_STORE_DRIVER=rgw; undefined with another object store. */
  rgw: RgwConfig | undefined;
  /** Background loops (operations workers, reconciler, scheduler, metering); off in some tests. */
  background: boolean;
  /** New organizations made at first start get an invented, labelled usage history (demos, sandboxes). */
  demoHistory: boolean;
  /** The compute catalogue (regions, images, pools, profiles); the shipped default when absent. */
  catalogueFile: string | undefined;
  /** The price list (JSON); the shipped default when absent. */
  priceListFile: string | undefined;
  /** Organizations' clocks can be moved forward by an operator (tests, sandboxes); see core/test-clocks.ts. */
  testClocks: boolean;
  /** A full garbage collection once the process is quiet after a burst (idle-collection.ts). */
  collectWhenIdle: boolean;
  console: ConsoleConfig;
  /** How long a signed link to an invoice's page or PDF works. */
  invoiceLinkTtlSeconds: number;
}

/** The console gateway's sessions. */
export interface ConsoleConfig {
  /** A session without a keystroke for this long is closed. */
  idleTimeoutSeconds: number;
  /** How often open sessions are checked against their instance and the API key that opened them. */
  checkIntervalMs: number;
}

export interface S3Config {
  /** Its own port on HOST (S3_PORT, default 9000; 0 picks a free one). */
  port: number;
  /** The address users are told (S3_PUBLIC_URL); the listening address when unset. */
  publicUrl: string | undefined;
  /** The region signatures are made for (S3_REGION); any region is accepted, this one is reported. */
  region: string;
  /** The secret store's sealing key (SECRET_STORE_KEY, base64 of 32 bytes); DATA_DIR/secret-store.key when unset. */
  secretStoreKey: string | undefined;
  /**
   * Multipart uploads neither completed nor aborted this long after they began are aborted by the
   * store's sweep, their parts' space given back (S3_INCOMPLETE_UPLOAD_RETENTION_SECONDS, default
   * 7 days: what S3's lifecycle rule AbortIncompleteMultipartUpload is commonly set to).
   */
  incompleteUploadRetentionSeconds: number;
  /** A request body that stops coming for this long is ended with S3's RequestTimeout (S3_BODY_TIMEOUT_SECONDS, default 20, as S3's). */
  bodyTimeoutSeconds: number;
}

export interface OidcConfig {
  issuer: string;
  audience: string;
  /** Defaults to the issuer's discovery document's `jwks_uri`. */
  jwksUrl: string | undefined;
}

export interface EngineConfig {
  /** Operations one process works on at once. */
  concurrency: number;
  pollIntervalMs: number;
  /** How long a claimed operation stays ours without a heartbeat. */
  leaseMs: number;
  maxAttempts: number;
  /** Backoff before retry n is retryBaseMs * 2^(n-1), capped at retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
}

/** How often the background loops run (when `background` is on). */
export interface LoopIntervals {
  reconcileMs: number;
  /** Metering, which is also the billing run. */
  meteringMs: number;
  schedulerMs: number;
  /** The embedded object store's sweep (interrupted writes, garbage, abandoned multipart uploads). */
  objectStoreSweepMs: number;
}

/**
 * The connection pool and the timeouts that keep a stopped, unreachable or frozen PostgreSQL
 * from hanging requests: past them, a request answers 503 with Retry-After.
 */
export interface DatabaseConfig {
  /** Connections this process holds at most (the simulated backends have their own few). */
  poolSize: number;
  /** Waiting for a connection, new or free, before giving up. */
  connectionTimeoutMs: number;
  /** PostgreSQL's `statement_timeout`; the client waits a second longer for an answer. */
  statementTimeoutMs: number;
  /** PostgreSQL's `idle_in_transaction_session_timeout`. */
  idleInTransactionTimeoutMs: number;
}

export interface SimulatorConfig {
  /** Connections of the simulated backends, which stand for systems outside the platform. */
  poolSize: number;
  /** Latency of every simulated backend call, drawn uniformly from [min, max]. */
  latencyMs: [number, number];
  /** Fault rules, see drivers/simulators/faults.ts. */
  faults: string;
  /**
   * Latency added to the embedded object store's driver calls, for tests: SIM_LATENCY_MS when it
   * is set, none otherwise (the store is real; the simulators' default latency is not its own).
   */
  embeddedStoreLatencyMs: [number, number];
}

/** A Ceph RADOS Gateway (README: "Object storage on Ceph"). */
export interface RgwConfig {
  /** Where the platform reaches the gateway's Admin Ops and S3 APIs (RGW_ENDPOINT). */
  endpoint: string;
  /** The S3 endpoint users are told (RGW_PUBLIC_URL, or S3_PUBLIC_URL); the endpoint when unset. */
  publicUrl: string;
  /** The region signatures name (RGW_REGION); RGW's zonegroup accepts its own api name or us-east-1. */
  region: string;
  /** An RGW user with the caps `users=*;buckets=*;usage=*;metadata=*`. */
  adminAccessKey: string;
  adminSecretKey: string;
  /** One gateway call, at most (RGW_TIMEOUT_MS). */
  timeoutMs: number;
}

export class ConfigError extends Error {}

/**
 * Connections for the machine: PostgreSQL does at most one query per core at a time, so a few
 * more connections than cores keep it busy; more only queue inside PostgreSQL instead of the
 * pool, and each costs memory. 6 on 2 cores, 16 from 7 cores on.
 */
function defaultPoolSize(): number {
  return Math.min(16, 2 * availableParallelism() + 2);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST ?? '127.0.0.1';
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const oidcIssuer = env.OIDC_ISSUER;
  const objectStore = oneOf(env, 'OBJECT_STORE_DRIVER', 'embedded', ['embedded', 'simulator', 'rgw']);
  if (oidcIssuer && !env.OIDC_AUDIENCE) throw new ConfigError('OIDC_AUDIENCE is required when OIDC_ISSUER is set');
  return {
    host,
    port,
    publicBaseUrl: env.PUBLIC_BASE_URL ? url(env.PUBLIC_BASE_URL, 'PUBLIC_BASE_URL') : undefined,
    dataDir: path.resolve(env.DATA_DIR ?? 'data'),
    databaseUrl: env.DATABASE_URL || undefined,
    database: {
      poolSize: integer(env, 'DATABASE_POOL_SIZE', defaultPoolSize(), 2, 1000),
      connectionTimeoutMs: integer(env, 'DATABASE_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
      statementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 100, 3_600_000),
      idleInTransactionTimeoutMs: integer(env, 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 15_000, 100, 3_600_000),
    },
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    logFormat: oneOf(env, 'LOG_FORMAT', process.stdout.isTTY ? 'pretty' : 'json', ['pretty', 'json']),
    // Beside the API's port by default (PORT + 2); 0 picks a free port.
    metricsPort: env.METRICS_PORT === 'off' ? undefined : integer(env, 'METRICS_PORT', port === 0 ? 0 : port + 2, 0, 65_535),
    validateResponses: boolean(env, 'VALIDATE_RESPONSES', true),
    oidc: oidcIssuer
      ? {
          issuer: url(oidcIssuer, 'OIDC_ISSUER'),
          audience: env.OIDC_AUDIENCE!,
          jwksUrl: env.OIDC_JWKS_URL ? url(env.OIDC_JWKS_URL, 'OIDC_JWKS_URL') : undefined,
        }
      : undefined,
    rateLimit: {
      limit: integer(env, 'RATE_LIMIT', 600, 1, 1_000_000),
      anonymousLimit: integer(env, 'RATE_LIMIT_ANONYMOUS', 100, 1, 1_000_000),
      windowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 3600),
    },
    engine: {
      // Attempts mostly wait (on a backend, on the database): many at once cost little, and
      // their successes are recorded in batches (engine/engine.ts).
      concurrency: integer(env, 'WORKER_CONCURRENCY', 32, 0, 256),
      pollIntervalMs: integer(env, 'WORKER_POLL_MS', 250, 10, 60_000),
      leaseMs: integer(env, 'WORKER_LEASE_MS', 30_000, 100, 3_600_000),
      maxAttempts: integer(env, 'OPERATION_MAX_ATTEMPTS', 5, 1, 100),
      retryBaseMs: integer(env, 'OPERATION_RETRY_BASE_MS', 500, 1, 600_000),
      retryMaxMs: integer(env, 'OPERATION_RETRY_MAX_MS', 30_000, 1, 3_600_000),
    },
    intervals: {
      reconcileMs: integer(env, 'RECONCILE_INTERVAL_MS', 5_000, 10, 3_600_000),
      meteringMs: integer(env, 'METERING_INTERVAL_MS', 60_000, 10, 3_600_000),
      schedulerMs: integer(env, 'SCHEDULER_INTERVAL_MS', 15_000, 10, 3_600_000),
      objectStoreSweepMs: integer(env, 'OBJECT_STORE_SWEEP_INTERVAL_MS', 60_000, 10, 3_600_000),
    },
    drivers: {
      compute: oneOf(env, 'COMPUTE_DRIVER', 'simulator', ['simulator']),
      objectStore,
      billing: oneOf(env, 'BILLING_DRIVER', 'simulator', ['simulator']),
    },
    s3: {
      port: integer(env, 'S3_PORT', 9000, 0, 65_535),
      publicUrl: env.S3_PUBLIC_URL ? url(env.S3_PUBLIC_URL, 'S3_PUBLIC_URL') : undefined,
      region: env.S3_REGION || 'us-east-1',
      secretStoreKey: env.SECRET_STORE_KEY || undefined,
      incompleteUploadRetentionSeconds: integer(env, 'S3_INCOMPLETE_UPLOAD_RETENTION_SECONDS', 7 * 86_400, 1, 10 * 365 * 86_400),
      bodyTimeoutSeconds: integer(env, 'S3_BODY_TIMEOUT_SECONDS', 20, 1, 3_600),
    },
    simulators: {
      poolSize: integer(env, 'SIM_POOL_SIZE', 4, 1, 100),
      latencyMs: range(env, 'SIM_LATENCY_MS', [20, 120]),
      embeddedStoreLatencyMs: range(env, 'SIM_LATENCY_MS', [0, 0]),
      faults: env.SIM_FAULTS ?? '',
    },
    rgw: objectStore === 'rgw' ? rgwConfig(env) : undefined,
    background: boolean(env, 'BACKGROUND_WORK', true),
    demoHistory: boolean(env, 'DEMO_HISTORY', false),
    catalogueFile: env.CATALOGUE_FILE ? path.resolve(env.CATALOGUE_FILE) : undefined,
    priceListFile: env.PRICE_LIST ? path.resolve(env.PRICE_LIST) : undefined,
    testClocks: boolean(env, 'TEST_CLOCKS', false),
    collectWhenIdle: boolean(env, 'GC_WHEN_IDLE', true),
    console: {
      idleTimeoutSeconds: integer(env, 'CONSOLE_IDLE_TIMEOUT_SECONDS', 900, 1, 86_400),
      checkIntervalMs: integer(env, 'CONSOLE_CHECK_INTERVAL_MS', 1_000, 10, 60_000),
    },
    invoiceLinkTtlSeconds: integer(env, 'INVOICE_LINK_TTL_SECONDS', 86_400, 60, 31_536_000),
  };
}

function rgwConfig(env: NodeJS.ProcessEnv): RgwConfig {
  const required = (name: string): string => {
    const value = env[name];
    if (!value) throw new ConfigError(`${name} is required when OBJECT_STORE_DRIVER is rgw`);
    return value;
  };
  const endpoint = url(required('RGW_ENDPOINT'), 'RGW_ENDPOINT');
  const publicName = env.RGW_PUBLIC_URL ? 'RGW_PUBLIC_URL' : 'S3_PUBLIC_URL';
  return {
    endpoint,
    publicUrl: env[publicName] ? url(env[publicName], publicName) : endpoint,
    region: env.RGW_REGION || 'us-east-1',
    adminAccessKey: required('RGW_ADMIN_ACCESS_KEY'),
    adminSecretKey: required('RGW_ADMIN_SECRET_KEY'),
    timeoutMs: integer(env, 'RGW_TIMEOUT_MS', 10_000, 100, 600_000),
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, not ${JSON.stringify(raw)}`);
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, fallback: T, values: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!values.includes(raw as T)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, not ${JSON.stringify(raw)}`);
  return raw as T;
}

function range(env: NodeJS.ProcessEnv, name: string, fallback: [number, number]): [number, number] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^(\d+)(?:-(\d+))?$/.exec(raw);
  if (!match) throw new ConfigError(`${name} must be milliseconds, "N" or "MIN-MAX", not ${JSON.stringify(raw)}`);
  const min = Number(match[1]);
  const max = match[2] === undefined ? min : Number(match[2]);
  if (max < min) throw new ConfigError(`${name}: ${max} is below ${min}`);
  return [min, max];
}

function url(raw: string, name: string): string {
  try {
    return new URL(raw).toString().replace(/\/$/, '');
  } catch {
    throw new ConfigError(`${name} must be a URL, not ${JSON.stringify(raw)}`);
  }
}
