// Listing edges as S3 answers them (issue 28): max-keys=0 is an empty page that is not truncated,
// an empty continuation token starts at the beginning rather than being refused, owners are
// named as S3 names them, and RGW's allow-unordered extension is taken.
import { ListObjectVersionsCommand, ListObjectsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;
let key: IssuedKey;
const BUCKET = 'listed';
const KEYS = ['bar', 'baz', 'foo', 'quxx'];

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET, { versioning: true });
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
  for (const Key of KEYS) await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body: Key }));
}, 120_000);
afterAll(async () => server?.close());

describe('max-keys=0', () => {
  test('every listing answers an empty page that is not truncated', async () => {
    const v1 = await s3.send(new ListObjectsCommand({ Bucket: BUCKET, MaxKeys: 0 }));
    expect([v1.IsTruncated, v1.Contents ?? []]).toEqual([false, []]);
    const v2 = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, MaxKeys: 0 }));
    expect([v2.IsTruncated, v2.KeyCount, v2.Contents ?? [], v2.NextContinuationToken]).toEqual([false, 0, [], undefined]);
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, MaxKeys: 0 }));
    expect([versions.IsTruncated, versions.Versions ?? []]).toEqual([false, []]);
  });
});

describe('encoding-type=url', () => {
  test('V1 gives the prefix back as sent and encodes keys; V2 encodes the prefix too (as S3, and as the SDKs decode)', async () => {
    const v1 = await signedRequest(server, key, { method: 'GET', path: `/${BUCKET}`, query: { 'encoding-type': 'url', prefix: 'b a' } });
    expect(v1.text).toContain('<Prefix>b a</Prefix>');
    const v2 = await signedRequest(server, key, {
      method: 'GET',
      path: `/${BUCKET}`,
      query: { 'list-type': '2', 'encoding-type': 'url', prefix: 'b a' },
    });
    expect(v2.text).toContain('<Prefix>b%20a</Prefix>');
  });
});

describe('line ends', () => {
  test('a prefix holding a line end is given back with it as a character reference, which XML parsers keep', async () => {
    const listed = await signedRequest(server, key, { method: 'GET', path: `/${BUCKET}`, query: { prefix: '\n' } });
    expect(listed.text).toContain('<Prefix>&#10;</Prefix>');
  });
});

describe('continuation tokens', () => {
  test('an empty token lists from the beginning and is given back empty', async () => {
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: '' }));
    expect([listed.ContinuationToken, listed.IsTruncated, listed.Contents?.map((object) => object.Key)]).toEqual(['', false, KEYS]);
  });

  test('a token this endpoint gave continues where the page ended', async () => {
    const first = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, MaxKeys: 3 }));
    expect([first.IsTruncated, first.Contents?.map((object) => object.Key)]).toEqual([true, KEYS.slice(0, 3)]);
    const next = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: first.NextContinuationToken }));
    expect([next.IsTruncated, next.Contents?.map((object) => object.Key)]).toEqual([false, KEYS.slice(3)]);
  });
});

describe("RGW's read-stats", () => {
  test('HeadBucket with read-stats=true says what the bucket holds', async () => {
    const head = await signedRequest(server, key, { method: 'HEAD', path: `/${BUCKET}`, query: { 'read-stats': 'true' } });
    expect([head.headers.get('x-rgw-object-count'), head.headers.get('x-rgw-bytes-used')]).toEqual([
      String(KEYS.length),
      String(KEYS.join('').length),
    ]);
  });
});

describe('owners and order', () => {
  test("ListObjects (V1) names each object's owner; V2 only with fetch-owner=true", async () => {
    const owner = { ID: server.org.orgId, DisplayName: 'cloud-platform' };
    const v1 = await s3.send(new ListObjectsCommand({ Bucket: BUCKET }));
    expect(v1.Contents?.map((object) => object.Owner)).toEqual(KEYS.map(() => owner));
    const v2 = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    expect(v2.Contents?.map((object) => object.Owner)).toEqual(KEYS.map(() => undefined));
    const fetched = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, FetchOwner: true }));
    expect(fetched.Contents?.map((object) => object.Owner)).toEqual(KEYS.map(() => owner));
  });

  test("RGW's allow-unordered is taken (key order is an order), and refused with a delimiter, as RGW refuses it", async () => {
    const unordered = await signedRequest(server, key, { method: 'GET', path: `/${BUCKET}`, query: { 'allow-unordered': 'true' } });
    expect(unordered.status, unordered.text).toBe(200);
    const withDelimiter = await signedRequest(server, key, {
      method: 'GET',
      path: `/${BUCKET}`,
      query: { 'allow-unordered': 'true', delimiter: '/' },
    });
    expect([withDelimiter.status, withDelimiter.code]).toEqual([400, 'InvalidArgument']);
  });
});
