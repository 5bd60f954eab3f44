// The embedded endpoint behind its own TLS (S3_TLS_CERT, S3_TLS_KEY), and SSE-C over it: an
// object written with a customer's key is sealed under that key, which is never stored; reading
// it needs the same key (its MD5 checked); copies and multipart uploads take the key where S3
// takes it. The certificate is made for the test with openssl.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../../../../server/config.ts';
import { MiB, createAccessKey, createBucket, s3ErrorOf, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;
let tlsDir: string;

beforeAll(async () => {
  tlsDir = mkdtempSync(path.join(tmpdir(), 's3-tls-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1'].concat([
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      path.join(tlsDir, 'key.pem'),
      '-out',
      path.join(tlsDir, 'cert.pem'),
    ]),
    { stdio: 'ignore' },
  );
  server = await startS3Server({ S3_TLS_CERT: path.join(tlsDir, 'cert.pem'), S3_TLS_KEY: path.join(tlsDir, 'key.pem') });
  await createBucket(server, server.org, 'private');
  key = await createAccessKey(server, server.org);
  s3 = new S3Client({
    endpoint: server.s3Url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
    maxAttempts: 1,
    // The test's own certificate is the one trusted authority.
    requestHandler: { httpsAgent: new Agent({ ca: readFileSync(path.join(tlsDir, 'cert.pem')) }) },
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  rmSync(tlsDir, { recursive: true, force: true });
});

const customerKey = () => {
  const raw = randomBytes(32);
  return {
    SSECustomerAlgorithm: 'AES256',
    SSECustomerKey: raw.toString('base64'),
    SSECustomerKeyMD5: createHash('md5').update(raw).digest('base64'),
  };
};
const asCopySource = (sse: ReturnType<typeof customerKey>) => ({
  CopySourceSSECustomerAlgorithm: sse.SSECustomerAlgorithm,
  CopySourceSSECustomerKey: sse.SSECustomerKey,
  CopySourceSSECustomerKeyMD5: sse.SSECustomerKeyMD5,
});

describe('TLS', () => {
  test('the endpoint serves https with the given certificate, and no plain http', async () => {
    expect(server.s3Url.startsWith('https://')).toBe(true);
    const plain = await fetch(server.s3Url.replace('https://', 'http://')).then(
      () => 'answered',
      () => 'refused',
    );
    expect(plain).toBe('refused');
  });

  test('a certificate without its key (or the other way round) stops start-up with a clear message', () => {
    expect(() => loadConfig({ S3_TLS_CERT: '/etc/cert.pem' })).toThrow(ConfigError);
    expect(() => loadConfig({ S3_TLS_KEY: '/etc/key.pem' })).toThrow(/S3_TLS_CERT and S3_TLS_KEY/);
  });
});

describe('SSE-C', () => {
  test('an object written with a customer key reads back only with that key, and is not plain on disk', async () => {
    const sse = customerKey();
    const marker = 'customer-sealed-marker';
    const body = Buffer.concat([Buffer.from(marker), randomBytes(200_000)]);
    const put = await s3.send(new PutObjectCommand({ Bucket: 'private', Key: 'mine.bin', Body: body, ...sse }));
    expect([put.SSECustomerAlgorithm, put.SSECustomerKeyMD5]).toEqual(['AES256', sse.SSECustomerKeyMD5]);
    const blobs = readdirSync(path.join(server.dataDir, 'objects', 'blobs'), { recursive: true, withFileTypes: true }).filter((entry) =>
      entry.isFile(),
    );
    expect(blobs.some((entry) => readFileSync(path.join(entry.parentPath, entry.name)).includes(marker))).toBe(false);

    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'mine.bin' })))).toEqual({
      code: 'InvalidRequest',
      status: 400,
    });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'private', Key: 'mine.bin' })))).toMatchObject({ status: 400 });
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'mine.bin', ...customerKey() })))).toEqual({
      code: 'InvalidArgument',
      status: 400,
    });

    const head = await s3.send(new HeadObjectCommand({ Bucket: 'private', Key: 'mine.bin', ...sse }));
    expect([head.SSECustomerAlgorithm, head.SSECustomerKeyMD5, head.ContentLength]).toEqual(['AES256', sse.SSECustomerKeyMD5, body.length]);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'mine.bin', ...sse }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    const range = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'mine.bin', Range: 'bytes=65530-65600', ...sse }));
    expect(Buffer.from(await range.Body!.transformToByteArray()).equals(body.subarray(65_530, 65_601))).toBe(true);
  });

  test('a key whose MD5 does not match, a key of the wrong length, or SSE-C with SSE-S3 is refused, storing nothing', async () => {
    const sse = customerKey();
    // The SDK computes the MD5 itself: these headers are set on the request as sent, before it is signed.
    const cases: Array<Record<string, string>> = [
      { 'x-amz-server-side-encryption-customer-key-md5': createHash('md5').update('another').digest('base64') },
      { 'x-amz-server-side-encryption-customer-key': randomBytes(16).toString('base64') },
      { 'x-amz-server-side-encryption': 'AES256' },
    ];
    for (const [index, headers] of cases.entries()) {
      const command = new PutObjectCommand({ Bucket: 'private', Key: `refused-${index}`, Body: 'x', ...sse });
      command.middlewareStack.add(
        (next) => async (args) => {
          Object.assign((args.request as { headers: Record<string, string> }).headers, headers);
          return next(args);
        },
        { step: 'build', priority: 'low' },
      );
      expect(await s3ErrorOf(s3.send(command)), JSON.stringify(headers)).toEqual({ code: 'InvalidArgument', status: 400 });
      expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'private', Key: `refused-${index}`, ...sse })))).toMatchObject({
        status: 404,
      });
    }
  });

  test('a copy opens its source with the source key and seals the copy as asked', async () => {
    const source = customerKey();
    const target = customerKey();
    const body = randomBytes(5000);
    await s3.send(new PutObjectCommand({ Bucket: 'private', Key: 'copy-from.bin', Body: body, ...source }));
    expect(
      await s3ErrorOf(
        s3.send(new CopyObjectCommand({ Bucket: 'private', Key: 'copy-to.bin', CopySource: 'private/copy-from.bin', ...target })),
      ),
    ).toMatchObject({ status: 400 });
    const copied = await s3.send(
      new CopyObjectCommand({
        Bucket: 'private',
        Key: 'copy-to.bin',
        CopySource: 'private/copy-from.bin',
        ...asCopySource(source),
        ...target,
      }),
    );
    expect(copied.SSECustomerKeyMD5).toBe(target.SSECustomerKeyMD5);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'copy-to.bin', ...target }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    const toPlatform = await s3.send(
      new CopyObjectCommand({
        Bucket: 'private',
        Key: 'copy-sse-s3.bin',
        CopySource: 'private/copy-from.bin',
        ...asCopySource(source),
        ServerSideEncryption: 'AES256',
      }),
    );
    expect(toPlatform.ServerSideEncryption).toBe('AES256');
    const plain = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'copy-sse-s3.bin' }));
    expect(Buffer.from(await plain.Body!.transformToByteArray()).equals(body)).toBe(true);
  });

  test('every part and the completion of an SSE-C upload give its key again', async () => {
    const sse = customerKey();
    const parts = [randomBytes(5 * MiB), randomBytes(1000)];
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'private', Key: 'parts.bin', ...sse }));
    expect(created.SSECustomerKeyMD5).toBe(sse.SSECustomerKeyMD5);
    const part = (number: number, extra = {}) =>
      s3.send(
        new UploadPartCommand({
          Bucket: 'private',
          Key: 'parts.bin',
          UploadId: created.UploadId,
          PartNumber: number,
          Body: parts[number - 1],
          ...extra,
        }),
      );
    expect(await s3ErrorOf(part(1))).toMatchObject({ status: 400 });
    expect(await s3ErrorOf(part(1, customerKey()))).toMatchObject({ status: 400 });
    const etags = [(await part(1, sse)).ETag!, (await part(2, sse)).ETag!];
    const complete = (extra = {}) =>
      s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: 'private',
          Key: 'parts.bin',
          UploadId: created.UploadId,
          MultipartUpload: { Parts: etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 })) },
          ...extra,
        }),
      );
    expect(await s3ErrorOf(complete())).toMatchObject({ status: 400 });
    await complete(sse);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'parts.bin', ...sse }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat(parts))).toBe(true);
    // One part by its number: opened with the same key, and only with it.
    const second = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'parts.bin', PartNumber: 2, ...sse }));
    expect(second.PartsCount).toBe(2);
    expect(Buffer.from(await second.Body!.transformToByteArray()).equals(parts[1]!)).toBe(true);
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'parts.bin', PartNumber: 2 })))).toMatchObject({
      status: 400,
    });
  });

  test('UploadPartCopy opens an SSE-C source with its key and seals the part as its upload is', async () => {
    const source = customerKey();
    const target = customerKey();
    const body = randomBytes(6 * MiB);
    await s3.send(new PutObjectCommand({ Bucket: 'private', Key: 'part-source.bin', Body: body, ...source }));
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'private', Key: 'part-copy.bin', ...target }));
    const copyPart = (extra = {}) =>
      s3.send(
        new UploadPartCopyCommand({
          Bucket: 'private',
          Key: 'part-copy.bin',
          UploadId: created.UploadId,
          PartNumber: 1,
          CopySource: 'private/part-source.bin',
          CopySourceRange: `bytes=0-${5 * MiB - 1}`,
          ...extra,
        }),
      );
    // Without the source's key, or without the upload's key, nothing is copied.
    expect(await s3ErrorOf(copyPart(target))).toMatchObject({ status: 400 });
    expect(await s3ErrorOf(copyPart(asCopySource(source)))).toMatchObject({ status: 400 });
    const copied = await copyPart({ ...asCopySource(source), ...target });
    expect(copied.SSECustomerKeyMD5).toBe(target.SSECustomerKeyMD5);
    const last = await s3.send(
      new UploadPartCommand({
        Bucket: 'private',
        Key: 'part-copy.bin',
        UploadId: created.UploadId,
        PartNumber: 2,
        Body: 'tail',
        ...target,
      }),
    );
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'private',
        Key: 'part-copy.bin',
        UploadId: created.UploadId,
        MultipartUpload: {
          Parts: [
            { ETag: copied.CopyPartResult!.ETag, PartNumber: 1 },
            { ETag: last.ETag, PartNumber: 2 },
          ],
        },
        ...target,
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: 'private', Key: 'part-copy.bin', ...target }));
    expect(
      Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat([body.subarray(0, 5 * MiB), Buffer.from('tail')])),
    ).toBe(true);
    // The copied part is sealed: its plain bytes are in no file of the store.
    const sample = body.subarray(1000, 1064);
    const blobs = readdirSync(path.join(server.dataDir, 'objects', 'blobs'), { recursive: true, withFileTypes: true });
    expect(blobs.some((entry) => entry.isFile() && readFileSync(path.join(entry.parentPath, entry.name)).includes(sample))).toBe(false);
  });
});
