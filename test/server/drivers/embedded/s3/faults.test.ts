// Fault injection on the embedded store (SIM_FAULTS rules and SIM_LATENCY_MS apply to its driver
// calls as to the simulator's): the engine retries a transient failure and ends a permanent or
// lasting one with its fixed phrase; and what S3 clients see of a bucket in error: nothing.
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server({
    SIM_FAULTS: [
      'objectstore.createBucket@doomed-*=permanent',
      'objectstore.setBucketQuota@broken-*=permanent',
      'objectstore.createBucket@flaky-*=transient*1',
      'objectstore.createBucket@down-*=transient',
    ].join(';'),
    OPERATION_MAX_ATTEMPTS: '2',
    // No reconciler pass during these tests: what the store enforces came with the operations.
    RECONCILE_INTERVAL_MS: '3600000',
  });
  s3 = s3Client(server, await createAccessKey(server, server.org));
}, 120_000);
afterAll(async () => server?.close());

test('an injected permanent failure ends the bucket in error, and S3 finds no such bucket', async () => {
  const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'doomed-bucket' } });
  const operation = await server.waitForOperation(server.org, created.body.operation.id);
  expect(operation).toMatchObject({
    state: 'failed',
    attempt: 1,
    error_class: 'backend_rejected',
    error_detail: 'The object store refused the request. [bucket.create]',
  });
  expect((await server.org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).body.state).toBe('error');
  expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'doomed-bucket', Key: 'k', Body: 'x' })))).toEqual({
    code: 'NoSuchBucket',
    status: 404,
  });
});

test('a transient failure of the store is retried: the bucket is created on the next attempt and serves S3', async () => {
  const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'flaky-bucket' } });
  const operation = await server.waitForOperation(server.org, created.body.operation.id);
  expect(operation).toMatchObject({ state: 'succeeded', attempt: 2, error_class: null, error_detail: null });
  await s3.send(new PutObjectCommand({ Bucket: 'flaky-bucket', Key: 'k', Body: 'stored after a retry' }));
});

test('a store that stays unavailable ends the operation failed after max_attempts, with the fixed phrase', async () => {
  const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'down-bucket' } });
  const operation = await server.waitForOperation(server.org, created.body.operation.id);
  expect(operation).toMatchObject({
    state: 'failed',
    attempt: 2,
    error_class: 'backend_unavailable',
    error_detail: 'The object store was unavailable after 2 attempts. [bucket.create]',
  });
  expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'down-bucket', Key: 'k', Body: 'x' })))).toMatchObject({ status: 404 });
});

test('a bucket the store holds but the platform shows in error serves nothing', async () => {
  const bucket = await createBucket(server, server.org, 'broken-quota');
  await s3.send(new PutObjectCommand({ Bucket: 'broken-quota', Key: 'k', Body: 'x' }));
  const changed = await server.org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_objects: 10 } });
  expect((await server.waitForOperation(server.org, changed.body.operation.id)).state).toBe('failed');
  expect((await server.org.call('GET', `/s3/buckets/${bucket.id}`)).body.state).toBe('error');
  expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'broken-quota', Key: 'k2', Body: 'x' })))).toEqual({
    code: 'NoSuchBucket',
    status: 404,
  });
});

test("a new organization's default ceiling is enforced from its first bucket on", async () => {
  const org = await server.createOrg('Fresh Start');
  const client = s3Client(server, await createAccessKey(server, org));
  await createBucket(server, org, 'fresh-bucket');
  await client.send(new PutObjectCommand({ Bucket: 'fresh-bucket', Key: 'small', Body: 'fits' }));
  // 101 GiB declared against the default 100 GiB ceiling: refused before the body is asked for.
  const url = await getSignedUrl(client, new PutObjectCommand({ Bucket: 'fresh-bucket', Key: 'huge' }), { expiresIn: 60 });
  const status = await new Promise<number>((resolve, reject) => {
    const sent = httpRequest(
      url,
      { method: 'PUT', headers: { 'Content-Length': String(101 * 1024 ** 3), Expect: '100-continue' } },
      (response) => {
        response.resume();
        resolve(response.statusCode!);
      },
    );
    // Asked for the body: the ceiling was not enforced.
    sent.on('continue', () => {
      resolve(100);
      sent.destroy();
    });
    sent.on('error', reject);
    sent.flushHeaders();
  });
  expect(status).toBe(403);
});
