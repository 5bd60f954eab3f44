// CORS on the embedded endpoint: a bucket's rules are set, read and deleted through S3; a
// browser's preflight (OPTIONS, no credentials) is answered from them as S3 answers it; and a
// real request from an allowed origin gets the Access-Control-* headers, on errors too.
import { DeleteBucketCorsCommand, GetBucketCorsCommand, PutBucketCorsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

const BUCKET = 'web-assets';

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  await createBucket(server, server.org, 'no-cors');
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

const RULES = [
  {
    ID: 'app',
    AllowedOrigins: ['https://app.example.com', 'https://*.preview.example.com'],
    AllowedMethods: ['GET', 'PUT'],
    AllowedHeaders: ['content-type', 'x-amz-*'],
    ExposeHeaders: ['ETag'],
    MaxAgeSeconds: 600,
  },
  { ID: 'anyone-reads', AllowedOrigins: ['*'], AllowedMethods: ['GET'] },
];

/** A preflight as a browser sends it: no credentials at all. */
const preflight = (path: string, headers: Record<string, string>) => fetch(`${server.s3Url}${path}`, { method: 'OPTIONS', headers });

describe('the CORS configuration', () => {
  test('is set, given back and deleted through S3', async () => {
    expect(await s3ErrorOf(s3.send(new GetBucketCorsCommand({ Bucket: BUCKET })))).toEqual({
      code: 'NoSuchCORSConfiguration',
      status: 404,
    });
    await s3.send(new PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: RULES } }));
    const got = await s3.send(new GetBucketCorsCommand({ Bucket: BUCKET }));
    expect(got.CORSRules).toEqual(
      RULES.map((rule) => ({ AllowedHeaders: undefined, ExposeHeaders: undefined, MaxAgeSeconds: undefined, ...rule })),
    );
    await s3.send(new DeleteBucketCorsCommand({ Bucket: BUCKET }));
    expect(await s3ErrorOf(s3.send(new GetBucketCorsCommand({ Bucket: BUCKET })))).toMatchObject({ status: 404 });
  });

  test('a method S3 does not know, or two wildcards in an origin, is InvalidRequest', async () => {
    for (const rule of [
      { AllowedOrigins: ['*'], AllowedMethods: ['PATCH'] },
      { AllowedOrigins: ['https://*.*.example.com'], AllowedMethods: ['GET'] },
    ]) {
      expect(
        await s3ErrorOf(s3.send(new PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: [rule] } }))),
        JSON.stringify(rule),
      ).toEqual({ code: 'InvalidRequest', status: 400 });
    }
  });
});

describe('preflight requests', () => {
  beforeAll(async () => {
    await s3.send(new PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: RULES } }));
  });

  test('an allowed origin, method and headers are answered with the rule, without credentials', async () => {
    const answer = await preflight(`/${BUCKET}/upload/photo.jpg`, {
      Origin: 'https://pr-42.preview.example.com',
      'Access-Control-Request-Method': 'PUT',
      'Access-Control-Request-Headers': 'Content-Type, x-amz-meta-album',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe('https://pr-42.preview.example.com');
    expect(answer.headers.get('access-control-allow-methods')).toBe('GET, PUT');
    expect(answer.headers.get('access-control-allow-headers')).toBe('Content-Type, x-amz-meta-album');
    expect(answer.headers.get('access-control-expose-headers')).toBe('ETag');
    expect(answer.headers.get('access-control-max-age')).toBe('600');
    expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
  });

  test('a rule for any origin answers *; what no rule allows is 403 AccessForbidden with no CORS headers', async () => {
    const anyone = await preflight(`/${BUCKET}/x`, { Origin: 'https://elsewhere.example.org', 'Access-Control-Request-Method': 'GET' });
    expect([anyone.status, anyone.headers.get('access-control-allow-origin')]).toEqual([200, '*']);
    const refusedPreflights: Array<Record<string, string>> = [
      { Origin: 'https://elsewhere.example.org', 'Access-Control-Request-Method': 'PUT' },
      { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'DELETE' },
      { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'authorization-x' },
    ];
    for (const headers of refusedPreflights) {
      const refused = await preflight(`/${BUCKET}/x`, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(await refused.text()).toContain('<Code>AccessForbidden</Code>');
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  test('without Origin or a requested method it is 400; a bucket without rules is 403; no bucket is 404', async () => {
    expect((await preflight(`/${BUCKET}/x`, {})).status).toBe(400);
    expect((await preflight(`/${BUCKET}/x`, { Origin: 'https://app.example.com' })).status).toBe(400);
    expect((await preflight('/no-cors/x', { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' })).status).toBe(403);
    expect(
      (await preflight('/no-such-bucket/x', { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' })).status,
    ).toBe(404);
  });

  test('a name two organizations hold is refused: a preflight carries nothing that says whose bucket it means', async () => {
    const other = await server.createOrg('Namesake Inc');
    await createBucket(server, other, BUCKET);
    const refused = await preflight(`/${BUCKET}/x`, { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' });
    expect(refused.status).toBe(403);
    const otherBuckets = await other.call('GET', '/s3/buckets');
    const id = otherBuckets.body.items.find((bucket: { name: string }) => bucket.name === BUCKET).id;
    const deleted = await other.call('DELETE', `/s3/buckets/${id}`);
    await server.waitForOperation(other, deleted.body.operation.id);
    const again = await preflight(`/${BUCKET}/x`, { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' });
    expect(again.status).toBe(200);
  });
});

describe('real requests', () => {
  test('from an allowed origin get the headers, on an error answer too; from another origin, none', async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'logo.svg', Body: '<svg/>' }));
    const allowed = await signedRequest(server, key, {
      method: 'GET',
      path: `/${BUCKET}/logo.svg`,
      headers: { origin: 'https://app.example.com' },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(allowed.headers.get('access-control-expose-headers')).toBe('ETag');
    const missing = await signedRequest(server, key, {
      method: 'GET',
      path: `/${BUCKET}/nothing.svg`,
      headers: { origin: 'https://app.example.com' },
    });
    expect([missing.status, missing.headers.get('access-control-allow-origin')]).toEqual([404, 'https://app.example.com']);
    // DELETE is in no rule: the browser is not given the answer.
    const deleteFromPage = await signedRequest(server, key, {
      method: 'DELETE',
      path: `/${BUCKET}/logo.svg`,
      headers: { origin: 'https://app.example.com' },
    });
    expect(deleteFromPage.headers.get('access-control-allow-origin')).toBeNull();
  });
});
