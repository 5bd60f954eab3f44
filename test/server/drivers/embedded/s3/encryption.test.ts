// SSE-S3 on the embedded endpoint: an object asked to be encrypted (by its header, or by its
// bucket's default encryption) is sealed on disk, answered with the header on every operation,
// read back whole and by ranges, copied, and uploaded in parts; bytes altered on disk fail the
// read instead of coming back wrong. SSE-KMS is refused, and SSE-C over plain HTTP is refused as
// AWS refuses it (the TLS side is test/server/drivers/embedded/s3/sse-c.test.ts).
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteBucketEncryptionCommand,
  GetBucketEncryptionCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketEncryptionCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MiB, createAccessKey, createBucket, s3Client, s3ErrorOf, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, 'sealed');
  await createBucket(server, server.org, 'by-default');
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

const md5 = (data: Buffer | string) => createHash('md5').update(data).digest('hex');

/** Every blob file the store holds, with its bytes. */
function blobFiles(): Array<{ file: string; bytes: Buffer }> {
  const root = path.join(server.dataDir, 'objects', 'blobs');
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .map((file) => ({ file, bytes: readFileSync(file) }));
}

/** A body whose every 64 KiB holds a marker, so that plain bytes on disk would be found wherever they are. */
function markedBody(size: number, marker: string): Buffer {
  const body = randomBytes(size);
  for (let at = 0; at + marker.length <= size; at += 64 * 1024) body.write(marker, at);
  return body;
}

const onDisk = (marker: string) => blobFiles().some(({ bytes }) => bytes.includes(marker));

describe('SSE-S3', () => {
  test('a PUT asking for AES256 is sealed on disk, answered with the header, and read back whole and by ranges', async () => {
    const marker = 'plain-marker-sse-s3-put';
    const body = markedBody(300 * 1024 + 7, marker);
    const put = await s3.send(new PutObjectCommand({ Bucket: 'sealed', Key: 'secret.bin', Body: body, ServerSideEncryption: 'AES256' }));
    expect(put.ServerSideEncryption).toBe('AES256');
    // The ETag is the plain bytes' MD5, as S3 gives it for SSE-S3.
    expect(put.ETag).toBe(`"${md5(body)}"`);
    expect(onDisk(marker)).toBe(false);

    const head = await s3.send(new HeadObjectCommand({ Bucket: 'sealed', Key: 'secret.bin' }));
    expect(head.ServerSideEncryption).toBe('AES256');
    expect(head.ContentLength).toBe(body.length);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'sealed', Key: 'secret.bin' }));
    expect(got.ServerSideEncryption).toBe('AES256');
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    for (const [start, end] of [
      [0, 0],
      [65_530, 65_545],
      [100_000, 250_000],
      [body.length - 10, body.length - 1],
    ] as const) {
      const range = await s3.send(new GetObjectCommand({ Bucket: 'sealed', Key: 'secret.bin', Range: `bytes=${start}-${end}` }));
      expect(range.ContentRange).toBe(`bytes ${start}-${end}/${body.length}`);
      expect(Buffer.from(await range.Body!.transformToByteArray()).equals(body.subarray(start, end + 1))).toBe(true);
    }
  });

  test('an object without the header is stored plain: the store seals only what is asked for', async () => {
    const marker = 'plain-marker-not-asked';
    const put = await s3.send(new PutObjectCommand({ Bucket: 'sealed', Key: 'plain.bin', Body: markedBody(1000, marker) }));
    expect(put.ServerSideEncryption).toBeUndefined();
    expect(onDisk(marker)).toBe(true);
  });

  test('a bucket with default encryption seals every write that asks for none; deleting the default stops it', async () => {
    expect(await s3ErrorOf(s3.send(new GetBucketEncryptionCommand({ Bucket: 'by-default' })))).toEqual({
      code: 'ServerSideEncryptionConfigurationNotFoundError',
      status: 404,
    });
    await s3.send(
      new PutBucketEncryptionCommand({
        Bucket: 'by-default',
        ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      }),
    );
    const config = await s3.send(new GetBucketEncryptionCommand({ Bucket: 'by-default' }));
    expect(config.ServerSideEncryptionConfiguration?.Rules?.[0]?.ApplyServerSideEncryptionByDefault?.SSEAlgorithm).toBe('AES256');

    const marker = 'plain-marker-bucket-default';
    const put = await s3.send(new PutObjectCommand({ Bucket: 'by-default', Key: 'a.bin', Body: markedBody(5000, marker) }));
    expect(put.ServerSideEncryption).toBe('AES256');
    expect(onDisk(marker)).toBe(false);
    expect((await s3.send(new HeadObjectCommand({ Bucket: 'by-default', Key: 'a.bin' }))).ServerSideEncryption).toBe('AES256');

    await s3.send(new DeleteBucketEncryptionCommand({ Bucket: 'by-default' }));
    expect(await s3ErrorOf(s3.send(new GetBucketEncryptionCommand({ Bucket: 'by-default' })))).toMatchObject({ status: 404 });
    const after = await s3.send(new PutObjectCommand({ Bucket: 'by-default', Key: 'b.bin', Body: 'plain again' }));
    expect(after.ServerSideEncryption).toBeUndefined();
  });

  test('a multipart upload asked for AES256 seals every part; the object reads back across parts', async () => {
    const marker = 'plain-marker-multipart';
    const parts = [markedBody(5 * MiB, marker), markedBody(MiB + 3, marker)];
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'sealed', Key: 'big.bin', ServerSideEncryption: 'AES256' }));
    expect(created.ServerSideEncryption).toBe('AES256');
    const etags: string[] = [];
    for (const [index, part] of parts.entries()) {
      const uploaded = await s3.send(
        new UploadPartCommand({ Bucket: 'sealed', Key: 'big.bin', UploadId: created.UploadId, PartNumber: index + 1, Body: part }),
      );
      expect(uploaded.ServerSideEncryption).toBe('AES256');
      etags.push(uploaded.ETag!);
    }
    const completed = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'sealed',
        Key: 'big.bin',
        UploadId: created.UploadId,
        MultipartUpload: { Parts: etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 })) },
      }),
    );
    expect(completed.ServerSideEncryption).toBe('AES256');
    expect(onDisk(marker)).toBe(false);
    const whole = Buffer.concat(parts);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'sealed', Key: 'big.bin' }));
    expect(got.ServerSideEncryption).toBe('AES256');
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(whole)).toBe(true);
    const start = 5 * MiB - 100;
    const across = await s3.send(new GetObjectCommand({ Bucket: 'sealed', Key: 'big.bin', Range: `bytes=${start}-${start + 199}` }));
    expect(Buffer.from(await across.Body!.transformToByteArray()).equals(whole.subarray(start, start + 200))).toBe(true);
  });

  test('a copy is sealed as its own request asks, whatever its source was', async () => {
    const body = randomBytes(70_000);
    await s3.send(new PutObjectCommand({ Bucket: 'sealed', Key: 'copy-source.bin', Body: body, ServerSideEncryption: 'AES256' }));
    const plainCopy = await s3.send(
      new CopyObjectCommand({ Bucket: 'sealed', Key: 'copy-plain.bin', CopySource: 'sealed/copy-source.bin' }),
    );
    expect(plainCopy.ServerSideEncryption).toBeUndefined();
    const sealedCopy = await s3.send(
      new CopyObjectCommand({
        Bucket: 'sealed',
        Key: 'copy-sealed.bin',
        CopySource: 'sealed/copy-plain.bin',
        ServerSideEncryption: 'AES256',
      }),
    );
    expect(sealedCopy.ServerSideEncryption).toBe('AES256');
    for (const name of ['copy-plain.bin', 'copy-sealed.bin']) {
      const got = await s3.send(new GetObjectCommand({ Bucket: 'sealed', Key: name }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body), name).toBe(true);
    }
    // Copied onto itself asking for encryption: a change S3 allows (how objects are re-encrypted).
    const inPlace = await s3.send(
      new CopyObjectCommand({
        Bucket: 'sealed',
        Key: 'copy-plain.bin',
        CopySource: 'sealed/copy-plain.bin',
        ServerSideEncryption: 'AES256',
      }),
    );
    expect(inPlace.ServerSideEncryption).toBe('AES256');
  });

  test('bytes altered on disk fail the read rather than coming back altered', async () => {
    const marker = 'tamper-target';
    const body = markedBody(200_000, marker);
    await s3.send(new PutObjectCommand({ Bucket: 'sealed', Key: 'tampered.bin', Body: body, ServerSideEncryption: 'AES256' }));
    const before = new Set(blobFiles().map(({ file }) => file));
    // The newest blob is this object's: find it by its size on disk (sealed: 16 bytes more per 64 KiB).
    const sealedSize = body.length + Math.ceil(body.length / 65_536) * 16;
    const target = [...before].find((file) => readFileSync(file).length === sealedSize)!;
    const bytes = readFileSync(target);
    bytes[100_000]! ^= 0xff;
    writeFileSync(target, bytes);
    const failed = await s3
      .send(new GetObjectCommand({ Bucket: 'sealed', Key: 'tampered.bin' }))
      .then((got) => got.Body!.transformToByteArray())
      .then(
        () => 'read',
        () => 'failed',
      );
    expect(failed).toBe('failed');
    // A range outside the altered chunk still reads.
    const range = await s3.send(new GetObjectCommand({ Bucket: 'sealed', Key: 'tampered.bin', Range: 'bytes=0-999' }));
    expect(Buffer.from(await range.Body!.transformToByteArray()).equals(body.subarray(0, 1000))).toBe(true);
  });
});

describe('what is not given is refused, and nothing is stored', () => {
  test('SSE-KMS is 501 NotImplemented, on an object and as a bucket default', async () => {
    expect(
      await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'sealed', Key: 'kms.bin', Body: 'x', ServerSideEncryption: 'aws:kms' }))),
    ).toEqual({ code: 'NotImplemented', status: 501 });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'sealed', Key: 'kms.bin' })))).toMatchObject({ status: 404 });
    expect(
      await s3ErrorOf(
        s3.send(
          new PutBucketEncryptionCommand({
            Bucket: 'sealed',
            ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms' } }] },
          }),
        ),
      ),
    ).toEqual({ code: 'NotImplemented', status: 501 });
  });

  test('an unknown algorithm, or SSE-S3 with SSE-C (even over plain HTTP), is InvalidArgument', async () => {
    const unknown = await signedRequest(server, key, {
      method: 'PUT',
      path: '/sealed/unknown.bin',
      headers: { 'x-amz-server-side-encryption': 'AES128' },
      body: 'x',
    });
    expect([unknown.status, unknown.code]).toEqual([400, 'InvalidArgument']);
    const both = await signedRequest(server, key, {
      method: 'PUT',
      path: '/sealed/both.bin',
      headers: { 'x-amz-server-side-encryption': 'AES256', 'x-amz-server-side-encryption-customer-algorithm': 'AES256' },
      body: 'x',
    });
    expect([both.status, both.code]).toEqual([400, 'InvalidArgument']);
  });

  test('SSE-C over plain HTTP is refused as AWS refuses it (the key would travel in the clear)', async () => {
    const customerKey = randomBytes(32);
    const answer = await signedRequest(server, key, {
      method: 'PUT',
      path: '/sealed/customer.bin',
      headers: {
        'x-amz-server-side-encryption-customer-algorithm': 'AES256',
        'x-amz-server-side-encryption-customer-key': customerKey.toString('base64'),
        'x-amz-server-side-encryption-customer-key-md5': createHash('md5').update(customerKey).digest('base64'),
      },
      body: 'secret',
    });
    expect([answer.status, answer.code]).toEqual([400, 'InvalidRequest']);
    expect(answer.text).toContain('must be made over a secure connection');
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'sealed', Key: 'customer.bin' })))).toMatchObject({ status: 404 });
  });

  test('x-amz-server-side-encryption on a read is InvalidArgument (S3 takes it on writes only)', async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'sealed', Key: 'read-me.bin', Body: 'x', ServerSideEncryption: 'AES256' }));
    const answer = await signedRequest(server, key, {
      method: 'GET',
      path: '/sealed/read-me.bin',
      headers: { 'x-amz-server-side-encryption': 'AES256' },
    });
    expect([answer.status, answer.code]).toEqual([400, 'InvalidArgument']);
  });
});
