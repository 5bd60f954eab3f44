// The S3 endpoint runs in a thread of its own (areas/storage/s3-thread.ts): its requests are served
// while the API's event loop is busy, so S3 bodies never wait on, nor delay, the API. The test
// server runs in this test's own thread, as the API does in `npm start`: blocking this thread
// blocks the API.
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, 'threaded');
  s3 = s3Client(server, await createAccessKey(server, server.org));
}, 120_000);

afterAll(async () => {
  await server?.close();
});

/**
 * Fetches `url` from a thread of its own and flags `done` (1: answered `expected`, 2: anything else) in shared
 * memory, which this thread can wait for without running its event loop.
 */
function fetchFromAnotherThread(url: string, expected: string, done: Int32Array): Worker {
  const source = `
    const { workerData } = require('node:worker_threads');
    const flag = new Int32Array(workerData.shared);
    fetch(workerData.url)
      .then(async (response) => Atomics.store(flag, 0, response.status === 200 && (await response.text()) === workerData.expected ? 1 : 2))
      .catch(() => Atomics.store(flag, 0, 2))
      .finally(() => Atomics.notify(flag, 0));`;
  return new Worker(source, {
    eval: true,
    workerData: {
      url,
      expected,
      shared: done.buffer,
      status: new Int32Array(new SharedArrayBuffer(4)),
      body: new Int32Array(new SharedArrayBuffer(4)),
    },
  });
}

describe('the S3 endpoint in its own thread', () => {
  test("answers while the API's event loop cannot run", async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'threaded', Key: 'served.txt', Body: 'served while the API was busy' }));
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: 'threaded', Key: 'served.txt' }), { expiresIn: 300 });
    const done = new Int32Array(new SharedArrayBuffer(4));
    const client = fetchFromAnotherThread(url, 'served while the API was busy', done);
    // This thread (the API's) now waits without running its event loop: an endpoint served by it
    // could not answer, and the wait would end only at its bound.
    const waited = Atomics.wait(done, 0, 0, 30_000);
    const answeredWhileBlocked = Atomics.load(done, 0);
    await client.terminate();
    expect(waited === 'ok' || waited === 'not-equal').toBe(true);
    expect(answeredWhileBlocked).toBe(1);
  }, 90_000);
});
