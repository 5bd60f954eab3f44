// Public access: unsigned requests (a browser, curl, a CDN) reach only what a bucket shares with
// everyone (an AllUsers grant of its ACL or of the object's, or its policy's Allow for "*"), as
// the bucket's public access block allows; what they read is the bucket's organization's egress,
// what they write its usage. Every other bucket answers them AccessDenied, whether its name is held
// or not, so they learn no organization's names. They make and list no bucket.
import {
  CreateBucketCommand,
  DeleteBucketPolicyCommand,
  GetBucketAclCommand,
  GetBucketPolicyStatusCommand,
  GetObjectCommand,
  PutBucketAclCommand,
  PutBucketCorsCommand,
  PutBucketPolicyCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, egressBytes, policy, s3Client, s3ErrorOf, settles, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let owner: S3Client;

beforeAll(async () => {
  // A short sweep interval: the egress test waits for the sweep to fold the log.
  server = await startS3Server({ OBJECT_STORE_SWEEP_INTERVAL_MS: '200' });
  owner = s3Client(server, await createAccessKey(server, server.org));
  await owner.send(new CreateBucketCommand({ Bucket: 'site' }));
  await owner.send(new PutObjectCommand({ Bucket: 'site', Key: 'index.html', Body: '<h1>hello</h1>', ACL: 'public-read' }));
  await owner.send(new PutObjectCommand({ Bucket: 'site', Key: 'drafts/secret.html', Body: 'not yet' }));
}, 120_000);
afterAll(async () => server?.close());

/** An unsigned request, as a browser sends it. */
const unsigned = (path: string, init: RequestInit = {}) => fetch(`${server.s3Url}${path}`, init);
const codeOf = async (answer: Response) => /<Code>([^<]+)<\/Code>/.exec(await answer.text())?.[1];

describe('an unsigned read', () => {
  test('gets an object whose ACL grants everyone READ, and nothing else of its bucket', async () => {
    const page = await unsigned('/site/index.html');
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<h1>hello</h1>');
    const draft = await unsigned('/site/drafts/secret.html');
    expect([draft.status, await codeOf(draft)]).toEqual([403, 'AccessDenied']);
    // The object's READ is not the bucket's: no listing.
    const listing = await unsigned('/site?list-type=2');
    expect([listing.status, await codeOf(listing)]).toEqual([403, 'AccessDenied']);
  });

  test('of a name no bucket shares, held or not, is AccessDenied alike: no name is learned', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'private-held' }));
    await owner.send(new PutObjectCommand({ Bucket: 'private-held', Key: 'k', Body: 'x' }));
    for (const path of ['/private-held/k', '/no-one-holds-this-name/k', '/private-held']) {
      const answer = await unsigned(path);
      expect([path, answer.status, await codeOf(answer)]).toEqual([path, 403, 'AccessDenied']);
    }
  });

  test('lists a bucket whose ACL grants everyone READ, and the grant reads back as AllUsers', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'listed', ACL: 'public-read' }));
    await owner.send(new PutObjectCommand({ Bucket: 'listed', Key: 'a.txt', Body: 'a' }));
    const listing = await unsigned('/listed?list-type=2');
    expect(listing.status).toBe(200);
    expect(await listing.text()).toContain('<Key>a.txt</Key>');
    const acl = await owner.send(new GetBucketAclCommand({ Bucket: 'listed' }));
    expect(acl.Grants).toContainEqual({
      Grantee: { Type: 'Group', URI: 'http://acs.amazonaws.com/groups/global/AllUsers' },
      Permission: 'READ',
    });
    expect((await owner.send(new GetBucketPolicyStatusCommand({ Bucket: 'listed' }))).PolicyStatus?.IsPublic).toBe(true);
    // Who may list it may learn a key is missing, as a listing would tell: NoSuchKey, as S3 answers.
    const missing = await unsigned('/listed/not-there.txt');
    expect([missing.status, await codeOf(missing)]).toEqual([404, 'NoSuchKey']);
    // READ on the bucket lets no one write to it.
    const put = await unsigned('/listed/b.txt', { method: 'PUT', body: 'b' });
    expect([put.status, await codeOf(put)]).toEqual([403, 'AccessDenied']);
  });

  test("carries the bucket's CORS headers, as a page in a browser needs them", async () => {
    await owner.send(
      new PutBucketCorsCommand({
        Bucket: 'site',
        CORSConfiguration: { CORSRules: [{ AllowedOrigins: ['https://app.example'], AllowedMethods: ['GET'] }] },
      }),
    );
    const page = await unsigned('/site/index.html', { headers: { origin: 'https://app.example' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const denied = await unsigned('/site/drafts/secret.html', { headers: { origin: 'https://app.example' } });
    expect([denied.status, denied.headers.get('access-control-allow-origin')]).toEqual([403, 'https://app.example']);
  });

  test("is egress of the bucket's organization", async () => {
    // An organization of its own: a read logs its egress after its answer, so the other tests'
    // reads could still be adding to the first organization's figure while this one reads it.
    const org = await server.createOrg('Egress Only');
    const client = s3Client(server, await createAccessKey(server, org));
    await client.send(new CreateBucketCommand({ Bucket: 'egress-site' }));
    await client.send(new PutObjectCommand({ Bucket: 'egress-site', Key: 'big.bin', Body: Buffer.alloc(20_000, 7), ACL: 'public-read' }));
    expect(await egressBytes(server, org.orgId)).toBe(0);
    expect((await (await unsigned('/egress-site/big.bin')).arrayBuffer()).byteLength).toBe(20_000);
    await settles(async () => expect(await egressBytes(server, org.orgId)).toBe(20_000));
  });
});

describe('a bucket policy for "*"', () => {
  test('gives unsigned requests what it allows, until RestrictPublicBuckets takes it back', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'downloads' }));
    await owner.send(new PutObjectCommand({ Bucket: 'downloads', Key: 'v1/tool.tar', Body: 'tool' }));
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'downloads',
        Policy: policy([{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::downloads/v1/*' }]),
      }),
    );
    const got = await unsigned('/downloads/v1/tool.tar');
    expect([got.status, await got.text()]).toEqual([200, 'tool']);
    // Only what it names: no other key, no listing, no write.
    for (const [path, init] of [
      ['/downloads/v2/tool.tar', {}],
      ['/downloads', {}],
      ['/downloads/v1/new.tar', { method: 'PUT', body: 'x' }],
    ] as const) {
      const refused = await unsigned(path, init);
      expect([path, refused.status]).toEqual([path, 403]);
    }
    await owner.send(
      new PutPublicAccessBlockCommand({ Bucket: 'downloads', PublicAccessBlockConfiguration: { RestrictPublicBuckets: true } }),
    );
    await settles(async () => expect((await unsigned('/downloads/v1/tool.tar')).status).toBe(403));
  });
});

describe('an unsigned write', () => {
  test("stores into a bucket that grants everyone WRITE, as the bucket's organization's object", async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'dropbox', ACL: 'public-read-write' }));
    const put = await unsigned('/dropbox/from-anyone.txt', { method: 'PUT', body: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(put.status).toBe(200);
    const got = await owner.send(new GetObjectCommand({ Bucket: 'dropbox', Key: 'from-anyone.txt' }));
    expect(await got.Body!.transformToString()).toBe('hello');
    // Stored in the bucket's organization, whose usage and bill it counts in.
    const { rows } = await server.pool.query<{ org_id: string }>(
      `SELECT b.org_id FROM store_versions v JOIN store_buckets b ON b.id = v.bucket_id WHERE b.name = 'dropbox' AND v.key = 'from-anyone.txt'`,
    );
    expect(rows.map((row) => row.org_id)).toEqual([server.org.orgId]);
  });

  test('by a browser form needs no signature where everyone may write, and is refused elsewhere', async () => {
    const form = (key: string) => {
      const data = new FormData();
      data.set('key', key);
      data.set('acl', 'public-read');
      data.set('Content-Type', 'text/plain');
      data.set('file', new Blob(['from a form']), 'note.txt');
      return data;
    };
    const posted = await unsigned('/dropbox', { method: 'POST', body: form('form.txt') });
    expect(posted.status).toBe(204);
    // Its ACL is the form's: everyone may read it back.
    const read = await unsigned('/dropbox/form.txt');
    expect([read.status, await read.text()]).toEqual([200, 'from a form']);
    const refused = await unsigned('/site', { method: 'POST', body: form('form.txt') });
    expect([refused.status, await codeOf(refused)]).toEqual([403, 'AccessDenied']);
  });

  test('makes no bucket, and ListBuckets answers it none', async () => {
    const created = await unsigned('/anonymous-bucket', { method: 'PUT' });
    expect([created.status, await codeOf(created)]).toEqual([403, 'AccessDenied']);
    const listed = await unsigned('/');
    expect(listed.status).toBe(200);
    expect(await listed.text()).not.toContain('<Bucket>');
  });
});

describe('what keeps a bucket private', () => {
  test('BlockPublicAcls refuses a public ACL; IgnorePublicAcls makes those given count for nothing', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'guarded' }));
    await owner.send(new PutObjectCommand({ Bucket: 'guarded', Key: 'was-public', Body: 'x', ACL: 'public-read' }));
    expect((await unsigned('/guarded/was-public')).status).toBe(200);
    await owner.send(
      new PutPublicAccessBlockCommand({
        Bucket: 'guarded',
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, IgnorePublicAcls: true },
      }),
    );
    await settles(async () => expect((await unsigned('/guarded/was-public')).status).toBe(403));
    expect(await s3ErrorOf(owner.send(new PutBucketAclCommand({ Bucket: 'guarded', ACL: 'public-read' })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
  });

  test('an unsigned request may not use a signed aws-chunked body', async () => {
    const put = await unsigned('/dropbox/chunked', {
      method: 'PUT',
      body: '0;chunk-signature=00\r\n\r\n',
      headers: { 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD', 'x-amz-decoded-content-length': '0' },
    });
    expect([put.status, await codeOf(put)]).toEqual([400, 'InvalidRequest']);
  });
});

describe('the audit trail', () => {
  test("records who made a bucket or an object public, and who took it back, in the bucket's organization's trail", async () => {
    const key = await createAccessKey(server, server.org);
    const auditor = s3Client(server, key);
    await auditor.send(new CreateBucketCommand({ Bucket: 'audited' }));
    await auditor.send(new PutObjectCommand({ Bucket: 'audited', Key: 'report.pdf', Body: 'pdf' }));
    await auditor.send(new PutBucketAclCommand({ Bucket: 'audited', ACL: 'public-read' }));
    await auditor.send(new PutObjectAclCommand({ Bucket: 'audited', Key: 'report.pdf', ACL: 'public-read' }));
    const everyone = 'group:all';
    const everyoneReads = policy([{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::audited/*' }]);
    await auditor.send(new PutBucketPolicyCommand({ Bucket: 'audited', Policy: everyoneReads }));
    await auditor.send(new DeleteBucketPolicyCommand({ Bucket: 'audited' }));
    const events = async (action: string) => (await server.org.call('GET', `/audit-events?action=${action}`)).body.items;
    const [bucketAcl] = await events('bucket.set_acl');
    expect(bucketAcl).toMatchObject({
      resource_type: 'bucket',
      result: 'succeeded',
      actor_realm: 's3_access_key',
      actor_sub: key.accessKeyId,
      actor_token_id: key.keyId,
      before: null,
    });
    expect(bucketAcl.after.acl).toContainEqual({ grantee: everyone, permission: 'READ' });
    const [objectAcl] = await events('bucket.set_object_acl');
    expect(objectAcl.after.object_acl).toMatchObject({
      key: 'report.pdf',
      grants: expect.arrayContaining([{ grantee: everyone, permission: 'READ' }]),
    });
    expect(objectAcl.resource_id).toBe(bucketAcl.resource_id);
    expect((await events('bucket.set_policy'))[0]).toMatchObject({ before: null, after: { policy: everyoneReads } });
    expect((await events('bucket.delete_policy'))[0]).toMatchObject({ before: { policy: everyoneReads }, after: null });
  });
});

describe('the operator', () => {
  test('limits unsigned requests per address (503 SlowDown), and S3_PUBLIC_ACCESS=false refuses them all', async () => {
    const limited = await startS3Server({ S3_PUBLIC_RATE_LIMIT: '3', RATE_LIMIT_WINDOW_SECONDS: '3600' });
    try {
      const key = await createAccessKey(limited, limited.org);
      const signed = s3Client(limited, key);
      await signed.send(new CreateBucketCommand({ Bucket: 'public' }));
      await signed.send(new PutObjectCommand({ Bucket: 'public', Key: 'k', Body: 'x', ACL: 'public-read' }));
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${limited.s3Url}/public/k`)).status);
      expect(statuses).toEqual([200, 200, 200, 503]);
      const slowed = await fetch(`${limited.s3Url}/public/k`);
      expect(await codeOf(slowed)).toBe('SlowDown');
      expect(Number(slowed.headers.get('retry-after'))).toBeGreaterThan(0);
      // Signed requests are not counted against it.
      expect(await (await signed.send(new GetObjectCommand({ Bucket: 'public', Key: 'k' }))).Body!.transformToString()).toBe('x');
    } finally {
      await limited.close();
    }
    const closed = await startS3Server({ S3_PUBLIC_ACCESS: 'false' });
    try {
      const signed = s3Client(closed, await createAccessKey(closed, closed.org));
      await signed.send(new CreateBucketCommand({ Bucket: 'public' }));
      await signed.send(new PutObjectCommand({ Bucket: 'public', Key: 'k', Body: 'x', ACL: 'public-read' }));
      const refused = await fetch(`${closed.s3Url}/public/k`);
      expect([refused.status, await codeOf(refused)]).toEqual([403, 'AccessDenied']);
    } finally {
      await closed.close();
    }
  }, 240_000);
});
