// Multipart as S3 tools rely on it: UploadPartCopy (whole and by range), GetObject and HeadObject
// by partNumber (PartsCount, the part's ETag and bytes), a repeated CompleteMultipartUpload
// answered as the first, a part sent twice keeping the copy that finished last, and a part list
// naming a part twice (as a client listing both answers does).
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectAttributesCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MiB, createAccessKey, createBucket, s3Client, s3ErrorOf, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;
const BUCKET = 'parts';

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

const md5 = (bytes: Buffer | string) => createHash('md5').update(bytes).digest('hex');
const quoted = (etag: string) => `"${etag}"`;
const bodyOf = async (Key: string, extra: { PartNumber?: number } = {}) =>
  Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key, ...extra }))).Body!.transformToByteArray());

async function multipart(Key: string, parts: Buffer[]) {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key }));
  const listed: Array<{ PartNumber: number; ETag: string }> = [];
  for (const [index, Body] of parts.entries()) {
    const part = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: index + 1, Body }));
    listed.push({ PartNumber: index + 1, ETag: part.ETag! });
  }
  const complete = () => s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key, UploadId, MultipartUpload: { Parts: listed } }));
  return { UploadId: UploadId!, listed, complete };
}

describe('GetObject and HeadObject by partNumber', () => {
  test("each part of a multipart object is read back with its bytes, its ETag and the object's PartsCount", async () => {
    const parts = [Buffer.alloc(5 * MiB, 'a'), Buffer.alloc(5 * MiB, 'b'), Buffer.from('the last, short part')];
    const upload = await multipart('in-parts', parts);
    // Not yet completed: there is no object to read a part of.
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'in-parts', PartNumber: 1 })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });
    await upload.complete();
    for (const [index, part] of parts.entries()) {
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'in-parts', PartNumber: index + 1 }));
      expect([head.PartsCount, head.ETag, head.ContentLength]).toEqual([3, quoted(md5(part)), part.length]);
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'in-parts', PartNumber: index + 1 }));
      expect([got.PartsCount, got.ETag, got.ContentLength]).toEqual([3, quoted(md5(part)), part.length]);
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(part)).toBe(true);
    }
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'in-parts', PartNumber: 4 })))).toEqual({
      code: 'InvalidPart',
      status: 400,
    });
  });

  test('an object uploaded whole is its own part 1; any other part number is InvalidPart', async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'whole', Body: 'body' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'whole', PartNumber: 1 }));
    expect([got.ETag, got.PartsCount, await got.Body!.transformToString()]).toEqual([put.ETag, undefined, 'body']);
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'whole', PartNumber: 2 })))).toEqual({
      code: 'InvalidPart',
      status: 400,
    });
  });
});

describe('GetObjectAttributes', () => {
  test("answers the size, ETag, checksum and storage class without the bytes, and a multipart object's parts a page at a time", async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'attributed', Body: 'foo', ChecksumAlgorithm: 'SHA256' }));
    const whole = await s3.send(
      new GetObjectAttributesCommand({
        Bucket: BUCKET,
        Key: 'attributed',
        ObjectAttributes: ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'],
      }),
    );
    expect([whole.ETag, whole.ObjectSize, whole.StorageClass, whole.Checksum?.ChecksumSHA256, whole.ObjectParts]).toEqual([
      put.ETag!.replaceAll('"', ''),
      3,
      'STANDARD',
      put.ChecksumSHA256,
      undefined,
    ]);
    const parts = [Buffer.alloc(5 * MiB, 'a'), Buffer.alloc(5 * MiB, 'b'), Buffer.from('c')];
    const completed = await (await multipart('attributed-parts', parts)).complete();
    const page = await s3.send(
      new GetObjectAttributesCommand({
        Bucket: BUCKET,
        Key: 'attributed-parts',
        ObjectAttributes: ['ETag', 'ObjectParts', 'ObjectSize'],
        MaxParts: 1,
        PartNumberMarker: '1',
      }),
    );
    expect(page.ETag).toBe(completed.ETag!.replaceAll('"', ''));
    expect(page.ObjectSize).toBe(10 * MiB + 1);
    expect(page.ObjectParts).toMatchObject({
      TotalPartsCount: 3,
      PartNumberMarker: '1',
      NextPartNumberMarker: '2',
      MaxParts: 1,
      IsTruncated: true,
    });
    expect(page.ObjectParts?.Parts).toMatchObject([{ PartNumber: 2, Size: 5 * MiB }]);
    expect(
      await s3ErrorOf(s3.send(new GetObjectAttributesCommand({ Bucket: BUCKET, Key: 'no-such-key', ObjectAttributes: ['ETag'] }))),
    ).toEqual({ code: 'NoSuchKey', status: 404 });
  });
});

describe('UploadPartCopy', () => {
  test('parts copied from objects, whole and by byte range, make the object; a range past the source is InvalidRange', async () => {
    const source = Buffer.alloc(6 * MiB);
    for (let at = 0; at < source.length; at++) source[at] = at % 251;
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'copy-source', Body: source }));
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'copied' }));
    const whole = await s3.send(
      new UploadPartCopyCommand({ Bucket: BUCKET, Key: 'copied', UploadId, PartNumber: 1, CopySource: `${BUCKET}/copy-source` }),
    );
    expect(whole.CopyPartResult?.ETag).toBe(quoted(md5(source)));
    const range = await s3.send(
      new UploadPartCopyCommand({
        Bucket: BUCKET,
        Key: 'copied',
        UploadId,
        PartNumber: 2,
        CopySource: `${BUCKET}/copy-source`,
        CopySourceRange: 'bytes=10-1033',
      }),
    );
    expect(range.CopyPartResult?.ETag).toBe(quoted(md5(source.subarray(10, 1034))));
    expect(
      await s3ErrorOf(
        s3.send(
          new UploadPartCopyCommand({
            Bucket: BUCKET,
            Key: 'copied',
            UploadId,
            PartNumber: 3,
            CopySource: `${BUCKET}/copy-source`,
            CopySourceRange: `bytes=0-${source.length}`,
          }),
        ),
      ),
    ).toEqual({ code: 'InvalidRange', status: 416 });
    expect(
      await s3ErrorOf(
        s3.send(
          new UploadPartCopyCommand({
            Bucket: BUCKET,
            Key: 'copied',
            UploadId,
            PartNumber: 3,
            CopySource: `${BUCKET}/copy-source`,
            CopySourceRange: '0-2',
          }),
        ),
      ),
    ).toEqual({ code: 'InvalidArgument', status: 400 });
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key: 'copied',
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: whole.CopyPartResult!.ETag },
            { PartNumber: 2, ETag: range.CopyPartResult!.ETag },
          ],
        },
      }),
    );
    expect((await bodyOf('copied')).equals(Buffer.concat([source, source.subarray(10, 1034)]))).toBe(true);
  });
});

describe('CompleteMultipartUpload', () => {
  test('a repeated completion (a client retrying after a lost answer) is answered as the first, not NoSuchUpload', async () => {
    const upload = await multipart('completed-twice', [Buffer.from('only part')]);
    const first = await upload.complete();
    const again = await upload.complete();
    expect([again.ETag, again.Key, again.Bucket]).toEqual([first.ETag, first.Key, first.Bucket]);
    expect((await bodyOf('completed-twice')).toString()).toBe('only part');
    // An upload that never was is still NoSuchUpload.
    const unknown = await signedRequest(server, key, {
      method: 'POST',
      path: `/${BUCKET}/completed-twice`,
      query: { uploadId: 'no-such-upload' },
      body: '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>',
    });
    expect([unknown.status, unknown.code]).toEqual([404, 'NoSuchUpload']);
  });

  test("the whole object's checksum given with the completion is checked against the one made of the parts", async () => {
    const Key = 'checksummed';
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key, ChecksumAlgorithm: 'SHA256' }));
    const part = await s3.send(
      new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: 1, Body: 'A'.repeat(1024), ChecksumAlgorithm: 'SHA256' }),
    );
    const complete = (ChecksumSHA256: string) =>
      s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key,
          UploadId,
          ChecksumSHA256,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag, ChecksumSHA256: part.ChecksumSHA256 }] },
        }),
      );
    expect(await s3ErrorOf(complete('bad'))).toEqual({ code: 'BadDigest', status: 400 });
    const composite = `${createHash('sha256').update(Buffer.from(part.ChecksumSHA256!, 'base64')).digest('base64')}-1`;
    const done = await complete(composite);
    expect(done.ChecksumSHA256).toBe(composite);
  });

  test('a part sent twice keeps the copy that finished last; listing both answers of the part completes with it', async () => {
    const Key = 'sent-twice';
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key }));
    const earlier = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: 1, Body: 'AAAAAAAA' }));
    const later = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: 1, Body: 'BBBBBBBB' }));
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: earlier.ETag },
            { PartNumber: 1, ETag: later.ETag },
          ],
        },
      }),
    );
    expect((await bodyOf(Key)).toString()).toBe('BBBBBBBB');
  });

  test('uploads of one part at once: the upload holds one of them, whole, and completes with it', async () => {
    const Key = 'raced-part';
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key }));
    const bodies = ['A', 'B', 'C', 'D'].map((letter) => Buffer.alloc(MiB, letter));
    const answered = await Promise.all(
      bodies.map(async (Body) => (await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: 1, Body }))).ETag!),
    );
    const listed = await s3.send(new ListPartsCommand({ Bucket: BUCKET, Key, UploadId }));
    expect(listed.Parts).toHaveLength(1);
    const kept = listed.Parts![0]!.ETag!;
    expect(answered).toContain(kept);
    await s3.send(
      new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: kept }] } }),
    );
    const stored = await bodyOf(Key);
    expect(quoted(md5(stored))).toBe(kept);
    expect(bodies.some((body) => body.equals(stored))).toBe(true);
  });
});
