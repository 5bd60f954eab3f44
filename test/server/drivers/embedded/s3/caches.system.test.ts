// S3 access keys and the buckets an organization is served are looked up once and then served
// from each process's cache: a revocation, a deleted bucket or a changed setting must still be
// effective at once in every process serving the S3 endpoint on the same database, whichever
// process made the change, and also when it is made in the database directly.
import {
  DeleteBucketCommand,
  DeleteBucketPolicyCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  DeletePublicAccessBlockCommand,
  PutBucketCorsCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutPublicAccessBlockCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOrganization } from '../../../../../server/areas/identity/organizations/organization-service.ts';
import { withTransaction } from '../../../../../server/db/pool.ts';
import { eventually } from '../../../../support/eventually.ts';
import { answeredOnlyAfterResume } from '../../../../support/shared-database.ts';
import { signedRequest } from './support.ts';
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

/** A new bucket, already served (and so cached) by both processes to `key`'s organization. */
async function bucketInUse(key: S3Key, name: string): Promise<string> {
  const created = await call(processes[0]!.url, 'POST', `/v1/orgs/${orgId}/s3/buckets`, {
    key: ownerKey,
    body: { name, versioning: false },
  });
  expect(created.status, created.text).toBe(202);
  await finished(created.body.operation.id);
  for (let use = 0; use < 3; use++) for (const server of processes) expect(await served(server, key, name)).toBe(true);
  return created.body.bucket.id;
}

type S3Key = { accessKeyId: string; secretAccessKey: string };

/** Whether the process serves the bucket to the key's organization now (HeadBucket: 200, or 404). */
const served = async (server: Process, key: S3Key, name: string): Promise<boolean> => {
  try {
    await clientOf(server, key).send(new HeadBucketCommand({ Bucket: name }));
    return true;
  } catch (error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    expect(status, `only an unknown bucket fails HeadBucket; this was ${(error as Error).name}: ${(error as Error).message}`).toBe(404);
    return false;
  }
};

/** The HTTP status of a GetObject (200 when read). */
const readStatus = async (server: Process, key: S3Key, name: string, objectKey: string): Promise<number> => {
  try {
    const got = await clientOf(server, key).send(new GetObjectCommand({ Bucket: name, Key: objectKey }));
    await got.Body!.transformToByteArray();
    return 200;
  } catch (error) {
    return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
  }
};

describe('the S3 cache of served buckets', () => {
  let key: S3Key;
  beforeAll(async () => {
    key = await keyInUse();
  });

  test("a bucket deleted through either process's API is served by neither at once", async () => {
    for (let round = 0; round < 4; round++) {
      const name = `deleted-by-api-${round}`;
      const bucketId = await bucketInUse(key, name);
      const deleted = await api(processes[round % 2]!.url, 'DELETE', `/s3/buckets/${bucketId}`);
      expect(deleted.status, deleted.text).toBe(202);
      // No wait for the delete operation: the bucket is no longer active once the delete is accepted.
      for (const server of [...processes].reverse()) expect(await served(server, key, name)).toBe(false);
    }
  });

  test('a delete answers once every process has forgotten the bucket: one stopped for a moment holds the answer until it resumes', async () => {
    const name = 'deleted-while-stopped';
    const bucketId = await bucketInUse(key, name);
    const heldUntilResumed = await answeredOnlyAfterResume(processes[1]!.child.pid!, 400, async () => {
      const deleted = await api(processes[0]!.url, 'DELETE', `/s3/buckets/${bucketId}`);
      expect(deleted.status, deleted.text).toBe(202);
    });
    expect(heldUntilResumed, 'the delete answered while the other process could not have forgotten the bucket').toBe(true);
    expect(await served(processes[1]!, key, name)).toBe(false);
  });

  test('a bucket deleted over S3 through one process is not served by the other at once', async () => {
    for (let round = 0; round < 2; round++) {
      const name = `deleted-over-s3-${round}`;
      await bucketInUse(key, name);
      await clientOf(processes[round % 2]!, key).send(new DeleteBucketCommand({ Bucket: name }));
      for (const server of processes) expect(await served(server, key, name)).toBe(false);
    }
  });

  test('a setting changed over S3 through one process is applied by the other at once', async () => {
    const name = 'policy-changed';
    await bucketInUse(key, name);
    await clientOf(processes[0]!, key).send(new PutObjectCommand({ Bucket: name, Key: 'note', Body: 'kept' }));
    for (let round = 0; round < 3; round++) {
      for (const server of processes) expect(await readStatus(server, key, name, 'note')).toBe(200);
      const [changing, other] = round % 2 === 0 ? processes : [...processes].reverse();
      const denyReads = {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${name}/*` }],
      };
      await clientOf(changing!, key).send(new PutBucketPolicyCommand({ Bucket: name, Policy: JSON.stringify(denyReads) }));
      expect(await readStatus(other!, key, name, 'note')).toBe(403);
      expect(await readStatus(changing!, key, name, 'note')).toBe(403);
      await clientOf(other!, key).send(new DeleteBucketPolicyCommand({ Bucket: name }));
      expect(await readStatus(changing!, key, name, 'note')).toBe(200);
    }
  });

  test('a setting changed over S3 answers once every process has forgotten the bucket: one stopped for a moment holds the answer', async () => {
    const name = 'policy-while-stopped';
    await bucketInUse(key, name);
    const denyReads = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${name}/*` }],
    };
    const heldUntilResumed = await answeredOnlyAfterResume(processes[1]!.child.pid!, 400, async () => {
      await clientOf(processes[0]!, key).send(new PutBucketPolicyCommand({ Bucket: name, Policy: JSON.stringify(denyReads) }));
    });
    expect(heldUntilResumed, 'the change answered while the other process could not have forgotten the bucket').toBe(true);
  });

  test("CORS rules and the public access block, read beside the request's handler, change in the other process at once", async () => {
    const name = 'cors-and-block';
    await bucketInUse(key, name);
    await clientOf(processes[0]!, key).send(new PutObjectCommand({ Bucket: name, Key: 'note', Body: 'kept' }));
    const allowedOrigin = async (server: Process, origin: string) =>
      (await signedRequest(server, key, { method: 'GET', path: `/${name}/note`, headers: { origin } })).headers.get(
        'access-control-allow-origin',
      );
    const publicAclStatus = async (server: Process) =>
      (
        await signedRequest(server, key, {
          method: 'PUT',
          path: `/${name}/shared`,
          headers: { 'x-amz-acl': 'authenticated-read' },
          body: 'x',
        })
      ).status;
    for (let round = 0; round < 2; round++) {
      const origin = `https://app-${round}.example`;
      const [changing, other] = round % 2 === 0 ? processes : [...processes].reverse();
      // Each process has answered this bucket's requests (and so cached it) before the change.
      for (const server of processes) expect(await allowedOrigin(server, origin)).toBeNull();
      await clientOf(changing!, key).send(
        new PutBucketCorsCommand({
          Bucket: name,
          CORSConfiguration: { CORSRules: [{ AllowedOrigins: [origin], AllowedMethods: ['GET'] }] },
        }),
      );
      expect(await allowedOrigin(other!, origin)).toBe(origin);

      for (const server of processes) expect(await publicAclStatus(server)).toBe(200);
      await clientOf(changing!, key).send(
        new PutPublicAccessBlockCommand({ Bucket: name, PublicAccessBlockConfiguration: { BlockPublicAcls: true } }),
      );
      expect(await publicAclStatus(other!)).toBe(403);
      await clientOf(other!, key).send(new DeletePublicAccessBlockCommand({ Bucket: name }));
      expect(await publicAclStatus(changing!)).toBe(200);
    }
  });

  test('versioning turned on through one process: the next write through the other makes a version', async () => {
    const name = 'versioning-changed';
    await bucketInUse(key, name);
    const before = await clientOf(processes[1]!, key).send(new PutObjectCommand({ Bucket: name, Key: 'note', Body: 'one' }));
    expect(before.VersionId).toBeUndefined();
    await clientOf(processes[0]!, key).send(
      new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status: 'Enabled' } }),
    );
    const after = await clientOf(processes[1]!, key).send(new PutObjectCommand({ Bucket: name, Key: 'note', Body: 'two' }));
    expect(after.VersionId).toMatch(/.+/);
    expect(after.VersionId).not.toBe('null');
  });

  test("a bucket's records changed in the database directly are seen by both processes as soon as their notice arrives", async () => {
    // Nothing here waits for the notice (a change through the platform or the store does): each
    // process forgets the bucket when the notice reaches it. Without the notice the cached bucket
    // would be served for good, so the wait is bounded only to fail in time.
    const suspended = 'suspended-in-store';
    const suspendedId = await bucketInUse(key, suspended);
    await pool.query('UPDATE store_buckets SET suspended = true WHERE id = $1', [suspendedId]);
    const failed = 'failed-in-platform';
    const failedId = await bucketInUse(key, failed);
    await pool.query("UPDATE buckets SET state = 'error' WHERE id = $1", [failedId]);
    for (const server of processes) {
      for (const name of [suspended, failed]) {
        await eventually(async () => ((await served(server, key, name)) ? undefined : true), `${name} no longer served`, 20_000);
      }
    }
  });

  test('what a bucket holds is read as it is now, not as it was when the bucket was cached', async () => {
    const name = 'usage-read';
    await bucketInUse(key, name);
    for (let count = 1; count <= 3; count++) {
      await clientOf(processes[count % 2]!, key).send(new PutObjectCommand({ Bucket: name, Key: `object-${count}`, Body: 'x'.repeat(10) }));
      for (const server of processes) {
        const head = await signedRequest(server, key, { method: 'HEAD', path: `/${name}`, query: { 'read-stats': 'true' } });
        expect([head.status, head.headers.get('x-rgw-object-count'), head.headers.get('x-rgw-bytes-used')]).toEqual([
          200,
          String(count),
          String(count * 10),
        ]);
      }
    }
  });
});
