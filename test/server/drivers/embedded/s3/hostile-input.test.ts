// What S3 refuses, refused with S3's own errors and nothing stored, never a 500 (issue 29): text
// PostgreSQL cannot hold (NUL) in keys, prefixes, markers, version and upload ids, copy sources,
// bucket names and XML bodies; user metadata over S3's 2 KB; and a body that stops coming, which
// is ended after S3_BODY_TIMEOUT_SECONDS rather than held open.
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NodeSha256 } from '../../../../../server/drivers/rgw/signed-http.ts';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, settles, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;
const BUCKET = 'hostile';

beforeAll(async () => {
  server = await startS3Server({ S3_BODY_TIMEOUT_SECONDS: '1' });
  await createBucket(server, server.org, BUCKET, { versioning: true });
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'present', Body: 'x' }));
}, 120_000);
afterAll(async () => server?.close());

const NUL = '\u0000';

describe('NUL, which the store cannot hold', () => {
  test('in a key, with every method: 400 with an S3 code, and nothing stored', async () => {
    for (const method of ['PUT', 'GET', 'HEAD', 'DELETE', 'POST'] as const) {
      const answer = await signedRequest(server, key, {
        method,
        path: `/${BUCKET}/a${NUL}b`,
        query: method === 'POST' ? { uploads: '' } : undefined,
        body: method === 'PUT' ? 'bytes' : undefined,
      });
      expect(answer.status, `${method}: ${answer.text}`).toBe(400);
      if (method !== 'HEAD') expect(answer.code, answer.text).toBe('InvalidArgument');
    }
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    expect(listed.Contents?.map((object) => object.Key)).toEqual(['present']);
  });

  test('in a bucket name: InvalidBucketName, for HeadBucket, CreateBucket and an object request alike', async () => {
    for (const [method, path] of [
      ['HEAD', `/${BUCKET}${NUL}`],
      ['PUT', `/new${NUL}bucket`],
      ['GET', `/${BUCKET}${NUL}/present`],
    ] as const) {
      const answer = await signedRequest(server, key, { method, path });
      expect(answer.status, `${method} ${JSON.stringify(path)}: ${answer.text}`).toBe(400);
      if (method !== 'HEAD') expect(answer.code).toBe('InvalidBucketName');
    }
  });

  test('in a listing parameter, a version id, an upload id or a continuation token: InvalidArgument', async () => {
    const requests: Array<{ method: string; path: string; query: Record<string, string> }> = [
      { method: 'GET', path: `/${BUCKET}`, query: { prefix: `a${NUL}` } },
      { method: 'GET', path: `/${BUCKET}`, query: { 'list-type': '2', 'start-after': `a${NUL}` } },
      { method: 'GET', path: `/${BUCKET}`, query: { marker: `a${NUL}` } },
      { method: 'GET', path: `/${BUCKET}`, query: { delimiter: NUL } },
      { method: 'GET', path: `/${BUCKET}`, query: { versions: '', 'key-marker': `a${NUL}` } },
      { method: 'GET', path: `/${BUCKET}`, query: { versions: '', 'key-marker': 'a', 'version-id-marker': `v${NUL}` } },
      { method: 'GET', path: `/${BUCKET}`, query: { uploads: '', 'upload-id-marker': `u${NUL}` } },
      { method: 'GET', path: `/${BUCKET}/present`, query: { versionId: `v${NUL}` } },
      { method: 'DELETE', path: `/${BUCKET}/present`, query: { versionId: `v${NUL}` } },
      { method: 'GET', path: `/${BUCKET}/present`, query: { uploadId: `u${NUL}` } },
      { method: 'DELETE', path: `/${BUCKET}/present`, query: { uploadId: `u${NUL}` } },
      {
        method: 'GET',
        path: `/${BUCKET}`,
        query: { 'list-type': '2', 'continuation-token': Buffer.from(`a${NUL}`).toString('base64url') },
      },
    ];
    for (const request of requests) {
      const answer = await signedRequest(server, key, request);
      expect([answer.status, answer.code], `${JSON.stringify(request)}: ${answer.text}`).toEqual([400, 'InvalidArgument']);
    }
    await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'present' }));
  });

  test('in a copy source: InvalidArgument, and nothing copied', async () => {
    for (const source of [`/${BUCKET}/pre%00sent`, `/${BUCKET}/present?versionId=v%00`]) {
      const answer = await signedRequest(server, key, { method: 'PUT', path: `/${BUCKET}/copy`, headers: { 'x-amz-copy-source': source } });
      expect([answer.status, answer.code], answer.text).toEqual([400, 'InvalidArgument']);
    }
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'copy' })))).toMatchObject({ status: 404 });
  });

  test('in an XML body (`&#0;`): MalformedXML for the whole request, and nothing deleted', async () => {
    const answer = await signedRequest(server, key, {
      method: 'POST',
      path: `/${BUCKET}`,
      query: { delete: '' },
      body: '<Delete><Object><Key>pre&#0;sent</Key></Object><Object><Key>present</Key></Object></Delete>',
    });
    expect([answer.status, answer.code], answer.text).toEqual([400, 'MalformedXML']);
    await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'present' }));
    const tagging = await signedRequest(server, key, {
      method: 'PUT',
      path: `/${BUCKET}/present`,
      query: { tagging: '' },
      body: '<Tagging><TagSet><Tag><Key>k&#0;</Key><Value>v</Value></Tag></TagSet></Tagging>',
    });
    expect([tagging.status, tagging.code], tagging.text).toEqual([400, 'MalformedXML']);
  });
});

describe('user metadata', () => {
  test('up to 2 KB is stored; beyond it is MetadataTooLarge and nothing is stored', async () => {
    // Names and values count, as S3 counts them: 2048 bytes in all is the most.
    const atLimit = { a: 'x'.repeat(1023), b: 'y'.repeat(1023) };
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'metadata-at-limit', Body: 'x', Metadata: atLimit }));
    expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'metadata-at-limit' }))).Metadata).toEqual(atLimit);
    const overLimit = { a: 'x'.repeat(1023), b: 'y'.repeat(1024) };
    expect(
      await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'metadata-over', Body: 'x', Metadata: overLimit }))),
    ).toEqual({
      code: 'MetadataTooLarge',
      status: 400,
    });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'metadata-over' })))).toMatchObject({ status: 404 });
    const multipart = await signedRequest(server, key, {
      method: 'POST',
      path: `/${BUCKET}/metadata-over`,
      query: { uploads: '' },
      headers: { 'x-amz-meta-big': 'z'.repeat(8 * 1024) },
    });
    expect([multipart.status, multipart.code], multipart.text).toEqual([400, 'MetadataTooLarge']);
  });
});

/**
 * A signed PUT over a raw socket: its head with `extraHeaders`, then `sent` of a body declared
 * `declared` bytes long (more: the client stalls); what the server answered, and whether it closed
 * the connection within 30 s (many times the server's 1 s timeout here).
 */
async function rawPut(
  path: string,
  query: Record<string, string>,
  declared: number,
  sent: string,
  extraHeaders: Record<string, string> = {},
): Promise<{ answer: string; closed: boolean }> {
  const base = new URL(server.s3Url);
  const signer = new SignatureV4({
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
    region: 'us-east-1',
    service: 's3',
    sha256: NodeSha256,
    uriEscapePath: false,
  });
  const signed = await signer.sign({
    method: 'PUT',
    protocol: 'http:',
    hostname: base.hostname,
    port: Number(base.port),
    path,
    query,
    headers: { host: base.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'content-length': String(declared), ...extraHeaders },
  });
  const search = Object.entries(query)
    .map(([name, value]) => (value === '' ? name : `${name}=${value}`))
    .join('&');
  const head = [
    `PUT ${path}${search ? `?${search}` : ''} HTTP/1.1`,
    ...Object.entries(signed.headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return new Promise((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname, () => socket.write(`${head.join('\r\n')}\r\n\r\n${sent}`));
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      // A whole answer to a request that sent its whole body: done, without waiting for a close.
      if (sent.length === declared && /\r\n\r\n/.test(answer)) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ answer, closed: true }));
    setTimeout(() => {
      socket.destroy();
      resolve({ answer, closed: false });
    }, 30_000).unref();
  });
}

describe('a body that stops coming', () => {
  test('an object upload is answered RequestTimeout and closed; nothing is stored and no space stays reserved', async () => {
    const { answer, closed } = await rawPut(`/${BUCKET}/stalled`, {}, 1000, 'the first bytes');
    expect(closed).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('<Code>RequestTimeout</Code>');
    // Closed after the answer, not kept open for a next request until the keep-alive timeout.
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'stalled' })))).toMatchObject({ status: 404 });
    await settles(async () => {
      const { rows } = await server.pool.query('SELECT count(*)::int AS held FROM store_reservations');
      expect(rows[0].held).toBe(0);
    });
  }, 60_000);

  test('a small body (tagging) is answered RequestTimeout and closed, and nothing changes', async () => {
    const { answer, closed } = await rawPut(`/${BUCKET}/present`, { tagging: '' }, 500, '<Tagging><TagSet>');
    expect(closed).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('<Code>RequestTimeout</Code>');
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
  }, 60_000);
});

describe('a body refused before it was read', () => {
  test('is read to its end before the answer, so a client still sending it gets the answer rather than a reset', async () => {
    // Refused at once (no such bucket), while the client sends 2 MiB in 64 KiB pieces, 10 ms
    // apart. Answered and closed at once, the connection was reset under the client's writes
    // (EPIPE: the SDK's TimeoutError), which a busy machine made happen to the SDK's own uploads.
    const size = 2 * 1024 * 1024;
    const socket = connect(Number(new URL(server.s3Url).port), new URL(server.s3Url).hostname);
    let answer = '';
    let writeError: Error | undefined;
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', (error) => (writeError = error));
    socket.write(`PUT /no-such-bucket-here/object HTTP/1.1\r\nHost: ${new URL(server.s3Url).host}\r\nContent-Length: ${size}\r\n\r\n`);
    const piece = Buffer.alloc(64 * 1024, 1);
    for (let sent = 0; sent < size && !writeError; sent += piece.length) {
      socket.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // The connection stays usable: a second request on it is answered too.
    socket.write(`GET /no-such-bucket-here/object HTTP/1.1\r\nHost: ${new URL(server.s3Url).host}\r\nConnection: close\r\n\r\n`);
    await new Promise((resolve) => {
      socket.once('close', resolve);
      setTimeout(() => socket.destroy(), 20_000).unref();
    });
    expect(writeError).toBeUndefined();
    expect(answer.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 403', 'HTTP/1.1 403']);
  }, 60_000);

  test('is read too when its client asked for 100 Continue but sent it without waiting, as the AWS SDK does given its own agent', async () => {
    // Taken for a client that waits (and sends nothing), it was answered and closed at once: the
    // body on its way reset the connection, and the SDK's 5 MiB SSE-C part saw a TimeoutError.
    const size = 2 * 1024 * 1024;
    // Half open, as an HTTP client is: an answer does not stop it sending the body it started.
    const socket = connect({ port: Number(new URL(server.s3Url).port), host: new URL(server.s3Url).hostname, allowHalfOpen: true });
    let answer = '';
    let writeError: Error | undefined;
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', (error) => (writeError = error));
    // The answer and the close may come before the last piece's pause ends.
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(
      `PUT /no-such-bucket-here/object HTTP/1.1\r\nHost: ${new URL(server.s3Url).host}\r\nExpect: 100-continue\r\n` +
        `Connection: close\r\nContent-Length: ${size}\r\n\r\n`,
    );
    const piece = Buffer.alloc(64 * 1024, 1);
    for (let sent = 0; sent < size && !writeError; sent += piece.length) {
      socket.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    socket.end();
    setTimeout(() => socket.destroy(), 20_000).unref();
    await closed;
    expect(writeError).toBeUndefined();
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).not.toMatch(/100 Continue/);
  }, 60_000);

  test('a client that waits for 100 Continue and is refused is answered without sending its body, and the connection closed', async () => {
    const socket = connect(Number(new URL(server.s3Url).port), new URL(server.s3Url).hostname);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.write(
      `PUT /no-such-bucket-here/object HTTP/1.1\r\nHost: ${new URL(server.s3Url).host}\r\nExpect: 100-continue\r\nContent-Length: 1048576\r\n\r\n`,
    );
    await new Promise((resolve) => {
      socket.once('close', resolve);
      setTimeout(() => socket.destroy(), 20_000).unref();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
  }, 60_000);
});

describe('non-ASCII metadata', () => {
  test('a UTF-8 metadata value is signed and stored as the text it encodes, and given back as that text', async () => {
    const { answer } = await rawPut(`/${BUCKET}/unicode-metadata`, {}, 3, 'bar', { 'x-amz-meta-note': 'Hello Worldé' });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'unicode-metadata' }));
    expect(head.Metadata).toEqual({ note: 'Hello Worldé' });
  }, 60_000);
});

describe('headers S3 ignores', () => {
  test('an Expect header other than 100-continue is ignored, as S3 ignores it, rather than answered 417', async () => {
    const { answer } = await rawPut(`/${BUCKET}/expected`, {}, 4, 'body', { expect: '200' });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'expected' }));
    expect(await got.Body!.transformToString()).toBe('body');
  }, 60_000);
});
