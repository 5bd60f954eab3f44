// Conditional writes as S3 has them: If-Match and If-None-Match on PutObject and
// CompleteMultipartUpload (`*` included), If-Match, x-amz-if-match-last-modified-time and
// x-amz-if-match-size on DeleteObject. The condition is checked where the write commits: of
// writers racing with If-None-Match: *, exactly one wins.
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;
const BUCKET = 'conditions';
const VERSIONED = 'conditions-versioned';

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  await createBucket(server, server.org, VERSIONED, { versioning: true });
  s3 = s3Client(server, await createAccessKey(server, server.org));
}, 120_000);
afterAll(async () => server?.close());

const failed = { code: 'PreconditionFailed', status: 412 };
const noSuchKey = { code: 'NoSuchKey', status: 404 };
const bodyOf = async (Key: string, Bucket = BUCKET) => (await s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToString();

describe('PutObject', () => {
  for (const Bucket of [BUCKET, VERSIONED]) {
    test(`If-None-Match and If-Match, \`*\` included, hold or refuse the write (${Bucket})`, async () => {
      const Key = 'guarded';
      const put = (Body: string, condition: { IfMatch?: string; IfNoneMatch?: string }) =>
        s3.send(new PutObjectCommand({ Bucket, Key, Body, ...condition }));
      // No object yet: If-Match of anything, `*` included, is NoSuchKey.
      expect(await s3ErrorOf(put('x', { IfMatch: '*' }))).toEqual(noSuchKey);
      expect(await s3ErrorOf(put('x', { IfMatch: '"0123456789abcdef0123456789abcdef"' }))).toEqual(noSuchKey);
      const first = await put('first', { IfNoneMatch: '*' });
      expect(await s3ErrorOf(put('second', { IfNoneMatch: '*' }))).toEqual(failed);
      expect(await s3ErrorOf(put('second', { IfNoneMatch: first.ETag }))).toEqual(failed);
      expect(await s3ErrorOf(put('second', { IfMatch: '"0123456789abcdef0123456789abcdef"' }))).toEqual(failed);
      expect(await bodyOf(Key, Bucket)).toBe('first');
      // If-Match: * holds for any current object.
      const second = await put('second', { IfMatch: '*' });
      await put('third', { IfMatch: second.ETag });
      expect(await bodyOf(Key, Bucket)).toBe('third');
      // Deleted (a delete marker in the versioned bucket): no current object again.
      await s3.send(new DeleteObjectCommand({ Bucket, Key }));
      expect(await s3ErrorOf(put('x', { IfMatch: '*' }))).toEqual(noSuchKey);
      await put('after delete', { IfNoneMatch: '*' });
    });
  }

  test('of writers racing with If-None-Match: *, exactly one wins and its bytes are what is stored', async () => {
    const attempts = await Promise.allSettled(
      Array.from({ length: 8 }, (_, index) =>
        s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'raced', Body: `writer ${index}`, IfNoneMatch: '*' })),
      ),
    );
    const won = attempts.flatMap((attempt, index) => (attempt.status === 'fulfilled' ? [index] : []));
    expect(won).toHaveLength(1);
    for (const attempt of attempts) {
      if (attempt.status === 'rejected') expect((attempt.reason as { Code?: string; name: string }).name).toBe('PreconditionFailed');
    }
    expect(await bodyOf('raced')).toBe(`writer ${won[0]}`);
  });
});

describe('CompleteMultipartUpload', () => {
  async function upload(Key: string, Body: string) {
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key }));
    const part = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key, UploadId: created.UploadId, PartNumber: 1, Body }));
    return (condition: { IfMatch?: string; IfNoneMatch?: string }) =>
      s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key,
          UploadId: created.UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
          ...condition,
        }),
      );
  }

  test('If-None-Match and If-Match hold or refuse the completion, and a refused one can complete later', async () => {
    expect(await s3ErrorOf((await upload('completed', 'a'))({ IfMatch: '*' }))).toEqual(noSuchKey);
    const first = await (await upload('completed', 'first'))({ IfNoneMatch: '*' });
    const refused = await upload('completed', 'second');
    expect(await s3ErrorOf(refused({ IfNoneMatch: '*' }))).toEqual(failed);
    expect(await s3ErrorOf(refused({ IfMatch: '"0123456789abcdef0123456789abcdef"' }))).toEqual(failed);
    expect(await bodyOf('completed')).toBe('first');
    // The refused upload is still there, and completes when its condition holds.
    await refused({ IfMatch: first.ETag });
    expect(await bodyOf('completed')).toBe('second');
  });
});

describe('DeleteObject', () => {
  test('If-Match refuses a delete of another ETag; nothing to delete is no refusal', async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'delete-me', Body: 'x' }));
    expect(
      await s3ErrorOf(
        s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'delete-me', IfMatch: '"0123456789abcdef0123456789abcdef"' })),
      ),
    ).toEqual(failed);
    await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'delete-me' }));
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'delete-me', IfMatch: put.ETag }));
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'delete-me' })))).toMatchObject({ status: 404 });
    const again = await s3.send(
      new DeleteObjectCommand({ Bucket: BUCKET, Key: 'delete-me', IfMatch: '"0123456789abcdef0123456789abcdef"' }),
    );
    expect(again.$metadata.httpStatusCode).toBe(204);
  });

  test('x-amz-if-match-last-modified-time and x-amz-if-match-size refuse a delete of another version', async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'sized', Body: 'four' }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sized' }));
    expect(
      await s3ErrorOf(
        s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'sized', IfMatchLastModifiedTime: new Date('2015-01-01T00:00:00Z') })),
      ),
    ).toEqual(failed);
    expect(await s3ErrorOf(s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'sized', IfMatchSize: 5 })))).toEqual(failed);
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'sized', IfMatchLastModifiedTime: head.LastModified, IfMatchSize: 4 }));
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sized' })))).toMatchObject({ status: 404 });
  });

  test('in a versioned bucket a delete marker matches only If-Match: *', async () => {
    await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: 'marked', Body: 'x' }));
    await s3.send(new DeleteObjectCommand({ Bucket: VERSIONED, Key: 'marked' }));
    expect(
      await s3ErrorOf(
        s3.send(new DeleteObjectCommand({ Bucket: VERSIONED, Key: 'marked', IfMatch: '"0123456789abcdef0123456789abcdef"' })),
      ),
    ).toEqual(failed);
    const star = await s3.send(new DeleteObjectCommand({ Bucket: VERSIONED, Key: 'marked', IfMatch: '*' }));
    expect(star.DeleteMarker).toBe(true);
  });
});
