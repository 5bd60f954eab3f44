// The S3 endpoint yields to a busy API (drivers/embedded/s3/admission.ts): while two or more API
// requests are in flight, S3 requests start at S3_BUSY_RATE a second, upload and download bodies
// pass at S3_BUSY_BANDWIDTH, and a request that would wait too long is refused with SlowDown; once
// the API is quiet, every waiting request starts. A request that waited stores its body whole.
// The API requests are held in flight by sending their bodies only in part, and seen in flight on
// the metrics endpoint.
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { API_QUIET_AFTER_MS } from '../../../../../server/core/api-activity.ts';
import { eventually } from '../../../../support/eventually.ts';
import { createAccessKey, createBucket, MiB, s3Client, s3ErrorOf, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;

beforeAll(async () => {
  // One S3 request and 1 MiB of bodies a second while the API is busy: the pace is plain to see.
  server = await startS3Server({ S3_BUSY_RATE: '1', S3_BUSY_BANDWIDTH: '1' });
  await createBucket(server, server.org, 'beside-the-api');
  s3 = s3Client(server, await createAccessKey(server, server.org));
}, 120_000);

afterAll(async () => {
  await server?.close();
});

/** The API's requests in flight, as its metrics endpoint tells them. */
async function apiRequestsInFlight(): Promise<number> {
  const text = await (await fetch(server.metricsUrl!)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith('cloud_http_requests_in_flight '));
  return Number(line?.split(' ')[1]);
}

/** Two API requests (SSH keys' creations) kept in flight until `release`: their bodies come only in part. */
async function busyApi(): Promise<{ release(): Promise<void> }> {
  const body = JSON.stringify({ name: 'held', public_key: 'ssh-ed25519 AAAA' });
  const url = new URL(server.url);
  const sockets = [0, 1].map(() => {
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => {});
    socket.write(
      [
        `POST /v1/orgs/${server.org.orgId}/compute/ssh-keys HTTP/1.1`,
        `Host: ${url.host}`,
        `Authorization: Bearer ${server.org.ownerKey}`,
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        '',
        body.slice(0, 5),
      ].join('\r\n'),
    );
    return socket;
  });
  await eventually(async () => ((await apiRequestsInFlight()) >= 2 ? true : undefined), 'two API requests to be in flight');
  return {
    async release() {
      for (const socket of sockets) socket.destroy();
      await eventually(async () => ((await apiRequestsInFlight()) === 0 ? true : undefined), 'the API requests to end');
      // The API counts as busy for a moment after its last crowded instant: that moment passes.
      await new Promise((resolve) => setTimeout(resolve, API_QUIET_AFTER_MS + 30));
    },
  };
}

const bodyOf = (name: string) => `the body of ${name}, `.repeat(200);

/** PUTs `names` at once; `answered` collects their answer times (ms since `since`), in the order they came. */
function putAll(names: string[], since: number, answered: number[]) {
  return names.map(async (name) => {
    await s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: name, Body: bodyOf(name) }));
    answered.push(performance.now() - since);
  });
}

async function storedBody(name: string): Promise<string> {
  const object = await s3.send(new GetObjectCommand({ Bucket: 'beside-the-api', Key: name }));
  return object.Body!.transformToString();
}

test('while the API is busy, S3 requests start one a second; once it is quiet, a crowd is served at once', async () => {
  // The key and the bucket are known to the endpoint before the clock matters.
  await s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: 'warm-up', Body: 'warm' }));
  const api = await busyApi();
  const since = performance.now();
  const answered: number[] = [];
  const names = Array.from({ length: 6 }, (_, index) => `paced-${index}`);
  const puts = putAll(names, since, answered);
  await eventually(() => answered.length >= 3 || undefined, 'three PUTs to be answered', 30_000);
  // Three starts at 1/s span two seconds, less a moment's starts saved up (a pace never runs
  // ahead, whatever the machine does; a slow PUT only widens the span).
  expect(answered[2]! - answered[0]!).toBeGreaterThanOrEqual(1_500);
  await api.release();
  await Promise.all(puts);
  for (const name of names) expect(await storedBody(name)).toBe(bodyOf(name));
  // The endpoint sees the API quiet: a crowd at once is served whole, where at the pace (the
  // next test) the same crowd is mostly refused. Counted, not timed: a loaded machine makes each
  // PUT slower, never a refusal.
  const crowd = Array.from({ length: 15 }, (_, index) => `unpaced-${index}`);
  const refusals = await Promise.all(
    crowd.map((name) =>
      s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: name, Body: bodyOf(name) }))).catch(() => undefined),
    ),
  );
  expect(refusals.filter((refusal) => refusal !== undefined)).toEqual([]);
  for (const name of crowd) expect(await storedBody(name)).toBe(bodyOf(name));
});

test('a request that would wait more than five seconds is refused with SlowDown; those that waited are stored whole', async () => {
  const api = await busyApi();
  // At 1/s, five wait and the rest are refused (a few more start if sending them takes seconds).
  const names = Array.from({ length: 15 }, (_, index) => `crowd-${index}`);
  const outcomes = await Promise.all(
    names.map(async (name) => {
      const put = s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: name, Body: bodyOf(name) }));
      return { name, refusal: await s3ErrorOf(put).catch(() => undefined) };
    }),
  );
  await api.release();
  const refused = outcomes.filter(({ refusal }) => refusal !== undefined);
  expect(refused.length).toBeGreaterThan(0);
  for (const { refusal } of refused) expect(refusal).toEqual({ code: 'SlowDown', status: 503 });
  for (const { name, refusal } of outcomes) {
    if (refusal === undefined) expect(await storedBody(name)).toBe(bodyOf(name));
    else expect(await s3ErrorOf(storedBody(name))).toEqual({ code: 'NoSuchKey', status: 404 });
  }
});

test("while the API is busy, an upload's body is read at S3_BUSY_BANDWIDTH, and stored whole", async () => {
  const api = await busyApi();
  const body = randomBytes(3 * MiB);
  const since = performance.now();
  await s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: 'paced-upload', Body: body }));
  const tookMs = performance.now() - since;
  await api.release();
  // 3 MiB at 1 MiB/s: about three seconds, less the first chunk and a moment's bytes saved up.
  expect(tookMs).toBeGreaterThanOrEqual(2_500);
  const stored = await s3.send(new GetObjectCommand({ Bucket: 'beside-the-api', Key: 'paced-upload' }));
  expect(Buffer.from(await stored.Body!.transformToByteArray()).equals(body)).toBe(true);
});

test('while the API is busy, a download is sent at S3_BUSY_BANDWIDTH, plain or encrypted, and arrives whole', async () => {
  const plain = randomBytes(2 * MiB);
  const sealed = randomBytes(2 * MiB);
  await s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: 'download-plain', Body: plain }));
  await s3.send(new PutObjectCommand({ Bucket: 'beside-the-api', Key: 'download-sealed', Body: sealed, ServerSideEncryption: 'AES256' }));
  const api = await busyApi();
  const timedGet = async (key: string) => {
    const since = performance.now();
    const object = await s3.send(new GetObjectCommand({ Bucket: 'beside-the-api', Key: key }));
    const bytes = Buffer.from(await object.Body!.transformToByteArray());
    return { bytes, tookMs: performance.now() - since };
  };
  const plainGet = await timedGet('download-plain');
  const sealedGet = await timedGet('download-sealed');
  await api.release();
  // 2 MiB at 1 MiB/s each: about two seconds, less the first piece (256 KiB) and a moment's bytes
  // saved up; without the pace, a few tens of milliseconds.
  expect(plainGet.tookMs).toBeGreaterThanOrEqual(1_500);
  expect(sealedGet.tookMs).toBeGreaterThanOrEqual(1_500);
  expect(plainGet.bytes.equals(plain)).toBe(true);
  expect(sealedGet.bytes.equals(sealed)).toBe(true);
});
