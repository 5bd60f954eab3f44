import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  drivers: { compute: 'simulator' | 'qemu'; objectStore: 'embedded' | 'simulator' | 'rgw'; billing: 'simulator' };
  /** The S3 endpoint of the embedded object store. */
  s3: S3Config;
  simulators: SimulatorConfig;
  /** The Ceph RADOS Gateway of OBJECT_STORE_DRIVER=rgw; undefined with another object store. */
  rgw: RgwConfig | undefined;
  /** Real guests on this host (COMPUTE_DRIVER=qemu, drivers/qemu/); undefined with the simulator. */
  qemu: QemuConfig | undefined;
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
  events: EventsConfig;
  invoicing: InvoicingConfig;
}

/**
 * What invoices say beyond their lines: who sells (INVOICE_SELLER_*) and the tax charged
 * (INVOICE_TAX_*). Both are fixed into an invoice when it is issued; a later change applies to
 * invoices issued after it. Every process that issues invoices (the servers, and `npm run admin --
 * clock advance`) reads them, so give them all the same values, as with PRICE_LIST.
 */
export interface InvoicingConfig {
  seller: SellerDetails;
  /** Undefined when no rate is configured: invoices carry no tax and say so. */
  tax: TaxRate | undefined;
}

/** The seller as invoices show it; a field left unset is shown as not configured, never invented. */
export interface SellerDetails {
  legalName: string | undefined;
  /** INVOICE_SELLER_ADDRESS, its lines separated by `;`. Empty when unset. */
  addressLines: string[];
  /** The seller's VAT or other tax identification number. */
  taxId: string | undefined;
  /** Where customers write about their invoices. */
  email: string | undefined;
}

export interface TaxRate {
  /** What the tax is called on invoices (INVOICE_TAX_NAME: VAT, GST, Sales tax); `Tax` by default. */
  name: string;
  /** The rate in hundredths of a percent (INVOICE_TAX_RATE=8.1 is 810), so that it is an exact integer. */
  basisPoints: number;
}

/** The event log and its webhook deliveries (server/areas/events/). */
export interface EventsConfig {
  /** Events are recorded (EVENT_LOG); off only to measure what the log costs (`npm run bench`). */
  recording: boolean;
  /** How long events (and their deliveries) are kept (EVENT_RETENTION_DAYS, default 30). */
  retentionDays: number;
  /**
   * Development only (WEBHOOK_ALLOW_INSECURE): webhook URLs may be plain `http` and reach loopback
   * addresses (a receiver on the developer's machine). Private, link-local and metadata addresses
   * stay refused.
   */
  allowInsecureUrls: boolean;
  /** The pause before each retry of a delivery, in ms (WEBHOOK_RETRY_SCHEDULE, such as `5s,5m,30m`). */
  retryScheduleMs: number[];
  /** One attempt, connection to answer (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** How long a connection to a receiver is kept open after an attempt, for the next; 0: none (WEBHOOK_KEEP_ALIVE_MS). */
  keepAliveMs: number;
  /** Attempts under way to one endpoint at most, across processes (WEBHOOK_ENDPOINT_CONCURRENCY). */
  endpointConcurrency: number;
  /** Attempts under way for one organization at most, across processes (WEBHOOK_ORG_CONCURRENCY). */
  orgConcurrency: number;
  /** Attempts under way at most, across processes (WEBHOOK_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** How often due deliveries are looked for, besides when one is announced (WEBHOOK_DISPATCH_INTERVAL_MS). */
  dispatchIntervalMs: number;
}

/** The Standard Webhooks schedule stretched to about three days: 5 s, 5 min, 30 min, 2, 5, 10, 14, 20, 20 h. */
const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,20h';

/** A rate of input on a long-lived connection: messages (frames) and bytes a second (core/flow-control.ts). */
export interface InputRate {
  messagesPerSecond: number;
  bytesPerSecond: number;
}

/** The console gateway's sessions. */
export interface ConsoleConfig {
  /** A session without a keystroke for this long is closed. */
  idleTimeoutSeconds: number;
  /** How often open sessions are checked against their instance and the API key that opened them. */
  checkIntervalMs: number;
  /** What one session may send: past it the session is not read; a client that keeps sending far past it is closed (4029). */
  input: InputRate;
  /** What the sessions of one organization may send together: past it they are not read. */
  organizationInput: InputRate;
  /** Output that may wait for a client; past it, the client is taken for one that stopped reading and closed (4030). */
  outputBufferBytes: number;
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
  /**
   * The endpoint terminates TLS itself with this certificate chain and key (S3_TLS_CERT and
   * S3_TLS_KEY, PEM files, both or neither): it then serves https only. SSE-C and browsers need TLS.
   */
  tls: { certFile: string; keyFile: string } | undefined;
  /**
   * Behind a proxy that terminates TLS: requests whose X-Forwarded-Proto is https count as
   * having come over TLS (S3_TRUST_FORWARDED_PROTO; only for an endpoint reachable through that proxy alone).
   */
  trustForwardedProto: boolean;
  /** How long a day of lifecycle rules lasts (S3_LIFECYCLE_DAY_SECONDS, default 86400; shorter for tests, as Ceph's debug interval). */
  lifecycleDaySeconds: number;
  /**
   * Unsigned requests, which do only what a bucket shares with everyone (a public ACL, a policy
   * for `"*"`), are served (S3_PUBLIC_ACCESS, default true); false: every one is AccessDenied.
   */
  publicAccess: boolean;
  /** Unsigned requests per client address per RATE_LIMIT_WINDOW_SECONDS (S3_PUBLIC_RATE_LIMIT, default 1200); past it, 503 SlowDown. */
  publicRateLimit: number;
  /**
   * Nice values the S3 endpoint's thread, its hashing threads and, on the embedded PostgreSQL, its
   * connections' backends run above the API's (S3_NICE, default 10, 0 to 19; 0: the API's own):
   * when the CPU is short, S3 transfers wait and API requests do not (s3-priority.ts).
   */
  nice: number;
  /**
   * S3 requests the endpoint starts a second at most while the API is busy (two or more requests
   * in flight; S3_BUSY_RATE, default 25; 0: no limit); the others wait their turn (admission.ts).
   */
  busyRate: number;
  /**
   * MiB of bodies a second the endpoint passes at most while the API is busy, uploads and
   * downloads all together (S3_BUSY_BANDWIDTH, default 8; 0: no limit).
   */
  busyBandwidthMiB: number;
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
  /** How long a claimed operation (or webhook attempt) stays ours without a heartbeat. */
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
  /** The embedded object store's lifecycle run (S3 lifecycle rules: expirations, aborted uploads). */
  lifecycleMs: number;
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

/** A Ceph RADOS Gateway (docs/object-storage.md, "Object storage on Ceph"). */
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

/** The QEMU driver (README: "Real instances with QEMU"). */
export interface QemuConfig {
  /** The system emulator (QEMU_BINARY, default qemu-system-x86_64 on PATH). */
  binary: string;
  /** The disk tool (QEMU_IMG, default qemu-img on PATH). */
  imgBinary: string;
  /** `kvm`, `tcg`, or `auto` (QEMU_ACCEL, default auto: KVM where the CPU offers it and /dev/kvm opens, else TCG). */
  accel: 'auto' | 'kvm' | 'tcg';
  /** The addresses public IPs are given (QEMU_ADDRESS_POOL, default 127.0.0.2-127.0.0.254: loopback, nothing leaves the host). */
  addressPool: { first: string; last: string };
  /** The tiny test image scripts/qemu/build-test-image.sh builds (QEMU_TEST_IMAGE_DIR). */
  testImageDir: string;
  /** How long an ACPI shutdown may take before the guest is powered off hard (QEMU_STOP_TIMEOUT_MS). */
  stopTimeoutMs: number;
}

/** The compute catalogue of COMPUTE_DRIVER=qemu when CATALOGUE_FILE is not set: the images this host can boot. */
export const QEMU_CATALOGUE_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'drivers', 'qemu', 'catalogue.json');

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
  const compute = oneOf(env, 'COMPUTE_DRIVER', 'simulator', ['simulator', 'qemu']);
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
      lifecycleMs: integer(env, 'S3_LIFECYCLE_INTERVAL_MS', 600_000, 10, 86_400_000),
    },
    drivers: {
      compute,
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
      tls: tlsFiles(env),
      trustForwardedProto: boolean(env, 'S3_TRUST_FORWARDED_PROTO', false),
      lifecycleDaySeconds: integer(env, 'S3_LIFECYCLE_DAY_SECONDS', 86_400, 1, 86_400),
      publicAccess: boolean(env, 'S3_PUBLIC_ACCESS', true),
      publicRateLimit: integer(env, 'S3_PUBLIC_RATE_LIMIT', 1200, 1, 1_000_000),
      nice: integer(env, 'S3_NICE', 10, 0, 19),
      busyRate: integer(env, 'S3_BUSY_RATE', 25, 0, 1_000_000),
      busyBandwidthMiB: integer(env, 'S3_BUSY_BANDWIDTH', 8, 0, 1_000_000),
    },
    simulators: {
      poolSize: integer(env, 'SIM_POOL_SIZE', 4, 1, 100),
      latencyMs: range(env, 'SIM_LATENCY_MS', [20, 120]),
      embeddedStoreLatencyMs: range(env, 'SIM_LATENCY_MS', [0, 0]),
      faults: env.SIM_FAULTS ?? '',
    },
    rgw: objectStore === 'rgw' ? rgwConfig(env) : undefined,
    qemu: compute === 'qemu' ? qemuConfig(env) : undefined,
    background: boolean(env, 'BACKGROUND_WORK', true),
    demoHistory: boolean(env, 'DEMO_HISTORY', false),
    catalogueFile: env.CATALOGUE_FILE ? path.resolve(env.CATALOGUE_FILE) : compute === 'qemu' ? QEMU_CATALOGUE_FILE : undefined,
    priceListFile: env.PRICE_LIST ? path.resolve(env.PRICE_LIST) : undefined,
    testClocks: boolean(env, 'TEST_CLOCKS', false),
    collectWhenIdle: boolean(env, 'GC_WHEN_IDLE', true),
    console: {
      idleTimeoutSeconds: integer(env, 'CONSOLE_IDLE_TIMEOUT_SECONDS', 900, 1, 86_400),
      checkIntervalMs: integer(env, 'CONSOLE_CHECK_INTERVAL_MS', 1_000, 10, 60_000),
      // A typist sends tens of keystrokes a second, a paste one message; a serial line carries a
      // few kilobytes a second.
      input: {
        messagesPerSecond: integer(env, 'CONSOLE_INPUT_MESSAGES_PER_SECOND', 200, 1, 100_000),
        bytesPerSecond: integer(env, 'CONSOLE_INPUT_BYTES_PER_SECOND', 32_768, 64, 64 * 1024 * 1024),
      },
      organizationInput: {
        messagesPerSecond: integer(env, 'CONSOLE_ORG_INPUT_MESSAGES_PER_SECOND', 1_000, 1, 1_000_000),
        bytesPerSecond: integer(env, 'CONSOLE_ORG_INPUT_BYTES_PER_SECOND', 163_840, 64, 256 * 1024 * 1024),
      },
      outputBufferBytes: integer(env, 'CONSOLE_OUTPUT_BUFFER_BYTES', 1024 * 1024, 1024, 256 * 1024 * 1024),
    },
    invoiceLinkTtlSeconds: integer(env, 'INVOICE_LINK_TTL_SECONDS', 86_400, 60, 31_536_000),
    events: {
      recording: boolean(env, 'EVENT_LOG', true),
      retentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
      allowInsecureUrls: boolean(env, 'WEBHOOK_ALLOW_INSECURE', false),
      retryScheduleMs: durations(env, 'WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE),
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
      keepAliveMs: integer(env, 'WEBHOOK_KEEP_ALIVE_MS', 4_000, 0, 60_000),
      endpointConcurrency: integer(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 4, 1, 64),
      // An attempt mostly waits on its receiver: many at once cost little. An organization gets
      // an eighth of them at most, so that its slow receivers never hold everyone's.
      orgConcurrency: integer(env, 'WEBHOOK_ORG_CONCURRENCY', 8, 1, 1024),
      maxInFlight: integer(env, 'WEBHOOK_MAX_IN_FLIGHT', 64, 1, 1024),
      dispatchIntervalMs: integer(env, 'WEBHOOK_DISPATCH_INTERVAL_MS', 1_000, 10, 600_000),
    },
    invoicing: invoicingConfig(env),
  };
}

const SELLER_VARIABLES = ['INVOICE_SELLER_NAME', 'INVOICE_SELLER_ADDRESS', 'INVOICE_SELLER_TAX_ID', 'INVOICE_SELLER_EMAIL'] as const;

function invoicingConfig(env: NodeJS.ProcessEnv): InvoicingConfig {
  const given = (name: string) => (env[name] ?? '').trim() || undefined;
  const legalName = invoiceText(given('INVOICE_SELLER_NAME'), 'INVOICE_SELLER_NAME', 200);
  // A seller known only by an address or an id is a typo in the configuration, not a seller.
  if (!legalName) {
    const other = SELLER_VARIABLES.find((name) => given(name));
    if (other) throw new ConfigError(`INVOICE_SELLER_NAME is required when ${other} is set`);
  }
  const address = given('INVOICE_SELLER_ADDRESS');
  const addressLines = address ? address.split(';').map((line) => line.trim()) : [];
  if (addressLines.some((line) => !line) || addressLines.length > 8) {
    throw new ConfigError(`INVOICE_SELLER_ADDRESS must be 1 to 8 non-empty lines separated by ";", not ${JSON.stringify(address)}`);
  }
  addressLines.forEach((line) => invoiceText(line, 'INVOICE_SELLER_ADDRESS', 100));
  const taxId = given('INVOICE_SELLER_TAX_ID');
  if (taxId !== undefined && !/^[A-Za-z0-9][A-Za-z0-9 ./-]{1,30}$/.test(taxId)) {
    throw new ConfigError(
      `INVOICE_SELLER_TAX_ID must be 2 to 31 letters, digits, spaces, ".", "/" or "-" (DE123456789), not ${JSON.stringify(taxId)}`,
    );
  }
  const email = given('INVOICE_SELLER_EMAIL');
  if (email !== undefined && !/^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/.test(email)) {
    throw new ConfigError(`INVOICE_SELLER_EMAIL must be an email address, not ${JSON.stringify(email)}`);
  }
  invoiceText(email, 'INVOICE_SELLER_EMAIL', 254);

  const rate = given('INVOICE_TAX_RATE');
  const taxName = invoiceText(given('INVOICE_TAX_NAME'), 'INVOICE_TAX_NAME', 40);
  if (taxName && rate === undefined)
    throw new ConfigError('INVOICE_TAX_NAME is set but INVOICE_TAX_RATE is not: set the rate too (0 for none)');
  return {
    seller: { legalName, addressLines, taxId, email },
    tax: rate === undefined ? undefined : { name: taxName ?? 'Tax', basisPoints: percentInBasisPoints(rate, 'INVOICE_TAX_RATE') },
  };
}

/** `19` → 1900, `8.1` → 810: a percentage from 0 to 100 with at most two decimal places, read exactly. */
function percentInBasisPoints(raw: string, name: string): number {
  const match = /^(\d{1,3})(?:\.(\d{1,2}))?$/.exec(raw);
  const basisPoints = match ? Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0')) : NaN;
  if (!(basisPoints <= 10_000)) {
    throw new ConfigError(
      `${name} must be a percentage from 0 to 100 with at most two decimal places (19, 8.1), not ${JSON.stringify(raw)}`,
    );
  }
  return basisPoints;
}

/**
 * Characters the invoice PDF can print: its built-in Helvetica is encoded as Windows-1252, so
 * anything outside (Cyrillic, CJK, emoji) would come out as other letters on the PDF.
 */
const PRINTABLE_ON_INVOICES = new Set(new TextDecoder('windows-1252').decode(Uint8Array.from({ length: 256 }, (_, byte) => byte)));

/** A text shown on invoices: at most `max` characters, each printable on the PDF. */
function invoiceText(value: string | undefined, name: string, max: number): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > max) throw new ConfigError(`${name} must be at most ${max} characters, not ${value.length}`);
  const bad = [...value].find((char) => char < ' ' || (char >= '\x7f' && char <= '\x9f') || !PRINTABLE_ON_INVOICES.has(char));
  if (bad !== undefined) {
    const code = `U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    throw new ConfigError(
      `${name} has a character invoices cannot print (${code}): the PDF's font covers Western European (Windows-1252) text`,
    );
  }
  return value;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A comma-separated list of durations (`500ms,5s,5m,2h,1d`), each from 1 ms to 7 days; at most 30. */
function durations(env: NodeJS.ProcessEnv, name: string, fallback: string): number[] {
  const raw = env[name] || fallback;
  const parts = raw.split(',').map((part) => part.trim());
  const values = parts.map((part) => {
    const match = /^(\d+)(ms|s|m|h|d)$/.exec(part);
    const value = match ? Number(match[1]) * DURATION_UNITS[match[2]!]! : NaN;
    if (!(value >= 1 && value <= 7 * 86_400_000)) {
      throw new ConfigError(`${name} must be durations such as "5s,5m,2h" (each 1ms to 7d), not ${JSON.stringify(raw)}`);
    }
    return value;
  });
  if (values.length > 30) throw new ConfigError(`${name} lists at most 30 retries, not ${values.length}`);
  return values;
}

function tlsFiles(env: NodeJS.ProcessEnv): S3Config['tls'] {
  const cert = env.S3_TLS_CERT || undefined;
  const key = env.S3_TLS_KEY || undefined;
  if ((cert === undefined) !== (key === undefined))
    throw new ConfigError('S3_TLS_CERT and S3_TLS_KEY are set together (PEM files), or neither');
  return cert && key ? { certFile: path.resolve(cert), keyFile: path.resolve(key) } : undefined;
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

function qemuConfig(env: NodeJS.ProcessEnv): QemuConfig {
  const pool = (env.QEMU_ADDRESS_POOL || '127.0.0.2-127.0.0.254').split('-');
  const [first = '', last = first] = pool;
  const quad = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
  const valid = (address: string) => quad.test(address) && address.split('.').every((octet) => Number(octet) <= 255);
  if (
    pool.length > 2 ||
    !valid(first) ||
    !valid(last) ||
    first.split('.').slice(0, 3).join('.') !== last.split('.').slice(0, 3).join('.')
  ) {
    throw new ConfigError(
      `QEMU_ADDRESS_POOL must be a range of IPv4 addresses within one /24, such as 127.0.0.2-127.0.0.254, not ${JSON.stringify(env.QEMU_ADDRESS_POOL)}`,
    );
  }
  if (Number(first.split('.')[3]) > Number(last.split('.')[3])) throw new ConfigError(`QEMU_ADDRESS_POOL: ${last} is below ${first}`);
  const cache = env.XDG_CACHE_HOME || path.join(homedir(), '.cache');
  return {
    binary: env.QEMU_BINARY || 'qemu-system-x86_64',
    imgBinary: env.QEMU_IMG || 'qemu-img',
    accel: oneOf(env, 'QEMU_ACCEL', 'auto', ['auto', 'kvm', 'tcg']),
    addressPool: { first, last },
    testImageDir: path.resolve(
      env.QEMU_TEST_IMAGE_DIR || path.join(env.QEMU_CACHE_DIR || path.join(cache, 'cloud-platform', 'qemu'), 'test-image'),
    ),
    stopTimeoutMs: integer(env, 'QEMU_STOP_TIMEOUT_MS', 30_000, 100, 600_000),
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
