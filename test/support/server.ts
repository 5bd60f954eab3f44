// A real server for a test file: its own database in the run's PostgreSQL, the real platform
// (HTTP on a free port, operations engine, simulated backends), and helpers to call it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'lossless-json';
import { parseJson } from '../../client/json.ts';
import pg from 'pg';
import { inject } from 'vitest';
import { seedDemoHistory } from '../../server/areas/billing/metering/usage-ledger.ts';
import { addMember, createApiKeyRow, createOrganization } from '../../server/areas/identity/organizations/organization-service.ts';
import { loadConfig } from '../../server/config.ts';
import type { Clock } from '../../server/core/clock.ts';
import { withTransaction } from '../../server/db/pool.ts';
import { createLogger } from '../../server/logging.ts';
import { startPlatform, type Platform } from '../../server/platform.ts';
import { readBootstrap } from '../../scripts/lib/bootstrap-file.ts';
import { startAsNpmStart } from '../../scripts/lib/npm-start.ts';
import { freePort, waitForHttp, type Started } from './processes.ts';
import { databaseUrlBeside, MIGRATED_TEMPLATE } from './run-databases.ts';

/** Test defaults: quick backends and loops, quiet logs. A test file can override any of them. */
export const TEST_ENV: Record<string, string> = {
  LOG_LEVEL: 'silent',
  SIM_LATENCY_MS: '5-20',
  WORKER_POLL_MS: '50',
  // Renewed every third of it: at 3 s, a busy machine (load 13) ran renewals late enough for an
  // attempt to be taken for a crashed worker's (attempt 4 of 3, internal_error).
  WORKER_LEASE_MS: '10000',
  OPERATION_RETRY_BASE_MS: '50',
  OPERATION_RETRY_MAX_MS: '400',
  RECONCILE_INTERVAL_MS: '200',
  SCHEDULER_INTERVAL_MS: '200',
  METERING_INTERVAL_MS: '500',
  RATE_LIMIT: '100000',
  RATE_LIMIT_ANONYMOUS: '100000',
  // Any free port: test servers run side by side.
  METRICS_PORT: '0',
  S3_PORT: '0',
  // The simulated object store (figures only, faults injectable); the S3 tests choose `embedded`.
  OBJECT_STORE_DRIVER: 'simulator',
  // Most test servers share a test worker's heap with the tests: a full collection there, each
  // time the worker waits, would only slow the run. test/server/idle-memory.system.test.ts turns it on.
  GC_WHEN_IDLE: 'false',
  // The S3 endpoint at the API's priority: a test server shares the run's cores with the other
  // test worker, and an endpoint yielding to all of it would only slow the S3 tests under load.
  // npm-start.system.test.ts checks the default (a lower priority for S3).
  S3_NICE: '0',
};

/**
 * A new database in the test run's PostgreSQL: empty, or (`migrated`) a copy of the run's template
 * with every migration of the platform, the simulators and the embedded store already applied,
 * which a server starting on it finds up to date.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<string> {
  const adminUrl = inject('postgresAdminUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  // FILE_COPY copies the template's files as they are. The default since PostgreSQL 15 (WAL_LOG)
  // writes each of its blocks to the WAL as well: with the run's PostgreSQL not syncing anything
  // (global-setup.ts), that was the larger cost, 360 to 550 ms a database against 150 to 390 ms.
  await admin.query(`CREATE DATABASE ${name}${options.migrated ? ` TEMPLATE ${MIGRATED_TEMPLATE}` : ''} STRATEGY FILE_COPY`);
  await admin.end();
  return databaseUrlBeside(adminUrl, name);
}

export interface ApiResponse<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
  text: string;
}

/** An organization of the test server, with its owner's API key. */
export interface TestOrg {
  orgId: string;
  ownerKey: string;
  ownerMemberId: string;
  /** Calls the API as this organization's owner (or with `key`). Paths are relative to /v1/orgs/{org}. */
  call<Body = any>(method: string, orgPath: string, options?: CallOptions): Promise<ApiResponse<Body>>;
  /** A new member of the organization with an API key of the given role and scopes. */
  memberKey(role: 'owner' | 'member', scopes?: Array<'read' | 'write'>): Promise<string>;
}

export interface CallOptions {
  body?: unknown;
  /** A raw body, sent as is (for malformed JSON). */
  rawBody?: string;
  key?: string | null;
  headers?: Record<string, string>;
}

export interface TestServer {
  url: string;
  /** Where the S3 endpoint listens (the embedded store's, or the Ceph gateway's with rgw). */
  s3Url: string | undefined;
  /** The S3 endpoint the platform tells users (bootstrap.json, the start-up log). */
  s3PublicUrl: string | undefined;
  dataDir: string;
  metricsUrl: string | undefined;
  databaseUrl: string;
  pool: pg.Pool;
  org: TestOrg;
  /** A new organization; `demoHistory`: with three invented past months, as DEMO_HISTORY gives. */
  createOrg(name?: string, options?: { demoHistory?: boolean }): Promise<TestOrg>;
  /** Polls an operation until it finishes and returns it. */
  waitForOperation(org: TestOrg, operationId: string, timeoutMs?: number): Promise<any>;
  close(): Promise<void>;
}

/** Reads a JSON body as the typed client does (its own parser): integers beyond 2^53 as bigint. */
export const parseExact = (text: string): any => parseJson(text);

export async function call(
  baseUrl: string,
  method: string,
  urlPath: string,
  options: CallOptions & { defaultKey?: string } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  const key = options.key === undefined ? options.defaultKey : options.key;
  if (key) headers.Authorization = `Bearer ${key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = stringify(options.body) ?? undefined;
  if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type'))
    headers['Content-Type'] = 'application/json';
  const response = await fetch(`${baseUrl}${urlPath}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text ? parseExact(text) : undefined };
}

function orgClient(url: string, pool: pg.Pool, orgId: string, ownerKey: string, ownerMemberId: string): TestOrg {
  return {
    orgId,
    ownerKey,
    ownerMemberId,
    call: (method, orgPath, options = {}) => call(url, method, `/v1/orgs/${orgId}${orgPath}`, { ...options, defaultKey: ownerKey }),
    async memberKey(role, scopes = ['read', 'write']) {
      return withTransaction(pool, async (tx) => {
        const memberId = await addMember(tx, { orgId, subject: `${role}-${randomBytes(4).toString('hex')}`, issuer: null, role });
        return (await createApiKeyRow(tx, { orgId, memberId, name: `${role} key`, scopes, expiresAt: null })).secret;
      });
    },
  };
}

async function newOrg(url: string, pool: pg.Pool, name: string, options: { demoHistory?: boolean } = {}): Promise<TestOrg> {
  const created = await withTransaction(pool, async (tx) => {
    const organization = await createOrganization(tx, { name, ownerSubject: `owner-${randomBytes(4).toString('hex')}` });
    if (options.demoHistory) await seedDemoHistory(tx, organization.orgId, new Date());
    return organization;
  });
  return orgClient(url, pool, created.orgId, created.apiKey, created.memberId);
}

/**
 * The real platform in this test process, on its own database; `databaseUrl`: on another server's
 * (closed first), as a restart with another configuration would find it.
 */
export async function startTestServer(
  env: Record<string, string> = {},
  options: { clock?: Clock; databaseUrl?: string; resolveHost?: (hostname: string) => Promise<string[]> } = {},
): Promise<TestServer> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase({ migrated: true }));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-test-'));
  const config = loadConfig({
    ...TEST_ENV,
    ...env,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
  });
  const platform: Platform = await startPlatform(config, createLogger(config.logLevel), {
    clock: options.clock,
    resolveHost: options.resolveHost,
  });
  const pool = platform.pool;
  const org = await newOrg(platform.url, pool, 'Acme Robotics');
  return {
    url: platform.url,
    s3Url: platform.s3Url,
    s3PublicUrl: platform.s3PublicUrl,
    dataDir,
    metricsUrl: platform.metricsUrl,
    databaseUrl,
    pool,
    org,
    createOrg: (name = 'Other Org', orgOptions = {}) => newOrg(platform.url, pool, name, orgOptions),
    waitForOperation: (testOrg, operationId, timeoutMs) => waitForOperation(testOrg, operationId, timeoutMs),
    async close() {
      await platform.close();
      // The embedded store's objects live here (a gigabyte for the ceiling tests): nothing is left behind.
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function waitForOperation(org: TestOrg, operationId: string, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await org.call('GET', `/operations/${operationId}`);
    if (response.status !== 200) throw new Error(`getOperation ${operationId}: ${response.status} ${response.text}`);
    if (response.body.finished_at !== null) return response.body;
    if (Date.now() > deadline) throw new Error(`operation ${operationId} still ${response.body.state} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `npm start` as a child process (for crash and shutdown tests), on the given database. */
export async function startServerProcess(
  databaseUrl: string,
  env: Record<string, string> = {},
  options: { dataDir?: string; port?: number } = {},
): Promise<Started & { url: string; dataDir: string }> {
  const port = options.port ?? (await freePort());
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'cloud-platform-proc-'));
  const started = startAsNpmStart({
    ...TEST_ENV,
    ...env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/v1/orgs/00000000-0000-0000-0000-000000000000`, started);
  return { ...started, url, dataDir };
}

/** The bootstrap credentials the server writes on its first start (waits for them briefly). */
export { readBootstrap };
