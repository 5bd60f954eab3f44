// The S3 endpoint driven by the official SDK as a user would configure it: objects stored and
// read back byte for byte, with the SDK's default checksums and aws-chunked uploads, ranges,
// conditional reads, copies, listings, presigned URLs, and S3's errors for what is wrong.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../../../../support/eventually.ts';
import { MiB, createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, 'photos');
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

const md5 = (data: Buffer | string) => createHash('md5').update(data).digest('hex');

/** The file holding the one segment of the latest version of `key` in the bucket photos, and what stat says of it. */
async function blobFile(key: string): Promise<{ path: string; stat: Stats }> {
  const { rows } = await server.pool.query<{ segments: Array<{ blob: string }> }>(
    `SELECT v.segments FROM store_versions v JOIN store_buckets b ON b.id = v.bucket_id
     WHERE b.name = 'photos' AND b.org_id = $1 AND v.key = $2 ORDER BY v.seq DESC LIMIT 1`,
    [server.org.orgId, key],
  );
  const [segment] = rows[0]!.segments;
  const file = path.join(server.dataDir, 'objects', 'blobs', segment!.blob.slice(0, 2), segment!.blob);
  return { path: file, stat: statSync(file) };
}

describe('objects through the SDK', () => {
  test('a string body (signed payload, CRC32 header) is stored and read back, with S3 ETag and checksum', async () => {
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: 'photos',
        Key: 'notes/hello.txt',
        Body: 'hello, world',
        ContentType: 'text/plain',
        Metadata: { owner: 'ada' },
      }),
    );
    expect(put.ETag).toBe(`"${md5('hello, world')}"`);
    expect(put.ChecksumCRC32).toBeDefined();
    const got = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'notes/hello.txt', ChecksumMode: 'ENABLED' }));
    expect(await got.Body!.transformToString()).toBe('hello, world');
    expect(got.ContentType).toBe('text/plain');
    expect(got.Metadata).toEqual({ owner: 'ada' });
    expect(got.ChecksumCRC32).toBe(put.ChecksumCRC32);
  });

  test('a stream body goes aws-chunked with a trailing checksum, and arrives byte for byte', async () => {
    const data = randomBytes(3 * MiB + 17);
    const chunks = [data.subarray(0, MiB), data.subarray(MiB, 2 * MiB), data.subarray(2 * MiB)];
    const put = await s3.send(
      new PutObjectCommand({ Bucket: 'photos', Key: 'big.bin', Body: Readable.from(chunks), ContentLength: data.length }),
    );
    expect(put.ETag).toBe(`"${md5(data)}"`);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'big.bin' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
    expect(got.ContentLength).toBe(data.length);
  });

  test('each checksum algorithm the SDK offers is verified and given back', async () => {
    for (const algorithm of ['CRC32', 'CRC32C', 'SHA1', 'SHA256', 'CRC64NVME'] as const) {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket: 'photos',
          Key: `sum-${algorithm}`,
          Body: `checked with ${algorithm}`,
          ChecksumAlgorithm: algorithm,
        }),
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket: 'photos', Key: `sum-${algorithm}`, ChecksumMode: 'ENABLED' }));
      const field = `Checksum${algorithm}` as const;
      expect(head[field], algorithm).toBe(put[field]);
      expect(head[field], algorithm).toBeTruthy();
    }
  });

  test('a wrong Content-MD5 or a wrong checksum is BadDigest, and nothing is stored', async () => {
    const wrongMd5 = createHash('md5').update('something else').digest('base64');
    expect(
      await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'bad-md5', Body: 'payload', ContentMD5: wrongMd5 }))),
    ).toEqual({ code: 'BadDigest', status: 400 });
    expect(
      await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'bad-crc', Body: 'payload', ChecksumCRC32: 'AAAAAA==' }))),
    ).toEqual({ code: 'BadDigest', status: 400 });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'photos', Key: 'bad-md5' })))).toMatchObject({ status: 404 });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'photos', Key: 'bad-crc' })))).toMatchObject({ status: 404 });
  });

  test('large bodies (hashed off the request thread) are checked as exactly as small ones', async () => {
    const data = randomBytes(2 * MiB + 5);
    const base64 = (algorithm: string) => createHash(algorithm).update(data).digest('base64');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(data));
    // Correct digests: the ETag and each checksum are those of the bytes.
    const stored = await s3.send(
      new PutObjectCommand({ Bucket: 'photos', Key: 'large-ok', Body: data, ContentMD5: base64('md5'), ChecksumAlgorithm: 'SHA256' }),
    );
    expect(stored.ETag).toBe(`"${md5(data)}"`);
    expect(stored.ChecksumSHA256).toBe(base64('sha256'));
    for (const [algorithm, expected] of [
      ['CRC32', crc.toString('base64')],
      ['SHA1', base64('sha1')],
    ] as const) {
      const put = await s3.send(
        new PutObjectCommand({ Bucket: 'photos', Key: `large-${algorithm}`, Body: data, ChecksumAlgorithm: algorithm }),
      );
      expect(put[`Checksum${algorithm}`], algorithm).toBe(expected);
    }
    // Wrong ones: refused, and nothing stored.
    const wrongMd5 = createHash('md5').update('something else').digest('base64');
    expect(
      await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'large-bad', Body: data, ContentMD5: wrongMd5 }))),
    ).toEqual({
      code: 'BadDigest',
      status: 400,
    });
    expect(
      await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'large-bad', Body: data, ChecksumCRC32: 'AAAAAA==' }))),
    ).toEqual({ code: 'BadDigest', status: 400 });
    // A signed payload whose bytes change after signing: the SHA-256 the signature covers no longer holds.
    const tampered = new PutObjectCommand({ Bucket: 'photos', Key: 'large-bad', Body: data });
    tampered.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { body: unknown };
        // The first byte flipped: set to a fixed value instead, it was unchanged whenever the random data began with it (1 run in 256).
        const changed = Buffer.from(data);
        changed[0] = changed[0]! ^ 0xff;
        request.body = changed;
        return next(args);
      },
      { step: 'deserialize', priority: 'low' },
    );
    expect(await s3ErrorOf(s3.send(tampered))).toMatchObject({ code: 'XAmzContentSHA256Mismatch', status: 400 });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'photos', Key: 'large-bad' })))).toMatchObject({ status: 404 });
  });

  test('ranges: first bytes, a middle, a suffix; past the end is InvalidRange (416)', async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'alphabet', Body: 'abcdefghijklmnopqrstuvwxyz' }));
    const read = async (range: string) => {
      const got = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'alphabet', Range: range }));
      return { text: await got.Body!.transformToString(), contentRange: got.ContentRange };
    };
    expect(await read('bytes=0-2')).toEqual({ text: 'abc', contentRange: 'bytes 0-2/26' });
    expect(await read('bytes=10-12')).toEqual({ text: 'klm', contentRange: 'bytes 10-12/26' });
    expect(await read('bytes=-3')).toEqual({ text: 'xyz', contentRange: 'bytes 23-25/26' });
    expect(await read('bytes=20-')).toEqual({ text: 'uvwxyz', contentRange: 'bytes 20-25/26' });
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'alphabet', Range: 'bytes=26-30' })))).toEqual({
      code: 'InvalidRange',
      status: 416,
    });
  });

  test('large objects read back byte for byte, whole and by ranges across read buffers and parts; a reader gone mid-body stops no one else', async () => {
    const bytesOf = async (Key: string, Range?: string) =>
      Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: 'photos', Key, Range }))).Body!.transformToByteArray());
    // One file: the server reads it in buffers of a fraction of a MiB, the last one partly filled.
    const single = randomBytes(MiB + 12_345);
    await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'large-read', Body: single }));
    expect((await bytesOf('large-read')).equals(single)).toBe(true);
    for (const [range, from, to] of [
      ['bytes=262100-524400', 262_100, 524_400],
      ['bytes=1-', 1, single.length - 1],
      ['bytes=-300000', single.length - 300_000, single.length - 1],
    ] as const)
      expect((await bytesOf('large-read', range)).equals(single.subarray(from, to + 1)), range).toBe(true);
    // Two files: a multipart object, read across the boundary of its parts.
    const parts = [randomBytes(5 * MiB), randomBytes(300_000)];
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'photos', Key: 'large-parts' }));
    const etags = [];
    for (const [index, Body] of parts.entries())
      etags.push(
        (await s3.send(new UploadPartCommand({ Bucket: 'photos', Key: 'large-parts', UploadId, PartNumber: index + 1, Body }))).ETag,
      );
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'photos',
        Key: 'large-parts',
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 })) },
      }),
    );
    const whole = Buffer.concat(parts);
    expect((await bytesOf('large-parts')).equals(whole)).toBe(true);
    expect(
      (await bytesOf('large-parts', `bytes=${5 * MiB - 1000}-${5 * MiB + 1000}`)).equals(whole.subarray(5 * MiB - 1000, 5 * MiB + 1001)),
    ).toBe(true);
    // A reader that goes away after its first bytes: the server goes on serving, the same object included.
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: 'photos', Key: 'large-parts' }), { expiresIn: 60 });
    const controller = new AbortController();
    const abandoned = await fetch(url, { signal: controller.signal });
    const reader = abandoned.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    controller.abort();
    await reader.read().catch(() => {});
    expect((await bytesOf('large-parts')).equals(whole)).toBe(true);
  });

  test('conditional reads: If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since', async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'conditional', Body: 'v1' }));
    const etag = put.ETag!;
    expect((await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'conditional', IfMatch: etag }))).ETag).toBe(etag);
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'conditional', IfMatch: '"0000"' })))).toEqual({
      code: 'PreconditionFailed',
      status: 412,
    });
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'conditional', IfNoneMatch: etag })))).toMatchObject({
      status: 304,
    });
    const future = new Date(Date.now() + 3_600_000);
    const past = new Date(Date.now() - 3_600_000);
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'conditional', IfModifiedSince: future })))).toMatchObject(
      { status: 304 },
    );
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'conditional', IfUnmodifiedSince: past })))).toEqual({
      code: 'PreconditionFailed',
      status: 412,
    });
    expect((await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'conditional', IfModifiedSince: past }))).ETag).toBe(etag);
  });

  test('copies an object, with its metadata or with replaced metadata', async () => {
    await s3.send(
      new PutObjectCommand({ Bucket: 'photos', Key: 'original', Body: 'copy me', ContentType: 'text/plain', Metadata: { a: '1' } }),
    );
    const copied = await s3.send(new CopyObjectCommand({ Bucket: 'photos', Key: 'copy', CopySource: 'photos/original' }));
    expect(copied.CopyObjectResult?.ETag).toBe(`"${md5('copy me')}"`);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'copy' }));
    expect(await got.Body!.transformToString()).toBe('copy me');
    expect(got.Metadata).toEqual({ a: '1' });
    await s3.send(
      new CopyObjectCommand({
        Bucket: 'photos',
        Key: 'copy',
        CopySource: 'photos/original',
        MetadataDirective: 'REPLACE',
        Metadata: { b: '2' },
        ContentType: 'text/x-copy',
      }),
    );
    const replaced = await s3.send(new HeadObjectCommand({ Bucket: 'photos', Key: 'copy' }));
    expect(replaced.Metadata).toEqual({ b: '2' });
    expect(replaced.ContentType).toBe('text/x-copy');
    expect(await s3ErrorOf(s3.send(new CopyObjectCommand({ Bucket: 'photos', Key: 'copy2', CopySource: 'photos/missing' })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });
  });

  test("a copy whose bytes do not change shares its source's file: nothing is written again, and each stands alone", async () => {
    const data = randomBytes(5 * MiB + 3);
    const put = await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'shared/source', Body: data, ChecksumAlgorithm: 'SHA256' }));
    const copied = await s3.send(new CopyObjectCommand({ Bucket: 'photos', Key: 'shared/copy', CopySource: 'photos/shared/source' }));
    expect(copied.CopyObjectResult?.ETag).toBe(`"${md5(data)}"`);
    expect(copied.CopyObjectResult?.ETag).toBe(put.ETag);
    const source = await blobFile('shared/source');
    const copy = await blobFile('shared/copy');
    expect(copy.path).not.toBe(source.path);
    // One file under two names.
    expect(copy.stat.ino).toBe(source.stat.ino);
    expect(copy.stat.nlink).toBe(2);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'shared/copy', ChecksumMode: 'ENABLED' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
    expect(got.ChecksumSHA256).toBe(put.ChecksumSHA256);

    // The source deleted, its name goes and the copy keeps the bytes.
    await s3.send(new DeleteObjectsCommand({ Bucket: 'photos', Delete: { Objects: [{ Key: 'shared/source' }] } }));
    await eventually(async () => (!existsSync(source.path) ? true : undefined), "the source's name removed");
    expect(statSync(copy.path).nlink).toBe(1);
    const after = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'shared/copy' }));
    expect(Buffer.from(await after.Body!.transformToByteArray()).equals(data)).toBe(true);

    // A copy that seals the bytes (SSE-S3 asked of a plain object) writes them anew, sealed.
    await s3.send(
      new CopyObjectCommand({ Bucket: 'photos', Key: 'shared/sealed', CopySource: 'photos/shared/copy', ServerSideEncryption: 'AES256' }),
    );
    const sealed = await blobFile('shared/sealed');
    expect(sealed.stat.ino).not.toBe(copy.stat.ino);
    expect(sealed.stat.size).toBeGreaterThan(data.length);
    const opened = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'shared/sealed' }));
    expect(Buffer.from(await opened.Body!.transformToByteArray()).equals(data)).toBe(true);
  });

  test('UploadPartCopy of a whole object shares its file; a range of it is written anew', async () => {
    const data = randomBytes(5 * MiB + 11);
    await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'shared/part-source', Body: data }));
    const source = await blobFile('shared/part-source');
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'photos', Key: 'shared/assembled' }));
    const whole = await s3.send(
      new UploadPartCopyCommand({
        Bucket: 'photos',
        Key: 'shared/assembled',
        UploadId,
        PartNumber: 1,
        CopySource: 'photos/shared/part-source',
      }),
    );
    expect(whole.CopyPartResult?.ETag).toBe(`"${md5(data)}"`);
    const ranged = await s3.send(
      new UploadPartCopyCommand({
        Bucket: 'photos',
        Key: 'shared/assembled',
        UploadId,
        PartNumber: 2,
        CopySource: 'photos/shared/part-source',
        CopySourceRange: 'bytes=0-1023',
      }),
    );
    expect(ranged.CopyPartResult?.ETag).toBe(`"${md5(data.subarray(0, 1024))}"`);
    const { rows } = await server.pool.query<{ part_number: number; blob: string }>(
      'SELECT part_number, blob FROM store_parts WHERE upload_id = $1 ORDER BY part_number',
      [UploadId],
    );
    const inodeOf = (blob: string) => statSync(path.join(server.dataDir, 'objects', 'blobs', blob.slice(0, 2), blob)).ino;
    expect(rows.map((row) => inodeOf(row.blob) === source.stat.ino)).toEqual([true, false]);
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'photos',
        Key: 'shared/assembled',
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: whole.CopyPartResult!.ETag },
            { PartNumber: 2, ETag: ranged.CopyPartResult!.ETag },
          ],
        },
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'shared/assembled' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat([data, data.subarray(0, 1024)]))).toBe(true);
  });

  test('PutObject If-None-Match: * writes only a new key; response-* parameters override the answer headers', async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'once', Body: 'first', IfNoneMatch: '*' }));
    expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'once', Body: 'second', IfNoneMatch: '*' })))).toEqual({
      code: 'PreconditionFailed',
      status: 412,
    });
    const got = await s3.send(
      new GetObjectCommand({
        Bucket: 'photos',
        Key: 'once',
        ResponseContentType: 'text/x-override',
        ResponseContentDisposition: 'attachment',
      }),
    );
    expect(await got.Body!.transformToString()).toBe('first');
    expect(got.ContentType).toBe('text/x-override');
    expect(got.ContentDisposition).toBe('attachment');
  });

  test('a missing key is NoSuchKey; a missing bucket NoSuchBucket', async () => {
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'photos', Key: 'nothing-here' })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'no-such-bucket', Key: 'x' })))).toEqual({
      code: 'NoSuchBucket',
      status: 404,
    });
  });
});

describe('buckets and listings', () => {
  test('ListBuckets, HeadBucket, GetBucketLocation and GetBucketVersioning see the bucket made through the API', async () => {
    const listed = await s3.send(new ListBucketsCommand({}));
    expect(listed.Buckets?.map((bucket) => bucket.Name)).toContain('photos');
    expect((await s3.send(new HeadBucketCommand({ Bucket: 'photos' }))).$metadata.httpStatusCode).toBe(200);
    expect((await s3.send(new GetBucketLocationCommand({ Bucket: 'photos' }))).LocationConstraint).toBeUndefined();
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: 'photos' }))).Status).toBeUndefined();
  });

  test('ListObjectsV2 with prefix, delimiter, max-keys, continuation and start-after', async () => {
    await createBucket(server, server.org, 'listing');
    const keys = ['a/1', 'a/2', 'a/b/3', 'b/1', 'c', 'd', 'e'];
    for (const name of keys) await s3.send(new PutObjectCommand({ Bucket: 'listing', Key: name, Body: name }));
    const top = await s3.send(new ListObjectsV2Command({ Bucket: 'listing', Delimiter: '/' }));
    expect(top.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/', 'b/']);
    expect(top.Contents?.map((o) => o.Key)).toEqual(['c', 'd', 'e']);
    const underA = await s3.send(new ListObjectsV2Command({ Bucket: 'listing', Prefix: 'a/', Delimiter: '/' }));
    expect(underA.Contents?.map((o) => o.Key)).toEqual(['a/1', 'a/2']);
    expect(underA.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/b/']);
    // Pages of two, walked with continuation tokens, give every key once, in order.
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: 'listing', MaxKeys: 2, ContinuationToken: token }));
      expect(page.KeyCount).toBeLessThanOrEqual(2);
      seen.push(...(page.Contents ?? []).map((o) => o.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    expect(seen).toEqual(keys);
    const after = await s3.send(new ListObjectsV2Command({ Bucket: 'listing', StartAfter: 'b/1' }));
    expect(after.Contents?.map((o) => o.Key)).toEqual(['c', 'd', 'e']);
  });

  test('ListObjects (V1) pages with markers and folds common prefixes', async () => {
    const first = await s3.send(new ListObjectsCommand({ Bucket: 'listing', MaxKeys: 3 }));
    expect(first.Contents?.map((o) => o.Key)).toEqual(['a/1', 'a/2', 'a/b/3']);
    expect(first.IsTruncated).toBe(true);
    const rest = await s3.send(new ListObjectsCommand({ Bucket: 'listing', Marker: 'a/b/3' }));
    expect(rest.Contents?.map((o) => o.Key)).toEqual(['b/1', 'c', 'd', 'e']);
    const folded = await s3.send(new ListObjectsCommand({ Bucket: 'listing', Delimiter: '/', MaxKeys: 1 }));
    expect(folded.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/']);
    const next = await s3.send(new ListObjectsCommand({ Bucket: 'listing', Delimiter: '/', Marker: folded.NextMarker }));
    expect(next.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['b/']);
    expect(next.Contents?.map((o) => o.Key)).toEqual(['c', 'd', 'e']);
  });

  test('DeleteObjects removes several keys in one request (the SDK sends its checksum)', async () => {
    await createBucket(server, server.org, 'bulk');
    for (const name of ['x', 'y', 'z']) await s3.send(new PutObjectCommand({ Bucket: 'bulk', Key: name, Body: name }));
    const deleted = await s3.send(new DeleteObjectsCommand({ Bucket: 'bulk', Delete: { Objects: [{ Key: 'x' }, { Key: 'y' }] } }));
    expect(deleted.Deleted?.map((d) => d.Key).sort()).toEqual(['x', 'y']);
    const left = await s3.send(new ListObjectsV2Command({ Bucket: 'bulk' }));
    expect(left.Contents?.map((o) => o.Key)).toEqual(['z']);
  });
});

describe('signatures', () => {
  test('presigned URLs: GET and PUT work with plain fetch, until they expire', async () => {
    const putUrl = await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'photos', Key: 'presigned.txt' }), { expiresIn: 60 });
    const uploaded = await fetch(putUrl, { method: 'PUT', body: 'sent without the SDK' });
    expect(uploaded.status, await uploaded.text()).toBe(200);
    const getUrl = await getSignedUrl(s3, new GetObjectCommand({ Bucket: 'photos', Key: 'presigned.txt' }), { expiresIn: 60 });
    const downloaded = await fetch(getUrl);
    expect(await downloaded.text()).toBe('sent without the SDK');
    // Signed an hour ago for a minute: expired.
    const expired = await getSignedUrl(s3, new GetObjectCommand({ Bucket: 'photos', Key: 'presigned.txt' }), {
      expiresIn: 60,
      signingDate: new Date(Date.now() - 3_600_000),
    });
    const refused = await fetch(expired);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('<Code>AccessDenied</Code>');
    // A tampered URL (another key) does not match its signature.
    const tampered = await fetch(getUrl.replace('presigned.txt', 'alphabet'));
    expect(tampered.status).toBe(403);
    expect(await tampered.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
  });

  test('a wrong secret is SignatureDoesNotMatch; an unknown key InvalidAccessKeyId; no signature AccessDenied', async () => {
    const wrongSecret = s3Client(server, { accessKeyId: key.accessKeyId, secretAccessKey: 'x'.repeat(40) });
    expect(await s3ErrorOf(wrongSecret.send(new ListBucketsCommand({})))).toEqual({ code: 'SignatureDoesNotMatch', status: 403 });
    const unknown = s3Client(server, { accessKeyId: 'AKCPNOSUCHKEY0000000', secretAccessKey: key.secretAccessKey });
    expect(await s3ErrorOf(unknown.send(new ListBucketsCommand({})))).toEqual({ code: 'InvalidAccessKeyId', status: 403 });
    const anonymous = await fetch(`${server.s3Url}/photos/alphabet`);
    expect(anonymous.status).toBe(403);
    expect(anonymous.headers.get('content-type')).toBe('application/xml');
    expect(await anonymous.text()).toContain('<Code>AccessDenied</Code>');
  });
});
