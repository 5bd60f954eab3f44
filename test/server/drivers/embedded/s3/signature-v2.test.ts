// Signatures older S3 tools still send (and S3 and Ceph's gateway take): Signature Version 2,
// HMAC-SHA1 in the Authorization header or a presigned URL, and Version 4 dated by the Date
// header rather than x-amz-date. A wrong signature, a missing or unusable date, a skewed clock or
// an expired URL are refused with S3's codes, and nothing is stored. The signers here follow the
// S3 documentation on their own.
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;
const BUCKET = 'signed-v2';

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

/** The string SigV2 signs: verb, Content-MD5, Content-Type, date, x-amz-* headers, resource with sub-resources. */
function stringToSign(method: string, resource: string, headers: Record<string, string>, date: string): string {
  const amz = Object.entries(headers)
    .filter(([name]) => name.startsWith('x-amz-'))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, value]) => `${name}:${value}\n`)
    .join('');
  return [method, headers['content-md5'] ?? '', headers['content-type'] ?? '', date, `${amz}${resource}`].join('\n');
}

const sign = (text: string, secret = key.secretAccessKey) => createHmac('sha1', secret).update(text).digest('base64');

async function v2Request(
  method: string,
  resource: string,
  options: { headers?: Record<string, string>; body?: string; date?: string; secret?: string } = {},
) {
  const date = options.date ?? new Date().toUTCString();
  const headers: Record<string, string> = { date, ...(options.headers ?? {}) };
  headers.authorization = `AWS ${key.accessKeyId}:${sign(stringToSign(method, resource, headers, date), options.secret)}`;
  const response = await fetch(`${server.s3Url}${resource}`, { method, headers, body: options.body });
  const text = await response.text();
  return { status: response.status, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1], text };
}

describe('Signature Version 2 in the Authorization header', () => {
  test('a signed PUT is stored and read back; a sub-resource is part of what is signed', async () => {
    const body = 'signed the old way';
    const md5 = createHash('md5').update(body).digest('base64');
    const put = await v2Request('PUT', `/${BUCKET}/old-tool.txt`, {
      headers: { 'content-md5': md5, 'content-type': 'text/plain', 'x-amz-meta-tool': 's3cmd' },
      body,
    });
    expect(put.status, put.text).toBe(200);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'old-tool.txt' }));
    expect([await got.Body!.transformToString(), got.Metadata]).toEqual([body, { tool: 's3cmd' }]);
    const tagging = await v2Request('GET', `/${BUCKET}/old-tool.txt?tagging`);
    expect(tagging.status, tagging.text).toBe(200);
    expect(tagging.text).toContain('<TagSet>');
  });

  test('a bucket-level request signed for `/bucket/`, as the SDKs sign it, is taken', async () => {
    const date = new Date().toUTCString();
    const authorization = `AWS ${key.accessKeyId}:${sign(stringToSign('GET', `/${BUCKET}/?versioning`, {}, date))}`;
    const response = await fetch(`${server.s3Url}/${BUCKET}?versioning`, { headers: { date, authorization } });
    expect(response.status, await response.text()).toBe(200);
  });

  test('a wrong secret is SignatureDoesNotMatch, and nothing is stored', async () => {
    const answer = await v2Request('PUT', `/${BUCKET}/forged.txt`, { body: 'x', secret: 'not the secret' });
    expect([answer.status, answer.code]).toEqual([403, 'SignatureDoesNotMatch']);
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'forged.txt' })))).toMatchObject({ status: 404 });
  });

  test('dates as S3 checks them: none or an unusable one is AccessDenied, one 15 minutes off is RequestTimeTooSkewed', async () => {
    for (const [date, code] of [
      ['Bad Date', 'AccessDenied'],
      ['Tue, 07 Jul 1950 21:53:04 GMT', 'AccessDenied'],
      ['Tue, 07 Jul 2010 21:53:04 GMT', 'RequestTimeTooSkewed'],
      ['Tue, 07 Jul 9999 21:53:04 GMT', 'RequestTimeTooSkewed'],
    ] as const) {
      const answer = await v2Request('PUT', `/${BUCKET}/dated.txt`, { body: 'x', date });
      expect([answer.status, answer.code], date).toEqual([403, code]);
    }
    const malformed = await fetch(`${server.s3Url}/${BUCKET}/dated.txt`, {
      method: 'PUT',
      headers: { authorization: 'AWS HAHAHA' },
      body: 'x',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('<Code>InvalidArgument</Code>');
  });

  test('a Content-MD5 that cannot be an MD5 is InvalidDigest before the body is read', async () => {
    const answer = await v2Request('PUT', `/${BUCKET}/digest.txt`, {
      headers: { 'content-md5': 'AWS HAHAHA', 'content-type': 'text/plain' },
      body: 'x',
    });
    expect([answer.status, answer.code]).toEqual([400, 'InvalidDigest']);
  });
});

describe('Signature Version 2 presigned URLs', () => {
  test('a presigned GET works until it expires', async () => {
    const resource = `/${BUCKET}/old-tool.txt`;
    const url = (expires: number) =>
      `${server.s3Url}${resource}?AWSAccessKeyId=${key.accessKeyId}&Expires=${expires}&Signature=${encodeURIComponent(
        sign(['GET', '', '', String(expires), resource].join('\n')),
      )}`;
    const valid = await fetch(url(Math.floor(Date.now() / 1000) + 60));
    expect([valid.status, await valid.text()]).toEqual([200, 'signed the old way']);
    const expired = await fetch(url(Math.floor(Date.now() / 1000) - 60));
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain('<Code>AccessDenied</Code>');
  });
});

describe('Signature Version 4 dated by the Date header', () => {
  test('a request without x-amz-date, its Date header signed, is served', async () => {
    const base = new URL(server.s3Url);
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const amzDate = now
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d{3}/, '');
    const day = amzDate.slice(0, 8);
    const body = 'dated by Date';
    const payload = createHash('sha256').update(body).digest('hex');
    const headers: Record<string, string> = { date: now.toUTCString(), host: base.host, 'x-amz-content-sha256': payload };
    const names = Object.keys(headers).sort();
    const path = `/${BUCKET}/dated-by-date.txt`;
    const canonical = ['PUT', path, '', ...names.map((name) => `${name}:${headers[name]}`), '', names.join(';'), payload].join('\n');
    const scope = `${day}/us-east-1/s3/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
    const hmac = (keyBytes: string | Buffer, data: string) => createHmac('sha256', keyBytes).update(data).digest();
    const signingKey = hmac(hmac(hmac(hmac(`AWS4${key.secretAccessKey}`, day), 'us-east-1'), 's3'), 'aws4_request');
    const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
    const response = await fetch(`${server.s3Url}${path}`, {
      method: 'PUT',
      body,
      headers: {
        date: headers.date!,
        'x-amz-content-sha256': payload,
        authorization: `AWS4-HMAC-SHA256 Credential=${key.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
      },
    });
    expect(response.status, await response.text()).toBe(200);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'dated-by-date.txt' }));
    expect(await got.Body!.transformToString()).toBe(body);
  });
});
