// Who may use the S3 endpoint, and what it records: only active keys of the organization, a
// revoked key stops at once, other organizations' bucket names are unknown (NoSuchBucket, as any
// name the organization never made: no tenant learns another's names), buckets not in
// service serve nothing; secrets sealed at rest; signed aws-chunked bodies have every chunk's
// signature checked; bytes served are metered as egress.
import { GetObjectCommand, HeadBucketCommand, ListBucketsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createHash, createHmac } from 'node:crypto';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createAccessKey,
  createBucket,
  egressBytes,
  filesUnder,
  s3Client,
  s3ErrorOf,
  settles,
  startS3Server,
  type IssuedKey,
} from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

beforeAll(async () => {
  // A short sweep interval: the egress test waits for the sweep to fold the log.
  server = await startS3Server({ OBJECT_STORE_SWEEP_INTERVAL_MS: '200' });
  await createBucket(server, server.org, 'team-files');
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

describe('keys and tenants', () => {
  test('a revoked key stops working as soon as the revoke is accepted', async () => {
    const spare = await createAccessKey(server, server.org);
    const client = s3Client(server, spare);
    await client.send(new PutObjectCommand({ Bucket: 'team-files', Key: 'before-revoke', Body: 'ok' }));
    const revoked = await server.org.call('DELETE', `/s3/access-keys/${spare.keyId}`);
    expect(revoked.status, revoked.text).toBe(202);
    // No wait for the revoke operation: the key is already refused.
    expect(await s3ErrorOf(client.send(new ListBucketsCommand({})))).toEqual({ code: 'InvalidAccessKeyId', status: 403 });
    await server.waitForOperation(server.org, revoked.body.operation.id);
    expect(await s3ErrorOf(client.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'before-revoke' })))).toEqual({
      code: 'InvalidAccessKeyId',
      status: 403,
    });
  });

  test("another organization's bucket names are NoSuchBucket, as names nobody made; its own buckets are the only ones listed", async () => {
    const other = await server.createOrg('Rival Corp');
    await createBucket(server, other, 'rival-secrets');
    const rival = s3Client(server, await createAccessKey(server, other));
    await rival.send(new PutObjectCommand({ Bucket: 'rival-secrets', Key: 'plan.txt', Body: 'secret plan' }));
    const unknown = { code: 'NoSuchBucket', status: 404 };
    // The same answer as for a name no organization holds: nothing tells the two apart.
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'nobody-has-this', Key: 'plan.txt' })))).toEqual(unknown);
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'rival-secrets', Key: 'plan.txt' })))).toEqual(unknown);
    expect(await s3ErrorOf(s3.send(new HeadBucketCommand({ Bucket: 'rival-secrets' })))).toMatchObject({ status: 404 });
    expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'rival-secrets', Key: 'x', Body: 'x' })))).toEqual(unknown);
    expect(await s3ErrorOf(rival.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'before-revoke' })))).toEqual(unknown);
    // Nothing of the rival's changed.
    const plan = await rival.send(new GetObjectCommand({ Bucket: 'rival-secrets', Key: 'plan.txt' }));
    expect(await plan.Body!.transformToString()).toBe('secret plan');
    const listed = await rival.send(new ListBucketsCommand({}));
    expect(listed.Buckets?.map((bucket) => bucket.Name)).toEqual(['rival-secrets']);
  });

  test('a soft-deleted bucket serves nothing (NoSuchBucket), and serves again once restored', async () => {
    const bucket = await createBucket(server, server.org, 'come-and-go');
    const deleted = await server.org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(deleted.status, deleted.text).toBe(202);
    await server.waitForOperation(server.org, deleted.body.operation.id);
    expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'come-and-go', Key: 'x', Body: 'x' })))).toEqual({
      code: 'NoSuchBucket',
      status: 404,
    });
    expect((await s3.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name)).not.toContain('come-and-go');
    const restored = await server.org.call('POST', `/s3/buckets/${bucket.id}/restore`);
    expect(restored.status, restored.text).toBe(202);
    await server.waitForOperation(server.org, restored.body.operation.id);
    await s3.send(new PutObjectCommand({ Bucket: 'come-and-go', Key: 'x', Body: 'x' }));
  });

  test('the secret store and the store keep no S3 secret in plain text', async () => {
    const { rows } = await server.pool.query<{ text: string }>(
      `SELECT sealed AS text FROM store_secrets UNION ALL SELECT secret_sealed FROM store_access_keys`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.text).not.toContain(key.secretAccessKey);
    const dump = JSON.stringify((await server.pool.query('SELECT * FROM s3_access_keys')).rows);
    expect(dump).not.toContain(key.secretAccessKey);
  });
});

/** SigV4 written out from AWS's documentation, independently of the server's code. */
function signingKeyOf(secret: string, date: string, region: string): Buffer {
  const step = (k: string | Buffer, data: string) => createHmac('sha256', k).update(data).digest();
  return step(step(step(step(`AWS4${secret}`, date), region), 's3'), 'aws4_request');
}
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** A PUT with a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body: every chunk signed, chained from the seed. */
function signedChunkedPut(target: string, chunks: Buffer[], options: { tamper?: boolean; cutAfter?: number } = {}): Promise<Response> {
  const url = new URL(`${server.s3Url}${target}`);
  const now = new Date();
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const scope = `${date}/us-east-1/s3/aws4_request`;
  const decodedLength = chunks.reduce((total, chunk) => total + chunk.length, 0);
  const headers: Record<string, string> = {
    host: url.host,
    'content-encoding': 'aws-chunked',
    'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    'x-amz-date': amzDate,
    'x-amz-decoded-content-length': String(decodedLength),
  };
  const names = Object.keys(headers).sort();
  const canonical = [
    'PUT',
    url.pathname,
    '',
    names.map((name) => `${name}:${headers[name]}\n`).join(''),
    names.join(';'),
    headers['x-amz-content-sha256'],
  ].join('\n');
  const key = signingKeyOf(s3Key().secretAccessKey, date, 'us-east-1');
  const sign = (text: string) => createHmac('sha256', key).update(text).digest('hex');
  const seed = sign(['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n'));
  let previous = seed;
  const pieces: Buffer[] = [];
  for (const chunk of [...chunks, Buffer.alloc(0)]) {
    const signature = sign(['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, previous, sha256(''), sha256(chunk)].join('\n'));
    previous = signature;
    const sent = options.tamper && chunk.length > 0 ? Buffer.from(chunk).fill(0x21, 0, 1) : chunk;
    pieces.push(Buffer.from(`${chunk.length.toString(16)};chunk-signature=${signature}\r\n`), sent, Buffer.from('\r\n'));
  }
  const body = Buffer.concat(pieces);
  const requestHeaders = {
    ...headers,
    'content-length': String(body.length),
    authorization: `AWS4-HMAC-SHA256 Credential=${s3Key().accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${seed}`,
  };
  if (options.cutAfter !== undefined) {
    // Sends the start of the body, waits until the server is storing it, then goes away.
    const sent = httpRequest(url, { method: 'PUT', headers: requestHeaders });
    sent.on('error', () => {});
    sent.write(body.subarray(0, options.cutAfter));
    return settles(async () => expect(await storingABody()).toBe(true)).then(() => {
      sent.destroy();
      return new Response(null, { status: 499 });
    });
  }
  return fetch(url, { method: 'PUT', headers: requestHeaders, body });
}
const s3Key = () => key;

/** The files under DATA_DIR/objects: temporary ones, and those in place in blobs/. */
const objectFiles = () => filesUnder(path.join(server.dataDir, 'objects'));

/** The files and folders under DATA_DIR/objects this process holds open (Linux's /proc; none elsewhere). */
const openObjectFiles = () => {
  const objects = path.join(server.dataDir, 'objects');
  const descriptors = existsSync('/proc/self/fd') ? readdirSync('/proc/self/fd') : [];
  return descriptors
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return ''; // closed meanwhile (the listing's own descriptor)
      }
    })
    .filter((target) => target.startsWith(objects));
};

/** Whether a write is storing its body: its reservation's file is there, wherever it is written. */
async function storingABody(): Promise<boolean> {
  const { rows } = await server.pool.query<{ blob: string }>('SELECT blob FROM store_reservations');
  const files = objectFiles().map((file) => path.basename(file));
  return rows.some(({ blob }) => files.includes(blob));
}

describe('signed aws-chunked bodies', () => {
  test('every chunk signature is checked: a correct body is stored, a tampered chunk is SignatureDoesNotMatch and stores nothing', async () => {
    const chunks = [Buffer.alloc(64 * 1024, 'a'), Buffer.alloc(64 * 1024, 'b'), Buffer.from('the end')];
    const stored = await signedChunkedPut('/team-files/chunked.bin', chunks);
    expect(stored.status, await stored.text()).toBe(200);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'chunked.bin' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat(chunks))).toBe(true);

    const tampered = await signedChunkedPut('/team-files/tampered.bin', chunks, { tamper: true });
    expect(tampered.status).toBe(403);
    expect(await tampered.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'tampered.bin' })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });
  });

  test('a client that goes away mid-body leaves no file, no open descriptor and no reserved space behind', async () => {
    // A write that completes keeps none of its files open either (one written in place is left
    // open for its sync, then closed).
    await s3.send(new PutObjectCommand({ Bucket: 'team-files', Key: 'kept.bin', Body: Buffer.alloc(4096, 1) }));
    expect(openObjectFiles()).toEqual([]);
    const before = objectFiles();
    const leftNothing = () =>
      settles(async () => {
        expect(objectFiles()).toEqual(before);
        expect((await server.pool.query('SELECT count(*)::int AS n FROM store_reservations')).rows[0].n).toBe(0);
        expect(openObjectFiles()).toEqual([]);
      });
    const chunks = [Buffer.alloc(256 * 1024, 'a'), Buffer.alloc(256 * 1024, 'b')];
    await signedChunkedPut('/team-files/abandoned.bin', chunks, { cutAfter: 100 * 1024 });
    await leftNothing();
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'abandoned.bin' })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });

    // The same with a plain body (a presigned PUT), small and sent unasked: written in place, in blobs/.
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'team-files', Key: 'abandoned-too.bin' }), { expiresIn: 60 });
    const sent = httpRequest(url, { method: 'PUT', headers: { 'Content-Length': String(200 * 1024) } });
    sent.on('error', () => {});
    sent.write(Buffer.alloc(100 * 1024));
    await settles(async () => expect(await storingABody()).toBe(true));
    sent.destroy();
    await leftNothing();
  });
});

describe('metering', () => {
  const egress = () => egressBytes(server, server.org.orgId);

  test('bytes served are egress of the organization, ranges counted as served; usage is what is stored', async () => {
    const before = await egress();
    await s3.send(new PutObjectCommand({ Bucket: 'team-files', Key: 'served.bin', Body: Buffer.alloc(10_000, 1) }));
    await (await s3.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'served.bin' }))).Body!.transformToByteArray();
    await (
      await s3.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'served.bin', Range: 'bytes=0-99' }))
    ).Body!.transformToByteArray();
    await settles(async () => expect(await egress()).toBe(before + 10_100));
    const { rows } = await server.pool.query<{ bytes: string }>(
      `SELECT coalesce(sum(size_bytes), 0)::text AS bytes FROM store_versions v JOIN store_buckets b ON b.id = v.bucket_id WHERE b.org_id = $1`,
      [server.org.orgId],
    );
    await settles(async () => expect((await server.org.call('GET', '/s3/quota')).body.usage_bytes).toBe(Number(rows[0]!.bytes)));
  });

  test("counting egress never waits for the organization's writes, and the sweep folds the count without changing it", async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'team-files', Key: 'popular.bin', Body: Buffer.alloc(1_000, 2) }));
    const before = await egress();
    // A write holds the organization's row from its quota check until its bytes are on disk
    // (longer on a slow disk). Meanwhile GETs go on: more of them than the store has connections,
    // so that a count waiting for the row would leave none for the next request.
    const writer = await server.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('SELECT 1 FROM store_orgs WHERE org_id = $1 FOR UPDATE', [server.org.orgId]);
      for (let index = 0; index < 24; index++) {
        const got = await s3.send(new GetObjectCommand({ Bucket: 'team-files', Key: 'popular.bin' }), {
          abortSignal: AbortSignal.timeout(5_000),
        });
        expect(await got.Body!.transformToByteArray()).toHaveLength(1_000);
      }
    } finally {
      await writer.query('ROLLBACK');
      writer.release();
    }
    await settles(async () => expect(await egress()).toBe(before + 24_000));
    // The sweep (every 200 ms here) moves the log into the running figure, which then holds it all.
    await settles(async () => {
      const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM store_egress');
      expect(rows[0].n).toBe(0);
    });
    const folded = await server.pool.query('SELECT egress_bytes FROM store_orgs WHERE org_id = $1', [server.org.orgId]);
    expect(Number(folded.rows[0].egress_bytes)).toBe(before + 24_000);
  });
});
