// S3 access keys are looked up once and then served from each process's cache: a revocation must
// still be effective at once in every process serving the S3 endpoint on the same database,
// whichever process revoked it, and also when it is made in the database directly.
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOrganization } from '../../../../../server/areas/identity/organizations/organization-service.ts';
import { withTransaction } from '../../../../../server/db/pool.ts';
import { eventually } from '../../../../support/eventually.ts';
import { freePort } from '../../../../support/processes.ts';
import { call, createTestDatabase, startServerProcess } from '../../../../support/server.ts';

type Process = Awaited<ReturnType<typeof startServerProcess>> & { s3Url: string };

let pool: pg.Pool;
let dataDir: string;
const processes: Process[] = [];
let orgId: string;
let ownerKey: string;

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  // One DATA_DIR: the processes open each other's sealed secrets with its key.
  dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-key-cache-'));
  for (let index = 0; index < 2; index++) {
    const s3Port = await freePort();
    const started = await startServerProcess(databaseUrl, { OBJECT_STORE_DRIVER: 'embedded', S3_PORT: String(s3Port) }, { dataDir });
    processes.push({ ...started, s3Url: `http://127.0.0.1:${s3Port}` });
    // The API answers before the S3 thread listens (platform.ts starts it next, then the engine):
    // /readyz says when all of it serves.
    await eventually(
      async () => ((await fetch(`${started.url}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
      'the process to be ready',
      60_000,
    );
  }
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const org = await withTransaction(pool, (tx) => createOrganization(tx, { name: 'S3 Cache Org', ownerSubject: 's3-cache-owner' }));
  orgId = org.orgId;
  ownerKey = org.apiKey;
}, 120_000);
afterAll(async () => {
  for (const started of processes) await started.stop();
  await pool?.end();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const api = (url: string, method: string, orgPath: string) => call(url, method, `/v1/orgs/${orgId}${orgPath}`, { key: ownerKey });

async function finished(operationId: string): Promise<void> {
  await eventually(async () => {
    const operation = await api(processes[0]!.url, 'GET', `/operations/${operationId}`);
    return operation.body.finished_at !== null ? true : undefined;
  }, 'the operation finished');
}

const clientOf = (server: Process, key: { accessKeyId: string; secretAccessKey: string }) =>
  new S3Client({ endpoint: server.s3Url, region: 'us-east-1', forcePathStyle: true, credentials: key, maxAttempts: 1 });

/** Whether the process takes the key now (ListBuckets needs the key and nothing else). */
const accepted = async (server: Process, key: { accessKeyId: string; secretAccessKey: string }): Promise<boolean> => {
  try {
    await clientOf(server, key).send(new ListBucketsCommand({}));
    return true;
  } catch (error) {
    // Anything else says what it was, and what the servers logged (a network error has no Code).
    const { name, message, $metadata } = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const logged = processes.map((started, index) => `--- process ${index}\n${started.output().split('\n').slice(-30).join('\n')}`);
    expect(
      (error as { Code?: string }).Code,
      `only a refused key fails the call; this was ${name} (${$metadata?.httpStatusCode ?? 'no status'}): ${message}\n${logged.join('\n')}`,
    ).toBe('InvalidAccessKeyId');
    return false;
  }
};

/** A new key, already used (and so cached) in both processes. */
async function keyInUse(): Promise<{ id: string; accessKeyId: string; secretAccessKey: string }> {
  const created = await api(processes[0]!.url, 'POST', '/s3/access-keys');
  expect(created.status, created.text).toBe(202);
  await finished(created.body.operation.id);
  const listed = await api(processes[0]!.url, 'GET', '/s3/access-keys');
  const record = listed.body.items.find((item: { id: string }) => item.id === created.body.access_key.id);
  const key = { id: record.id, accessKeyId: record.objectstore_access_key_id, secretAccessKey: created.body.secret_access_key };
  for (let use = 0; use < 3; use++) for (const server of processes) expect(await accepted(server, key)).toBe(true);
  return key;
}

describe('the S3 key cache', () => {
  test('a key revoked through either process is refused by both at once', async () => {
    for (let round = 0; round < 4; round++) {
      const key = await keyInUse();
      const through = processes[round % 2]!;
      const revoked = await api(through.url, 'DELETE', `/s3/access-keys/${key.id}`);
      expect(revoked.status, revoked.text).toBe(202);
      // No wait for the revoke operation: the key stops at the request.
      for (const server of [...processes].reverse()) expect(await accepted(server, key)).toBe(false);
    }
  });

  test('a key revoked in the database directly is refused by both processes as soon as its notice arrives', async () => {
    const key = await keyInUse();
    await pool.query("UPDATE s3_access_keys SET state = 'revoked' WHERE id = $1", [key.id]);
    for (const server of processes) {
      await eventually(async () => ((await accepted(server, key)) ? undefined : true), 'the key refused', 1_000);
    }
  });

  test('a key the store revoked (its own table) is refused by both processes as soon as its notice arrives', async () => {
    const key = await keyInUse();
    await pool.query('UPDATE store_access_keys SET revoked = true WHERE key_id = $1', [key.id]);
    for (const server of processes) {
      await eventually(async () => ((await accepted(server, key)) ? undefined : true), 'the key refused', 1_000);
    }
  });
});
