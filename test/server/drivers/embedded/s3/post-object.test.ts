// Browser uploads (POST /bucket, multipart/form-data) on the embedded endpoint: a form signed
// with SigV4 (or the older HMAC-SHA1) over its policy stores its file under the key it names
// (${filename} filled in), with its metadata and encryption, and answers as the form asks
// (204, 201 with XML, or a 303 redirect). What the policy does not allow, an expired or wrongly
// signed policy and a file outside its length range are refused, and nothing is stored.
import { GetObjectCommand, GetObjectTaggingCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

const BUCKET = 'uploads';

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, BUCKET);
  await createBucket(server, server.org, 'elsewhere');
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

type Condition = Record<string, string> | Array<string | number>;

const hmac = (secret: string | Buffer, data: string) => createHmac('sha256', secret).update(data).digest();

/** The fields of a form signed with SigV4 over its policy, as a browser page's server would sign it. */
function signedFields(conditions: Condition[], options: { expiresInMs?: number; secret?: string; bucket?: string } = {}) {
  const now = new Date();
  const day = now.toISOString().slice(0, 10).replaceAll('-', '');
  const amzDate = `${day}T${now.toISOString().slice(11, 19).replaceAll(':', '')}Z`;
  const credential = `${key.accessKeyId}/${day}/us-east-1/s3/aws4_request`;
  const policy = Buffer.from(
    JSON.stringify({
      expiration: new Date(now.getTime() + (options.expiresInMs ?? 600_000)).toISOString(),
      conditions: [
        { bucket: options.bucket ?? BUCKET },
        { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' },
        { 'x-amz-credential': credential },
        { 'x-amz-date': amzDate },
        ...conditions,
      ],
    }),
  ).toString('base64');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${options.secret ?? key.secretAccessKey}`, day), 'us-east-1'), 's3'), 'aws4_request');
  return {
    'x-amz-algorithm': 'AWS4-HMAC-SHA256',
    'x-amz-credential': credential,
    'x-amz-date': amzDate,
    policy,
    'x-amz-signature': createHmac('sha256', signingKey).update(policy).digest('hex'),
  };
}

/** Posts a form (its fields, then the file last, as browsers send it). */
async function post(
  fields: Record<string, string>,
  file: { name: string; body: string | Buffer },
  options: { fieldsAsFiles?: boolean } = {},
) {
  const form = new FormData();
  // Some clients (Python's requests, given files=) send every field as a file part with a filename.
  for (const [name, value] of Object.entries(fields)) {
    if (options.fieldsAsFiles) form.append(name, new Blob([value]), name);
    else form.append(name, value);
  }
  form.append('file', new Blob([typeof file.body === 'string' ? file.body : new Uint8Array(file.body)]), file.name);
  const response = await fetch(`${server.s3Url}/${BUCKET}`, { method: 'POST', body: form, redirect: 'manual' });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] };
}

const stored = async (name: string) => {
  const failure = await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: name }))).catch(() => undefined);
  return failure === undefined;
};

const PHOTO_POLICY: Condition[] = [
  ['starts-with', '$key', 'photos/'],
  ['starts-with', '$Content-Type', 'image/'],
  ['eq', '$x-amz-meta-album', 'holidays'],
  ['content-length-range', 1, 1024],
];

describe('a signed form', () => {
  test('stores its file under its key, ${filename} filled in, with its type and metadata; 204 by default', async () => {
    const answer = await post(
      { key: 'photos/${filename}', 'Content-Type': 'image/png', 'x-amz-meta-album': 'holidays', ...signedFields(PHOTO_POLICY) },
      { name: 'beach.png', body: 'png bytes' },
    );
    expect(answer.status, answer.text).toBe(204);
    expect(answer.headers.get('etag')).toBe(`"${createHash('md5').update('png bytes').digest('hex')}"`);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'photos/beach.png' }));
    expect(await got.Body!.transformToString()).toBe('png bytes');
    expect(got.ContentType).toBe('image/png');
    expect(got.Metadata).toEqual({ album: 'holidays' });
    expect(got.ETag).toBe(answer.headers.get('etag'));
  });

  test('success_action_status 201 answers the XML; success_action_redirect a 303 naming the object', async () => {
    const created = await post(
      {
        key: 'photos/201.png',
        'Content-Type': 'image/png',
        'x-amz-meta-album': 'holidays',
        success_action_status: '201',
        ...signedFields([...PHOTO_POLICY, { success_action_status: '201' }]),
      },
      { name: 'x.png', body: 'two oh one' },
    );
    expect(created.status).toBe(201);
    expect(created.text).toContain('<Key>photos/201.png</Key>');
    expect(created.text).toContain(`<Bucket>${BUCKET}</Bucket>`);

    const back = 'https://app.example.com/uploaded';
    const redirected = await post(
      {
        key: 'photos/303.png',
        'Content-Type': 'image/png',
        'x-amz-meta-album': 'holidays',
        success_action_redirect: back,
        ...signedFields([...PHOTO_POLICY, ['eq', '$success_action_redirect', back]]),
      },
      { name: 'x.png', body: 'see other' },
    );
    expect(redirected.status).toBe(303);
    const location = new URL(redirected.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(back);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      bucket: BUCKET,
      key: 'photos/303.png',
      etag: redirected.headers.get('etag'),
    });
  });

  test('fields sent as file parts are fields all the same; a condition on a field left out holds for ""', async () => {
    const answer = await post(
      {
        key: 'photos/parts.png',
        'Content-Type': 'image/png',
        'x-amz-meta-album': 'holidays',
        ...signedFields([...PHOTO_POLICY, ['starts-with', '$x-amz-meta-note', '']]),
      },
      { name: 'parts.png', body: 'as parts' },
      { fieldsAsFiles: true },
    );
    expect(answer.status, answer.text).toBe(204);
    expect(await stored('photos/parts.png')).toBe(true);
  });

  test('the older HMAC-SHA1 signature (AWSAccessKeyId, signature) is taken too', async () => {
    const policy = Buffer.from(
      JSON.stringify({
        expiration: new Date(Date.now() + 600_000).toISOString(),
        conditions: [{ bucket: BUCKET }, ['starts-with', '$key', 'v2/']],
      }),
    ).toString('base64');
    const signature = createHmac('sha1', key.secretAccessKey).update(policy).digest('base64');
    const answer = await post({ key: 'v2/old.txt', AWSAccessKeyId: key.accessKeyId, policy, signature }, { name: 'old.txt', body: 'v2' });
    expect(answer.status, answer.text).toBe(204);
    expect(await stored('v2/old.txt')).toBe(true);
  });

  test('asks for SSE-S3 with a field, which the policy names like any other', async () => {
    const answer = await post(
      {
        key: 'sealed/form.txt',
        'x-amz-server-side-encryption': 'AES256',
        ...signedFields([['starts-with', '$key', 'sealed/'], { 'x-amz-server-side-encryption': 'AES256' }]),
      },
      { name: 'form.txt', body: 'sealed through a form' },
    );
    expect(answer.status, answer.text).toBe(204);
    expect(answer.headers.get('x-amz-server-side-encryption')).toBe('AES256');
    expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sealed/form.txt' }))).ServerSideEncryption).toBe('AES256');
  });

  test('gives the object the tags of its tagging field (a Tagging document); a malformed one stores nothing', async () => {
    const tagging = '<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet></Tagging>';
    const answer = await post(
      {
        key: 'tagged/form.txt',
        tagging,
        ...signedFields([
          ['starts-with', '$key', 'tagged/'],
          ['starts-with', '$tagging', ''],
        ]),
      },
      { name: 'form.txt', body: 'tagged through a form' },
    );
    expect(answer.status, answer.text).toBe(204);
    const tags = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: 'tagged/form.txt' }));
    expect(tags.TagSet).toEqual([{ Key: 'team', Value: 'web' }]);
    // The refusal may come while the form is still being sent (the server answers before reading
    // the file), which the client can see as a reset: either way nothing is stored.
    const malformed = await post(
      {
        key: 'tagged/bad.txt',
        tagging: '<Tagging>',
        ...signedFields([
          ['starts-with', '$key', 'tagged/'],
          ['starts-with', '$tagging', ''],
        ]),
      },
      { name: 'bad.txt', body: 'not stored' },
    ).catch(() => undefined);
    if (malformed) expect(malformed.status, malformed.text).toBe(400);
    expect(await stored('tagged/bad.txt')).toBe(false);
  });
});

describe('what the policy does not allow is refused, and nothing is stored', () => {
  const base = { 'Content-Type': 'image/png', 'x-amz-meta-album': 'holidays' };
  const cases: Array<[string, () => Record<string, string>, number, string]> = [
    ['a key outside the prefix', () => ({ key: 'other/a.png', ...base, ...signedFields(PHOTO_POLICY) }), 403, 'AccessDenied'],
    [
      'a field no condition names',
      () => ({ key: 'photos/b.png', ...base, 'x-amz-meta-extra': 'x', ...signedFields(PHOTO_POLICY) }),
      403,
      'AccessDenied',
    ],
    [
      'a field a condition names, missing',
      () => ({ key: 'photos/c.png', 'Content-Type': 'image/png', ...signedFields(PHOTO_POLICY) }),
      403,
      'AccessDenied',
    ],
    [
      'an expired policy',
      () => ({ key: 'photos/d.png', ...base, ...signedFields(PHOTO_POLICY, { expiresInMs: -1000 }) }),
      403,
      'AccessDenied',
    ],
    [
      "another bucket's policy",
      () => ({ key: 'photos/e.png', ...base, ...signedFields(PHOTO_POLICY, { bucket: 'elsewhere' }) }),
      403,
      'AccessDenied',
    ],
    [
      'a wrong signature',
      () => ({ key: 'photos/f.png', ...base, ...signedFields(PHOTO_POLICY, { secret: 'not the secret' }) }),
      403,
      'SignatureDoesNotMatch',
    ],
    // Unsigned, the form is anonymous: this bucket lets no one but its organization write.
    ['no signature at all', () => ({ key: 'photos/g.png', ...base }), 403, 'AccessDenied'],
    [
      'an ACL for a group of AWS services',
      () => ({ key: 'photos/h.png', ...base, acl: 'aws-exec-read', ...signedFields([...PHOTO_POLICY, { acl: 'aws-exec-read' }]) }),
      501,
      'NotImplemented',
    ],
  ];
  for (const [what, fields, status, code] of cases) {
    test(what, async () => {
      const form = fields();
      const answer = await post(form, { name: 'x.png', body: 'bytes' });
      expect([answer.status, answer.code], answer.text).toEqual([status, code]);
      expect(await stored(form.key!)).toBe(false);
    });
  }

  test('a file outside content-length-range is EntityTooLarge or EntityTooSmall', async () => {
    const large = await post(
      { key: 'photos/large.png', ...base, ...signedFields(PHOTO_POLICY) },
      { name: 'l.png', body: Buffer.alloc(2000, 1) },
    );
    expect([large.status, large.code]).toEqual([400, 'EntityTooLarge']);
    const small = await post({ key: 'photos/small.png', ...base, ...signedFields(PHOTO_POLICY) }, { name: 's.png', body: '' });
    expect([small.status, small.code]).toEqual([400, 'EntityTooSmall']);
    expect(await stored('photos/large.png')).toBe(false);
    expect(await stored('photos/small.png')).toBe(false);
  });

  test('a policy without conditions or with a malformed expiration is InvalidPolicyDocument', async () => {
    for (const document of [
      { expiration: new Date(Date.now() + 60_000).toISOString() },
      { expiration: '2099-01-01 00:00:00', conditions: [] },
    ]) {
      const policy = Buffer.from(JSON.stringify(document)).toString('base64');
      const signature = createHmac('sha1', key.secretAccessKey).update(policy).digest('base64');
      const answer = await post({ key: 'bad-policy.txt', AWSAccessKeyId: key.accessKeyId, policy, signature }, { name: 'x', body: 'x' });
      expect([answer.status, answer.code], JSON.stringify(document)).toEqual([400, 'InvalidPolicyDocument']);
    }
    expect(await stored('bad-policy.txt')).toBe(false);
  });
});
