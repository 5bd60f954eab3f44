// Object and bucket tagging, end to end: PutObjectTagging and x-amz-tagging on PutObject,
// CreateMultipartUpload and CopyObject (its tagging directive), read back in key order (a TagSet
// is a set: how it was sent does not change how it reads),
// counted on GET and HEAD, within S3's limits; the object's bytes and metadata never change.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteBucketTaggingCommand,
  DeleteObjectTaggingCommand,
  GetBucketTaggingCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutBucketTaggingCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;
const BUCKET = 'tagged';

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  await createBucket(server, server.org, 'tagged-versions', { versioning: true });
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

const tagsOf = async (Key: string, Bucket = BUCKET, VersionId?: string) =>
  (await s3.send(new GetObjectTaggingCommand({ Bucket, Key, VersionId }))).TagSet?.map(({ Key: name, Value }) => [name, Value]);

describe('object tagging', () => {
  test('tags are set, read back in key order, counted on GET and HEAD, and removed; the object stays as it was', async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'plain', Body: 'the bytes', Metadata: { kept: 'yes' } }));
    expect(await tagsOf('plain')).toEqual([]);
    const tags = Array.from({ length: 10 }, (_, index) => ({ Key: `key-${9 - index}`, Value: `value ${index}` }));
    await s3.send(new PutObjectTaggingCommand({ Bucket: BUCKET, Key: 'plain', Tagging: { TagSet: tags } }));
    expect(await tagsOf('plain')).toEqual(tags.map(({ Key, Value }) => [Key, Value]).reverse());
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'plain' }));
    expect(head.$metadata.httpStatusCode).toBe(200);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'plain' }));
    expect(got.TagCount).toBe(10);
    expect(await got.Body!.transformToString()).toBe('the bytes');
    expect([got.ETag, got.Metadata]).toEqual([put.ETag, { kept: 'yes' }]);
    await s3.send(new DeleteObjectTaggingCommand({ Bucket: BUCKET, Key: 'plain' }));
    expect(await tagsOf('plain')).toEqual([]);
    expect((await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'plain' }))).TagCount).toBeUndefined();
  });

  test("S3's limits: more than 10 tags, a key over 128 or a value over 256 characters is InvalidTag, and the tags stay", async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'limits', Body: 'x', Tagging: 'before=yes' }));
    const tagSets = [
      Array.from({ length: 11 }, (_, index) => ({ Key: `k${index}`, Value: 'v' })),
      [{ Key: 'k'.repeat(129), Value: 'v' }],
      [{ Key: 'k', Value: 'v'.repeat(257) }],
      [
        { Key: 'same', Value: '1' },
        { Key: 'same', Value: '2' },
      ],
    ];
    for (const TagSet of tagSets) {
      expect(await s3ErrorOf(s3.send(new PutObjectTaggingCommand({ Bucket: BUCKET, Key: 'limits', Tagging: { TagSet } })))).toEqual({
        code: 'InvalidTag',
        status: 400,
      });
    }
    await s3.send(
      new PutObjectTaggingCommand({
        Bucket: BUCKET,
        Key: 'limits',
        Tagging: { TagSet: [{ Key: 'k'.repeat(128), Value: 'v'.repeat(256) }] },
      }),
    );
    expect(await tagsOf('limits')).toEqual([['k'.repeat(128), 'v'.repeat(256)]]);
  });

  test('x-amz-tagging on PutObject and CreateMultipartUpload tags what they make; an invalid one stores nothing', async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'on-put', Body: 'x', Tagging: 'team=web&cost%20centre=r%26d' }));
    expect(await tagsOf('on-put')).toEqual([
      ['cost centre', 'r&d'],
      ['team', 'web'],
    ]);
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'on-multipart', Tagging: 'Hello=World&foo=bar' }));
    const part = await s3.send(
      new UploadPartCommand({ Bucket: BUCKET, Key: 'on-multipart', UploadId: upload.UploadId, PartNumber: 1, Body: 'p' }),
    );
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key: 'on-multipart',
        UploadId: upload.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    expect(await tagsOf('on-multipart')).toEqual([
      ['Hello', 'World'],
      ['foo', 'bar'],
    ]);
    const tooMany = Array.from({ length: 11 }, (_, index) => `t${index}=v`).join('&');
    expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'never-stored', Body: 'x', Tagging: tooMany })))).toEqual({
      code: 'InvalidTag',
      status: 400,
    });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'never-stored' })))).toMatchObject({ status: 404 });
  });

  test("CopyObject keeps the source's tags, or takes the request's with the REPLACE directive", async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'copy-source', Body: 'x', Tagging: 'from=source' }));
    await s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'copy-kept', CopySource: `${BUCKET}/copy-source` }));
    expect(await tagsOf('copy-kept')).toEqual([['from', 'source']]);
    await s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: 'copy-replaced',
        CopySource: `${BUCKET}/copy-source`,
        TaggingDirective: 'REPLACE',
        Tagging: 'from=request',
      }),
    );
    expect(await tagsOf('copy-replaced')).toEqual([['from', 'request']]);
  });

  test('in a versioned bucket each version has its own tags; a missing key or version is NoSuchKey or NoSuchVersion', async () => {
    const first = await s3.send(new PutObjectCommand({ Bucket: 'tagged-versions', Key: 'doc', Body: '1', Tagging: 'version=first' }));
    const second = await s3.send(new PutObjectCommand({ Bucket: 'tagged-versions', Key: 'doc', Body: '2' }));
    const tagged = await s3.send(
      new PutObjectTaggingCommand({
        Bucket: 'tagged-versions',
        Key: 'doc',
        VersionId: first.VersionId,
        Tagging: { TagSet: [{ Key: 'old', Value: 'yes' }] },
      }),
    );
    expect(tagged.VersionId).toBe(first.VersionId);
    expect(await tagsOf('doc', 'tagged-versions', first.VersionId)).toEqual([['old', 'yes']]);
    expect(await tagsOf('doc', 'tagged-versions', second.VersionId)).toEqual([]);
    expect(await tagsOf('doc', 'tagged-versions')).toEqual([]);
    expect(await s3ErrorOf(s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: 'no-such-key' })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });
    expect(
      await s3ErrorOf(s3.send(new GetObjectTaggingCommand({ Bucket: 'tagged-versions', Key: 'doc', VersionId: 'no-such-version' }))),
    ).toEqual({ code: 'NoSuchVersion', status: 404 });
  });
});

describe('bucket tagging', () => {
  test('a bucket has no TagSet until one is put; it is read back in key order, and deleted', async () => {
    expect(await s3ErrorOf(s3.send(new GetBucketTaggingCommand({ Bucket: BUCKET })))).toEqual({ code: 'NoSuchTagSet', status: 404 });
    const TagSet = [
      { Key: 'project', Value: 'apollo' },
      { Key: 'env', Value: 'prod' },
    ];
    await s3.send(new PutBucketTaggingCommand({ Bucket: BUCKET, Tagging: { TagSet } }));
    expect((await s3.send(new GetBucketTaggingCommand({ Bucket: BUCKET }))).TagSet).toEqual([TagSet[1], TagSet[0]]);
    await s3.send(new DeleteBucketTaggingCommand({ Bucket: BUCKET }));
    expect(await s3ErrorOf(s3.send(new GetBucketTaggingCommand({ Bucket: BUCKET })))).toEqual({ code: 'NoSuchTagSet', status: 404 });
  });
});
