// Every way the database can be away is an outage, never an error: a server process on the
// embedded PostgreSQL's Unix-domain socket (as `npm start` runs it) answers 503 with Retry-After on
// the API and S3's own 503 ServiceUnavailable on the S3 endpoint while PostgreSQL is stopped (its
// socket file gone: `connect ENOENT`), frozen (every connection timing out) or cutting
// connections (reset); no operation is failed or charged an attempt for it; and everything works
// again by itself once PostgreSQL is back.
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import type { Started } from '../../support/processes.ts';
import { call, readBootstrap, startServerProcess, type ApiResponse } from '../../support/server.ts';
import { startStoppablePostgres, type StoppablePostgres } from '../../support/stoppable-postgres.ts';

const SERVER_ENV = {
  LOG_LEVEL: 'warn',
  OBJECT_STORE_DRIVER: 'embedded',
  // Slow backends: the instances' creations are under way when PostgreSQL goes.
  SIM_LATENCY_MS: '1000-1500',
  // Short timeouts, so that a frozen database turns into answers quickly.
  DATABASE_CONNECT_TIMEOUT_MS: '1000',
  DATABASE_STATEMENT_TIMEOUT_MS: '2000',
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '5000',
  // One attempt per operation: an outage taken for the attempt's failure would fail the operation.
  OPERATION_MAX_ATTEMPTS: '1',
  // Longer than any outage here: the worker that holds an operation records it once PostgreSQL is back.
  WORKER_LEASE_MS: '10000',
};
/**
 * A request the server would never answer fails the test after this long. While the database is
 * away a request is answered after its timeouts (a query's statement timeout + 1 s, bookkeeping
 * 1 s: about 4 s here); how much longer on a busy machine is not this test's business.
 */
const NEVER_ANSWERED_MS = 30_000;

let postgres: StoppablePostgres;
const processes: Started[] = [];

beforeAll(async () => {
  postgres = await startStoppablePostgres();
});

afterAll(async () => {
  postgres?.thaw();
  await Promise.all(processes.map((started) => started.stop()));
  await postgres?.close();
});

/** The error lines of a server's log (pino's level 50 and above): the one that says why it answered 500 is among them. */
const loggedErrors = (output: string): string =>
  output
    .split('\n')
    .filter((line) => /"level":(50|60)/.test(line))
    .join('\n');

/** A request that gets no answer in `ms` fails the test, rather than hanging it. */
function answeredWithin<T>(ms: number, what: string, answer: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_resolve, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  );
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** A server process on a new database over the Unix-domain socket, with a bucket, an object in it and an S3 key. */
async function serverOnSocket() {
  const { socketUrl, db } = await postgres.newDatabase();
  const server = await startServerProcess(socketUrl, SERVER_ENV);
  processes.push(server);
  const boot = await readBootstrap(server.dataDir, server);
  const api = (method: string, orgPath: string, body?: unknown) =>
    call(server.url, method, `/v1/orgs/${boot.org_id}${orgPath}`, { defaultKey: boot.api_key, body });
  const finished = (operationId: string) =>
    eventually(
      async () => {
        const operation = await api('GET', `/operations/${operationId}`);
        return operation.body?.finished_at ? operation.body : undefined;
      },
      `operation ${operationId} to finish`,
      30_000,
    );
  const bucket = await api('POST', '/s3/buckets', { name: 'kept' });
  expect(bucket.status, bucket.text).toBe(202);
  expect((await finished(bucket.body.operation.id)).state).toBe('succeeded');
  const key = await api('POST', '/s3/access-keys');
  expect(key.status, key.text).toBe(202);
  expect((await finished(key.body.operation.id)).state).toBe('succeeded');
  const listed = await api('GET', '/s3/access-keys');
  const accessKeyId = listed.body.items.find((item: { id: string }) => item.id === key.body.access_key.id).objectstore_access_key_id;
  const s3 = new S3Client({
    endpoint: boot.s3_endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey: key.body.secret_access_key },
    maxAttempts: 1,
  });
  await s3.send(new PutObjectCommand({ Bucket: 'kept', Key: 'kept.txt', Body: 'kept through the outage' }));
  return { server, db, api, s3, finished };
}

type Running = Awaited<ReturnType<typeof serverOnSocket>>;

/** Instances being created: claimed, their backend calls under way (slow backends), when this returns. */
async function workInFlight({ api, db }: Running, round: string): Promise<string[]> {
  const operations: string[] = [];
  for (let index = 0; index < 4; index++) {
    const created = await api('POST', '/compute/vms', {
      name: `${round}-${index}`,
      image: 'ubuntu-24.04',
      region: 'fra1',
      vcpus: 1,
      memory_mb: 1024,
      disk_gb: 20,
      storage_pool: 'fra1-ssd',
      network_profile: 'fra1-standard',
    });
    expect(created.status, created.text).toBe(202);
    operations.push(created.body.operation.id);
  }
  await eventually(
    async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM operations WHERE id = ANY($1) AND state = 'running'`, [
        operations,
      ]);
      return rows[0]!.n === operations.length ? true : undefined;
    },
    'the instances to be claimed',
    10_000,
  );
  return operations;
}

/** Presigned S3 requests of the organization's key (signed as any client signs them). */
function signer(s3: S3Client) {
  const expiresIn = 300;
  return {
    get: (key: string) => getSignedUrl(s3, new GetObjectCommand({ Bucket: 'kept', Key: key }), { expiresIn }),
    put: (key: string) => getSignedUrl(s3, new PutObjectCommand({ Bucket: 'kept', Key: key }), { expiresIn }),
    list: () => getSignedUrl(s3, new ListObjectsV2Command({ Bucket: 'kept' }), { expiresIn }),
  };
}

/** A signed S3 request, answered raw (status, Retry-After, the XML error's code). */
async function s3Raw(method: 'GET' | 'PUT', signedUrl: Promise<string>) {
  const response = await fetch(await signedUrl, { method, body: method === 'PUT' ? 'written during the outage' : undefined });
  const text = await response.text();
  return { status: response.status, retryAfter: response.headers.get('retry-after'), code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1], text };
}

/** API and S3 requests of every kind for `ms`: each answered 503 with Retry-After, in time. */
async function expectUnavailableAnswers({ api, s3 }: Running, ms: number): Promise<void> {
  const signed = signer(s3);
  const until = Date.now() + ms;
  const apiAnswers: Array<{ answer: ApiResponse; what: string }> = [];
  const s3Answers: Array<{ answer: Awaited<ReturnType<typeof s3Raw>>; what: string }> = [];
  while (Date.now() < until) {
    await Promise.all([
      ...(
        [
          ['GET', ''],
          ['GET', '/compute/vms'],
          ['POST', '/s3/buckets', { name: `outage-${randomUUID().slice(0, 8)}` }],
          ['PUT', '/billing', { spend_budget_cents: 5000 }],
        ] as const
      ).map(async ([method, orgPath, body]) => {
        const what = `${method} ${orgPath}`;
        apiAnswers.push({ answer: await answeredWithin(NEVER_ANSWERED_MS, what, api(method, orgPath, body)), what });
      }),
      ...(
        [
          ['GET', 'S3 GetObject', signed.get('kept.txt')],
          ['PUT', 'S3 PutObject', signed.put(`during-${randomUUID().slice(0, 8)}.txt`)],
          ['GET', 'S3 ListObjectsV2', signed.list()],
        ] as const
      ).map(async ([method, what, url]) => {
        s3Answers.push({ answer: await answeredWithin(NEVER_ANSWERED_MS, what, s3Raw(method, url)), what });
      }),
    ]);
  }
  for (const { answer, what } of apiAnswers) {
    expect(answer.status, `${what}: ${answer.text}`).toBe(503);
    expect(answer.headers.get('content-type'), what).toContain('application/problem+json');
    expect(answer.body.code, what).toBe('service_unavailable');
    expect(Number(answer.headers.get('retry-after')), what).toBeGreaterThan(0);
  }
  for (const { answer, what } of s3Answers) {
    expect(answer.status, `${what}: ${answer.text}`).toBe(503);
    expect(answer.code, what).toBe('ServiceUnavailable');
    expect(Number(answer.retryAfter), what).toBeGreaterThan(0);
  }
}

/** The API and S3 answer again by themselves, and every operation finished once, succeeded, on its first counted attempt. */
async function expectRecovered(running: Running, operations: string[]): Promise<void> {
  const { server, api, s3, finished } = running;
  const signed = signer(s3);
  await eventually(async () => ((await api('GET', '')).status === 200 ? true : undefined), 'the API to answer again', 30_000);
  await eventually(
    async () => ((await s3Raw('GET', signed.get('kept.txt'))).status === 200 ? true : undefined),
    'the S3 endpoint to answer again',
    30_000,
  );
  const object = await s3Raw('GET', signed.get('kept.txt'));
  expect(object.text).toBe('kept through the outage');
  for (const id of operations) {
    const operation = await finished(id);
    expect(operation, JSON.stringify(operation)).toMatchObject({ state: 'succeeded', attempt: 1 });
  }
  expect(server.child.exitCode, server.output()).toBeNull();
  expect(server.output()).not.toContain('unhandled promise rejection');
  expect(server.output()).not.toContain('"msg":"request failed"');
  expect(server.output()).not.toContain('"msg":"s3 request failed"');
}

describe('the database away, over the Unix-domain socket', () => {
  test('stopped (its socket gone: connect ENOENT): 503 on the API and on S3, no attempt counted, and everything recovers', async () => {
    const running = await serverOnSocket();
    const operations = await workInFlight(running, 'stopped');
    await postgres.stop();
    try {
      expect(existsSync(postgres.socketFile)).toBe(false);
      await expectUnavailableAnswers(running, 3_000);
    } finally {
      await postgres.start();
    }
    await expectRecovered(running, operations);
    await running.db.end();
  });

  test('frozen (SIGSTOP): the API and S3 answer 503 within the timeouts, and everything recovers', async () => {
    const running = await serverOnSocket();
    const operations = await workInFlight(running, 'frozen');
    await postgres.freeze();
    try {
      await expectUnavailableAnswers(running, 4_000);
    } finally {
      postgres.thaw();
    }
    await expectRecovered(running, operations);
    await running.db.end();
  });

  test('connections cut again and again (reset): every answer is a success or a 503, never a 500', async () => {
    const running = await serverOnSocket();
    const { api, s3, db } = running;
    const signed = signer(s3);
    const operations = await workInFlight(running, 'reset');
    let cutting = true;
    const cutter = (async () => {
      while (cutting) {
        await db
          .query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'cloud-platform%' AND pid <> pg_backend_pid()`,
          )
          .catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const statuses: string[] = [];
    try {
      const until = Date.now() + 3_000;
      while (Date.now() < until) {
        const [org, vms, put, get] = await Promise.all([
          api('GET', ''),
          api('GET', '/compute/vms'),
          s3Raw('PUT', signed.put(`reset-${randomUUID().slice(0, 8)}.txt`)),
          s3Raw('GET', signed.get('kept.txt')),
        ]);
        for (const answer of [org, vms]) {
          expect([200, 503], answer.text).toContain(answer.status);
          statuses.push(String(answer.status));
        }
        for (const answer of [put, get]) {
          // An unexpected answer comes with the errors the server logged (the S3 thread logs why it answered 500).
          expect([200, 503], `${answer.text}\n${loggedErrors(running.server.output())}`).toContain(answer.status);
          if (answer.status === 503) expect(answer.code).toBe('ServiceUnavailable');
          statuses.push(`S3 ${answer.status}`);
        }
      }
    } finally {
      cutting = false;
      await cutter;
    }
    expect(statuses.length).toBeGreaterThan(0);
    await expectRecovered(running, operations);
    await db.end();
  });
});
