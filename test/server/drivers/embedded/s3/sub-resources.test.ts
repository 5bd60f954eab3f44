// Every sub-resource of the S3 API reference, sent with every method to an object and to a
// bucket: the object's bytes and metadata stay as they were unless the operation is one that
// changes them, and what is not offered answers 501 NotImplemented instead of a silent 200.
// Every header that asks for a guarantee not given is refused, and nothing is stored.
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, signedRequest, startS3Server, type IssuedKey } from './support.ts';
import { BUCKET_SUB_RESOURCES, OBJECT_SUB_RESOURCES } from '../../../../../server/drivers/embedded/s3/sub-resources.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

const BUCKET = 'subjects';
const ORIGINAL = 'the original bytes of the object';
const METHODS = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'] as const;
/** A body any XML-taking sub-resource would parse (Tagging, AccessControlPolicy, Retention…). */
const XML_BODY = '<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>';

/**
 * Object requests that may answer 2xx: the operation is offered, and none of them changes the
 * object's bytes or metadata (tags and the owner-only ACL are not part of them). Retention and
 * legal hold are offered too, on buckets with object lock: on this bucket, which has none, they
 * answer S3's 400 InvalidRequest (test/server/drivers/embedded/s3/object-lock.test.ts).
 */
const OFFERED_ON_OBJECT = new Set([
  'POST uploads',
  'GET acl',
  'PUT acl',
  'GET attributes',
  'GET partNumber',
  'HEAD partNumber',
  'GET tagging',
  'PUT tagging',
  'DELETE tagging',
]);
/**
 * Bucket requests that may answer 2xx and write something: none of them touches an object
 * (deleting a configuration the bucket may not have is S3's 204).
 */
const OFFERED_ON_BUCKET = new Set([
  'PUT tagging',
  'DELETE tagging',
  'PUT acl',
  'PUT versioning',
  'PUT ownershipControls',
  'DELETE ownershipControls',
  'DELETE cors',
  'DELETE encryption',
  'DELETE lifecycle',
  'DELETE policy',
  'DELETE publicAccessBlock',
]);

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

async function putSubject(name: string): Promise<string> {
  const put = await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: name, Body: ORIGINAL, ContentType: 'text/plain', Metadata: { kept: 'yes' } }),
  );
  return put.ETag!;
}

async function expectUnchanged(name: string, etag: string, because: string): Promise<void> {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: name }));
  expect(await got.Body!.transformToString(), because).toBe(ORIGINAL);
  expect(got.ETag, because).toBe(etag);
  expect(got.ContentType, because).toBe('text/plain');
  expect(got.Metadata, because).toEqual({ kept: 'yes' });
}

describe('object sub-resources', () => {
  for (const subResource of OBJECT_SUB_RESOURCES) {
    test(`?${subResource} with every method leaves the object as it was`, async () => {
      const name = `object-${subResource}`;
      const etag = await putSubject(name);
      for (const method of METHODS) {
        const because = `${method} /${BUCKET}/${name}?${subResource}`;
        const answer = await signedRequest(server, key, {
          method,
          path: `/${BUCKET}/${name}`,
          query: { [subResource]: subResource === 'partNumber' ? '1' : subResource === 'uploadId' ? 'no-such-upload' : '' },
          body: method === 'PUT' || method === 'POST' ? XML_BODY : undefined,
        });
        if (OFFERED_ON_OBJECT.has(`${method} ${subResource}`)) expect(answer.status, `${because}: ${answer.text}`).toBeLessThan(500);
        else {
          expect(answer.status, `${because}: ${answer.text}`).toBeGreaterThanOrEqual(400);
          expect(answer.status, `${because}: ${answer.text}`).toBeLessThan(600);
          expect(answer.status, `${because}: ${answer.text}`).not.toBe(500);
        }
        await expectUnchanged(name, etag, because);
      }
    });
  }

  test('what is not offered is 501 NotImplemented, not a silent answer', async () => {
    const name = 'object-not-offered';
    const etag = await putSubject(name);
    for (const [method, subResource] of [
      ['POST', 'restore'],
      ['POST', 'select'],
      ['GET', 'torrent'],
      ['DELETE', 'retention'],
    ] as const) {
      const answer = await signedRequest(server, key, {
        method,
        path: `/${BUCKET}/${name}`,
        query: { [subResource]: '' },
        body: method === 'GET' || method === 'DELETE' ? undefined : XML_BODY,
      });
      expect([answer.status, answer.code], `${method} ?${subResource}: ${answer.text}`).toEqual([501, 'NotImplemented']);
    }
    await expectUnchanged(name, etag, 'after the refused sub-resources');
  });

  test('an ACL granting everyone, or another organization, is kept and read back, and changes nothing of the object', async () => {
    const name = 'object-acl-grants';
    const etag = await putSubject(name);
    const owner = server.org.orgId;
    const partner = randomUUID();
    const grant = (grantee: string, permission: string) => `<Grant>${grantee}<Permission>${permission}</Permission></Grant>`;
    const user = (id: string) =>
      `<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>${id}</ID></Grantee>`;
    const everyone =
      '<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee>';
    const policy = (grants: string) =>
      `<AccessControlPolicy><Owner><ID>${owner}</ID></Owner><AccessControlList>${grants}</AccessControlList></AccessControlPolicy>`;
    const published = await signedRequest(server, key, {
      method: 'PUT',
      path: `/${BUCKET}/${name}`,
      query: { acl: '' },
      body: policy(grant(user(owner), 'FULL_CONTROL') + grant(everyone, 'READ')),
    });
    expect(published.status, published.text).toBe(200);
    const acl = async () => (await signedRequest(server, key, { method: 'GET', path: `/${BUCKET}/${name}`, query: { acl: '' } })).text;
    expect(await acl()).toContain(`${everyone}<Permission>READ</Permission>`);
    const shared = await signedRequest(server, key, {
      method: 'PUT',
      path: `/${BUCKET}/${name}`,
      query: { acl: '' },
      body: policy(grant(user(owner), 'FULL_CONTROL') + grant(user(partner), 'READ')),
    });
    expect(shared.status, shared.text).toBe(200);
    const readBack = await acl();
    expect(readBack.match(/<Grant>/g)).toHaveLength(2);
    expect(readBack).toContain(`<ID>${owner}</ID><DisplayName>cloud-platform</DisplayName></Grantee><Permission>FULL_CONTROL</Permission>`);
    expect(readBack).toContain(`<ID>${partner}</ID><DisplayName>cloud-platform</DisplayName></Grantee><Permission>READ</Permission>`);
    await expectUnchanged(name, etag, 'after the ACL requests');
  });
});

describe('bucket sub-resources', () => {
  test('every sub-resource with every method leaves the bucket and its objects as they were', async () => {
    const name = 'inside-the-bucket';
    const etag = await putSubject(name);
    for (const subResource of BUCKET_SUB_RESOURCES) {
      for (const method of METHODS) {
        const because = `${method} /${BUCKET}?${subResource}`;
        const answer = await signedRequest(server, key, {
          method,
          path: `/${BUCKET}`,
          query: { [subResource]: '' },
          body: method === 'PUT' || method === 'POST' ? XML_BODY : undefined,
        });
        expect(answer.status, `${because}: ${answer.text}`).not.toBe(500);
        if ((method === 'PUT' || method === 'DELETE' || method === 'POST') && !OFFERED_ON_BUCKET.has(`${method} ${subResource}`))
          expect(answer.status, `${because}: ${answer.text}`).toBeGreaterThanOrEqual(400);
      }
      await expectUnchanged(name, etag, `after ?${subResource}`);
    }
    const buckets = await server.org.call('GET', '/s3/buckets');
    expect(buckets.body.items.find((bucket: { name: string }) => bucket.name === BUCKET)?.state).toBe('active');
  });
});

describe('headers that ask for a guarantee not given', () => {
  // SSE-S3 is given (test/server/drivers/embedded/s3/encryption.test.ts); SSE-C only over TLS (sse-c.test.ts);
  // object lock only on a bucket that has it (object-lock.test.ts).
  const refusals: Array<[string, Record<string, string>, string]> = [
    ['SSE-KMS', { 'x-amz-server-side-encryption': 'aws:kms', 'x-amz-server-side-encryption-aws-kms-key-id': 'k' }, 'NotImplemented'],
    ['an unknown encryption', { 'x-amz-server-side-encryption': 'AES128' }, 'InvalidArgument'],
    [
      'SSE-C over plain HTTP',
      {
        'x-amz-server-side-encryption-customer-algorithm': 'AES256',
        'x-amz-server-side-encryption-customer-key': Buffer.alloc(32, 7).toString('base64'),
        'x-amz-server-side-encryption-customer-key-md5': 'aGVsbG8=',
      },
      'InvalidRequest',
    ],
    [
      'a retention on a bucket without object lock',
      { 'x-amz-object-lock-mode': 'GOVERNANCE', 'x-amz-object-lock-retain-until-date': '2099-01-01T00:00:00Z' },
      'InvalidRequest',
    ],
    ['a legal hold on a bucket without object lock', { 'x-amz-object-lock-legal-hold': 'ON' }, 'InvalidRequest'],
    ['an ACL for a group of AWS services', { 'x-amz-acl': 'aws-exec-read' }, 'NotImplemented'],
    ['an ACL for the log delivery group', { 'x-amz-acl': 'log-delivery-write' }, 'NotImplemented'],
    ['a grant to an id that is no organization', { 'x-amz-grant-full-control': 'id="someone-else"' }, 'InvalidArgument'],
    ['another storage class', { 'x-amz-storage-class': 'GLACIER' }, 'InvalidStorageClass'],
    ['a canned ACL S3 does not have', { 'x-amz-acl': 'public-ready' }, 'InvalidArgument'],
    ['another owner', { 'x-amz-expected-bucket-owner': '111122223333' }, 'AccessDenied'],
  ];
  for (const [what, headers, code] of refusals) {
    test(`a PUT asking for ${what} is refused with ${code} and stores nothing`, async () => {
      const name = `guarantee-${what.replaceAll(' ', '-')}`;
      const answer = await signedRequest(server, key, { method: 'PUT', path: `/${BUCKET}/${name}`, headers, body: ORIGINAL });
      expect(answer.code, answer.text).toBe(code);
      expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: name })))).toMatchObject({ status: 404 });
    });
  }

  test('a private canned ACL, the owner as expected owner and STANDARD are what every object has: accepted', async () => {
    const answer = await signedRequest(server, key, {
      method: 'PUT',
      path: `/${BUCKET}/owner-only`,
      headers: { 'x-amz-acl': 'private', 'x-amz-storage-class': 'STANDARD', 'x-amz-expected-bucket-owner': server.org.orgId },
      body: ORIGINAL,
    });
    expect(answer.status, answer.text).toBe(200);
  });
});
