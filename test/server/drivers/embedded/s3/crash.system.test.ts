// A crash mid-upload (`npm start` killed with SIGKILL while a body streams in) leaves nothing
// visible and no space used once the server is back: the partial files and their reservations
// are swept at start, a temporary file's as one written in place. What was complete before the crash is still there, byte for byte.
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { freePort, type Started } from '../../../../support/processes.ts';
import { call, createTestDatabase, readBootstrap, startServerProcess } from '../../../../support/server.ts';
import { filesUnder, MiB, s3Client, s3ErrorOf, settles } from './support.ts';

let running: Started | undefined;
afterAll(async () => running?.stop());

async function waitForOperation(baseUrl: string, orgId: string, apiKey: string, operationId: string): Promise<void> {
  await settles(async () => {
    const operation = await call(baseUrl, 'GET', `/v1/orgs/${orgId}/operations/${operationId}`, { key: apiKey });
    expect(operation.body.state).toBe('succeeded');
  }, 30_000);
}

test('a server killed mid-upload comes back with nothing visible and no leaked files', async () => {
  const databaseUrl = await createTestDatabase();
  const s3Port = await freePort();
  const env = { OBJECT_STORE_DRIVER: 'embedded', S3_PORT: String(s3Port) };
  const first = await startServerProcess(databaseUrl, env);
  running = first;
  const boot = await readBootstrap(first.dataDir);
  expect(boot.s3_endpoint).toBe(`http://127.0.0.1:${s3Port}`);
  const api = (method: string, orgPath: string, body?: unknown) =>
    call(boot.base_url, method, `/v1/orgs/${boot.org_id}${orgPath}`, { key: boot.api_key, body });

  const bucket = await api('POST', '/s3/buckets', { name: 'survivor', versioning: false });
  await waitForOperation(boot.base_url, boot.org_id, boot.api_key, bucket.body.operation.id);
  const created = await api('POST', '/s3/access-keys');
  await waitForOperation(boot.base_url, boot.org_id, boot.api_key, created.body.operation.id);
  const keys = await api('GET', '/s3/access-keys');
  const s3 = s3Client(
    { s3Url: boot.s3_endpoint! },
    { accessKeyId: keys.body.items[0].objectstore_access_key_id, secretAccessKey: created.body.secret_access_key },
  );
  await s3.send(new PutObjectCommand({ Bucket: 'survivor', Key: 'complete.txt', Body: 'written before the crash' }));
  const objects = path.join(first.dataDir, 'objects');
  const completeFiles = filesUnder(path.join(objects, 'blobs'));
  expect(completeFiles).toHaveLength(1);

  // 64 MiB announced, 8 MiB sent (a large body: reserved, written to a temporary file); and 200 KiB
  // announced, 100 KiB sent (a small body sent without being asked: claimed, written in place in
  // blobs/). Then the server is killed.
  const partialUpload = async (key: string, announced: number, sent: number) => {
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'survivor', Key: key }), { expiresIn: 300 });
    const upload = httpRequest(url, { method: 'PUT', headers: { 'Content-Length': String(announced) } });
    upload.on('error', () => {});
    upload.write(Buffer.alloc(sent, 7));
    return upload;
  };
  const large = await partialUpload('half.bin', 64 * MiB, 8 * MiB);
  await settles(async () => expect(filesUnder(path.join(objects, 'tmp'))).toHaveLength(1));
  const small = await partialUpload('half-small.bin', 200 * 1024, 100 * 1024);
  await settles(async () => expect(filesUnder(path.join(objects, 'blobs'))).toHaveLength(2));
  process.kill(-first.child.pid!, 'SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  large.destroy();
  small.destroy();
  expect(filesUnder(path.join(objects, 'tmp'))).toHaveLength(1);
  expect(filesUnder(path.join(objects, 'blobs'))).toHaveLength(2);

  const second = await startServerProcess(databaseUrl, env, { dataDir: first.dataDir, port: Number(new URL(boot.base_url).port) });
  running = second;
  await settles(async () => {
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'survivor', Key: 'half.bin' })))).toMatchObject({ status: 404 });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'survivor', Key: 'half-small.bin' })))).toMatchObject({ status: 404 });
  });
  expect(filesUnder(path.join(objects, 'tmp'))).toEqual([]);
  expect(filesUnder(path.join(objects, 'blobs'))).toEqual(completeFiles);
  const got = await s3.send(new GetObjectCommand({ Bucket: 'survivor', Key: 'complete.txt' }));
  expect(await got.Body!.transformToString()).toBe('written before the crash');
  const probe = new pg.Client({ connectionString: databaseUrl });
  await probe.connect();
  try {
    expect((await probe.query('SELECT count(*)::int AS n FROM store_reservations')).rows[0].n).toBe(0);
    expect((await probe.query('SELECT usage_bytes::int AS bytes FROM store_orgs')).rows[0].bytes).toBe('written before the crash'.length);
  } finally {
    await probe.end();
  }
  // The space is free for new writes: the quota does not count the lost upload.
  await s3.send(new PutObjectCommand({ Bucket: 'survivor', Key: 'after.txt', Body: 'after the crash' }));
}, 180_000);
