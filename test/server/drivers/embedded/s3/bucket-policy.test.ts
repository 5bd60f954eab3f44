// Bucket policies and ACL grants through S3: kept as given, checked when put (S3's MalformedPolicy),
// and applied to every request. A Deny takes from the bucket's own organization what its keys could do; an
// Allow gives another organization's keys the object operations and listings it names, and
// nothing of the bucket's configuration. A name whose bucket shares nothing with the caller stays
// NoSuchBucket. The public access block is kept and obeyed.
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectsCommand,
  DeletePublicAccessBlockCommand,
  GetBucketAclCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  GetPublicAccessBlockCommand,
  ListObjectsV2Command,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { TestOrg } from '../../../../support/server.ts';
import { createAccessKey, policy, s3Client, s3ErrorOf, settles, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let owner: S3Client;
let other: S3Client;
let otherOrg: TestOrg;
let otherKey: IssuedKey;

beforeAll(async () => {
  server = await startS3Server();
  owner = s3Client(server, await createAccessKey(server, server.org));
  otherOrg = await server.createOrg('Partner Org');
  otherKey = await createAccessKey(server, otherOrg);
  other = s3Client(server, otherKey);
}, 120_000);
afterAll(async () => server?.close());

const body = async (client: S3Client, Bucket: string, Key: string) =>
  (await client.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToString();

describe('the policy document', () => {
  test('is given back byte for byte, deleted, and refused when malformed or about another bucket', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'kept-policy' }));
    expect(await s3ErrorOf(owner.send(new GetBucketPolicyCommand({ Bucket: 'kept-policy' })))).toEqual({
      code: 'NoSuchBucketPolicy',
      status: 404,
    });
    const document = policy([{ Effect: 'Allow', Principal: { AWS: '*' }, Action: 's3:ListBucket', Resource: 'arn:aws:s3:::kept-policy' }]);
    await owner.send(new PutBucketPolicyCommand({ Bucket: 'kept-policy', Policy: document }));
    expect((await owner.send(new GetBucketPolicyCommand({ Bucket: 'kept-policy' }))).Policy).toBe(document);
    expect((await owner.send(new GetBucketPolicyStatusCommand({ Bucket: 'kept-policy' }))).PolicyStatus?.IsPublic).toBe(true);

    for (const refused of [
      'not json',
      policy([{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::someone-elses/*' }]),
      policy([{ Effect: 'Allow', NotPrincipal: { AWS: 'x' }, Action: 's3:GetObject', Resource: 'arn:aws:s3:::kept-policy/*' }]),
      policy([
        {
          Effect: 'Allow',
          Principal: '*',
          Action: 's3:GetObject',
          Resource: 'arn:aws:s3:::kept-policy/*',
          Condition: { DateGreaterThan: { 'aws:CurrentTime': '2020-01-01' } },
        },
      ]),
    ])
      expect(await s3ErrorOf(owner.send(new PutBucketPolicyCommand({ Bucket: 'kept-policy', Policy: refused })))).toEqual({
        code: 'MalformedPolicy',
        status: 400,
      });
    expect((await owner.send(new GetBucketPolicyCommand({ Bucket: 'kept-policy' }))).Policy).toBe(document);

    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'kept-policy' }));
    expect(await s3ErrorOf(owner.send(new GetBucketPolicyCommand({ Bucket: 'kept-policy' })))).toMatchObject({
      code: 'NoSuchBucketPolicy',
    });
    expect((await owner.send(new GetBucketPolicyStatusCommand({ Bucket: 'kept-policy' }))).PolicyStatus?.IsPublic).toBe(false);
  });
});

describe('Deny for the bucket own organization', () => {
  test('a write without encryption is denied; with it, accepted; the owner still manages the policy', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'sealed-only' }));
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'sealed-only',
        Policy: policy([
          {
            Effect: 'Deny',
            Principal: '*',
            Action: ['s3:PutObject', 's3:GetBucketPolicy', 's3:DeleteBucketPolicy'],
            Resource: ['arn:aws:s3:::sealed-only/*', 'arn:aws:s3:::sealed-only'],
            Condition: { Null: { 's3:x-amz-server-side-encryption': 'true' } },
          },
        ]),
      }),
    );
    expect(await s3ErrorOf(owner.send(new PutObjectCommand({ Bucket: 'sealed-only', Key: 'plain', Body: 'x' })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
    const sealed = await owner.send(
      new PutObjectCommand({ Bucket: 'sealed-only', Key: 'sealed', Body: 'x', ServerSideEncryption: 'AES256' }),
    );
    expect(sealed.ServerSideEncryption).toBe('AES256');
    expect((await owner.send(new ListObjectsV2Command({ Bucket: 'sealed-only' }))).Contents?.map((entry) => entry.Key)).toEqual(['sealed']);
    // No policy locks its own organization out of the policy itself.
    expect((await owner.send(new GetBucketPolicyCommand({ Bucket: 'sealed-only' }))).Policy).toContain('Deny');
    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'sealed-only' }));
    await owner.send(new PutObjectCommand({ Bucket: 'sealed-only', Key: 'plain', Body: 'x' }));
  });

  test("a policy's Deny of public ACLs refuses them, and nothing else does once it is gone", async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'no-public-acls' }));
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'no-public-acls',
        Policy: policy([
          {
            Effect: 'Deny',
            Principal: '*',
            Action: 's3:PutObject',
            Resource: 'arn:aws:s3:::no-public-acls/*',
            Condition: { StringLike: { 's3:x-amz-acl': 'public*' } },
          },
        ]),
      }),
    );
    expect(
      await s3ErrorOf(owner.send(new PutObjectCommand({ Bucket: 'no-public-acls', Key: 'k', Body: 'x', ACL: 'public-read' }))),
    ).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
    await owner.send(new PutObjectCommand({ Bucket: 'no-public-acls', Key: 'k', Body: 'x', ACL: 'private' }));
    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'no-public-acls' }));
    await owner.send(new PutObjectCommand({ Bucket: 'no-public-acls', Key: 'k', Body: 'x', ACL: 'public-read' }));
  });

  test('DeleteObjects is judged key by key', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'keep-logs' }));
    for (const Key of ['logs/a', 'tmp/b']) await owner.send(new PutObjectCommand({ Bucket: 'keep-logs', Key, Body: Key }));
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'keep-logs',
        Policy: policy([{ Effect: 'Deny', Principal: '*', Action: 's3:DeleteObject', Resource: 'arn:aws:s3:::keep-logs/logs/*' }]),
      }),
    );
    const deleted = await owner.send(
      new DeleteObjectsCommand({ Bucket: 'keep-logs', Delete: { Objects: [{ Key: 'logs/a' }, { Key: 'tmp/b' }] } }),
    );
    expect(deleted.Deleted?.map((entry) => entry.Key)).toEqual(['tmp/b']);
    expect(deleted.Errors?.map((entry) => [entry.Key, entry.Code])).toEqual([['logs/a', 'AccessDenied']]);
    expect(await body(owner, 'keep-logs', 'logs/a')).toBe('logs/a');
  });
});

describe('Allow for another organization', () => {
  test('a name that shares nothing is NoSuchBucket; shared, the other organization lists and reads what the policy names', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'shared-reads' }));
    for (const Key of ['public/a', 'private/b']) await owner.send(new PutObjectCommand({ Bucket: 'shared-reads', Key, Body: Key }));
    expect(await s3ErrorOf(other.send(new ListObjectsV2Command({ Bucket: 'shared-reads' })))).toEqual({
      code: 'NoSuchBucket',
      status: 404,
    });

    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'shared-reads',
        Policy: policy([
          {
            Effect: 'Allow',
            Principal: { AWS: `arn:aws:iam::${otherOrg.orgId}:root` },
            Action: 's3:ListBucket',
            Resource: 'arn:aws:s3:::shared-reads',
          },
          { Effect: 'Allow', Principal: { AWS: otherOrg.orgId }, Action: 's3:GetObject', Resource: 'arn:aws:s3:::shared-reads/public/*' },
        ]),
      }),
    );
    const listed = await other.send(new ListObjectsV2Command({ Bucket: 'shared-reads', FetchOwner: true }));
    expect(listed.Contents?.map((entry) => [entry.Key, entry.Owner?.ID])).toEqual([
      ['private/b', server.org.orgId],
      ['public/a', server.org.orgId],
    ]);
    expect(await body(other, 'shared-reads', 'public/a')).toBe('public/a');
    // Shared with it, the bucket's name is no secret: what the policy does not allow is AccessDenied.
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'shared-reads', Key: 'private/b' })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
    expect(await s3ErrorOf(other.send(new PutObjectCommand({ Bucket: 'shared-reads', Key: 'public/c', Body: 'x' })))).toMatchObject({
      code: 'AccessDenied',
    });
    // The bucket's configuration stays its organization's, whatever a policy says.
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'shared-reads',
        Policy: policy([
          { Effect: 'Allow', Principal: '*', Action: 's3:*', Resource: ['arn:aws:s3:::shared-reads', 'arn:aws:s3:::shared-reads/*'] },
        ]),
      }),
    );
    expect(
      await s3ErrorOf(
        other.send(new PutBucketVersioningCommand({ Bucket: 'shared-reads', VersioningConfiguration: { Status: 'Enabled' } })),
      ),
    ).toMatchObject({ code: 'AccessDenied' });
    expect(await s3ErrorOf(other.send(new GetBucketPolicyCommand({ Bucket: 'shared-reads' })))).toMatchObject({ code: 'AccessDenied' });
    // Removed, the policy shares nothing again.
    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'shared-reads' }));
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'shared-reads', Key: 'public/a' })))).toEqual({
      code: 'NoSuchBucket',
      status: 404,
    });
  });

  test("a write allowed to another organization lands in the bucket's organization, counted in its usage", async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'drop-box' }));
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'drop-box',
        Policy: policy([
          { Effect: 'Allow', Principal: '*', Action: ['s3:PutObject', 's3:GetObject'], Resource: 'arn:aws:s3:::drop-box/*' },
        ]),
      }),
    );
    await other.send(new PutObjectCommand({ Bucket: 'drop-box', Key: 'delivery', Body: Buffer.alloc(4321, 1) }));
    expect((await owner.send(new GetObjectCommand({ Bucket: 'drop-box', Key: 'delivery' }))).ContentLength).toBe(4321);
    // The bytes are the bucket's organization's, not the writer's.
    await settles(async () => expect((await server.org.call('GET', '/s3/quota')).body.usage_bytes).toBeGreaterThanOrEqual(4321), 30_000);
    const others = (await otherOrg.call('GET', '/s3/quota')).body;
    expect(others.usage_bytes ?? 0).toBe(0);
  });

  test('a copy reads its source as the source bucket policy allows, tag conditions included', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'tagged-source' }));
    for (const Key of ['open', 'closed']) await owner.send(new PutObjectCommand({ Bucket: 'tagged-source', Key, Body: Key }));
    await owner.send(
      new PutObjectTaggingCommand({ Bucket: 'tagged-source', Key: 'open', Tagging: { TagSet: [{ Key: 'security', Value: 'public' }] } }),
    );
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'tagged-source',
        Policy: policy([
          {
            Effect: 'Allow',
            Principal: '*',
            Action: 's3:GetObject',
            Resource: 'arn:aws:s3:::tagged-source/*',
            Condition: { StringEquals: { 's3:ExistingObjectTag/security': 'public' } },
          },
        ]),
      }),
    );
    await other.send(new CreateBucketCommand({ Bucket: 'own-target' }));
    await other.send(new CopyObjectCommand({ Bucket: 'own-target', Key: 'copied', CopySource: 'tagged-source/open' }));
    expect(await body(other, 'own-target', 'copied')).toBe('open');
    expect(
      await s3ErrorOf(other.send(new CopyObjectCommand({ Bucket: 'own-target', Key: 'no', CopySource: 'tagged-source/closed' }))),
    ).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
  });
});

describe('public access block', () => {
  test('kept, given back and deleted; it refuses public policies and public canned ACLs with AccessDenied', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'blocked' }));
    expect(await s3ErrorOf(owner.send(new GetPublicAccessBlockCommand({ Bucket: 'blocked' })))).toEqual({
      code: 'NoSuchPublicAccessBlockConfiguration',
      status: 404,
    });
    const configuration = { BlockPublicAcls: true, IgnorePublicAcls: false, BlockPublicPolicy: true, RestrictPublicBuckets: false };
    await owner.send(new PutPublicAccessBlockCommand({ Bucket: 'blocked', PublicAccessBlockConfiguration: configuration }));
    expect((await owner.send(new GetPublicAccessBlockCommand({ Bucket: 'blocked' }))).PublicAccessBlockConfiguration).toEqual(
      configuration,
    );
    const everyone = policy([{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::blocked/*' }]);
    expect(await s3ErrorOf(owner.send(new PutBucketPolicyCommand({ Bucket: 'blocked', Policy: everyone })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
    expect(await s3ErrorOf(owner.send(new PutObjectCommand({ Bucket: 'blocked', Key: 'k', Body: 'x', ACL: 'public-read' })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
    await owner.send(new DeletePublicAccessBlockCommand({ Bucket: 'blocked' }));
    expect(await s3ErrorOf(owner.send(new GetPublicAccessBlockCommand({ Bucket: 'blocked' })))).toMatchObject({
      code: 'NoSuchPublicAccessBlockConfiguration',
    });
    await owner.send(new PutBucketPolicyCommand({ Bucket: 'blocked', Policy: everyone }));
  });

  test('RestrictPublicBuckets: a public policy gives other organizations nothing', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'restricted' }));
    await owner.send(new PutObjectCommand({ Bucket: 'restricted', Key: 'k', Body: 'v' }));
    await owner.send(
      new PutBucketPolicyCommand({
        Bucket: 'restricted',
        Policy: policy([{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::restricted/*' }]),
      }),
    );
    expect(await body(other, 'restricted', 'k')).toBe('v');
    await owner.send(
      new PutPublicAccessBlockCommand({
        Bucket: 'restricted',
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: false,
          IgnorePublicAcls: false,
          BlockPublicPolicy: false,
          RestrictPublicBuckets: true,
        },
      }),
    );
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'restricted', Key: 'k' })))).toMatchObject({ code: 'AccessDenied' });
    expect(await body(owner, 'restricted', 'k')).toBe('v');
  });
});

describe('ACL grants to other organizations', () => {
  // An organization of its own: the first one's bucket slots are taken by the tests above.
  let granter: S3Client;
  let granterOrg: TestOrg;
  beforeAll(async () => {
    granterOrg = await server.createOrg('Granting Org');
    granter = s3Client(server, await createAccessKey(server, granterOrg));
  });

  test("an object's READ grant lets that organization read that object, and nothing else of the bucket", async () => {
    await granter.send(new CreateBucketCommand({ Bucket: 'one-shared-object' }));
    for (const Key of ['shared', 'kept']) await granter.send(new PutObjectCommand({ Bucket: 'one-shared-object', Key, Body: Key }));
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'one-shared-object', Key: 'shared' })))).toMatchObject({
      status: 404,
    });
    // Grant headers are the whole ACL, as S3 takes them: the owner names itself too.
    await granter.send(
      new PutObjectAclCommand({
        Bucket: 'one-shared-object',
        Key: 'shared',
        GrantRead: `id="${otherOrg.orgId}"`,
        GrantFullControl: `id="${granterOrg.orgId}"`,
      }),
    );
    expect(await body(other, 'one-shared-object', 'shared')).toBe('shared');
    const acl = await granter.send(new GetObjectAclCommand({ Bucket: 'one-shared-object', Key: 'shared' }));
    // Other grantees first, then the owner's own grants, as RGW lists them.
    expect(acl.Grants?.map((grant) => [grant.Grantee?.ID, grant.Permission])).toEqual([
      [otherOrg.orgId, 'READ'],
      [granterOrg.orgId, 'FULL_CONTROL'],
    ]);
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'one-shared-object', Key: 'kept' })))).toMatchObject({ status: 404 });
    // The object's ACL names that organization: overwriting it is AccessDenied (READ gives no WRITE).
    expect(await s3ErrorOf(other.send(new PutObjectCommand({ Bucket: 'one-shared-object', Key: 'shared', Body: 'x' })))).toMatchObject({
      status: 403,
    });
    expect(await body(granter, 'one-shared-object', 'shared')).toBe('shared');
  });

  test('authenticated-read on a bucket lets every organization list it, not write it; IgnorePublicAcls takes that back', async () => {
    await granter.send(new CreateBucketCommand({ Bucket: 'listed-to-all', ACL: 'authenticated-read' }));
    await granter.send(new PutObjectCommand({ Bucket: 'listed-to-all', Key: 'k', Body: 'v' }));
    expect((await granter.send(new GetBucketPolicyStatusCommand({ Bucket: 'listed-to-all' }))).PolicyStatus?.IsPublic).toBe(true);
    expect((await other.send(new ListObjectsV2Command({ Bucket: 'listed-to-all' }))).Contents?.map((entry) => entry.Key)).toEqual(['k']);
    expect(await s3ErrorOf(other.send(new PutObjectCommand({ Bucket: 'listed-to-all', Key: 'x', Body: 'x' })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
    await granter.send(
      new PutPublicAccessBlockCommand({
        Bucket: 'listed-to-all',
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          IgnorePublicAcls: true,
          BlockPublicPolicy: false,
          RestrictPublicBuckets: false,
        },
      }),
    );
    expect(await s3ErrorOf(other.send(new ListObjectsV2Command({ Bucket: 'listed-to-all' })))).toMatchObject({ status: 404 });
    expect(await s3ErrorOf(granter.send(new PutBucketAclCommand({ Bucket: 'listed-to-all', ACL: 'authenticated-read' })))).toEqual({
      code: 'AccessDenied',
      status: 403,
    });
  });

  test('an ACL is kept as given, even one without the owner; the owner keeps control of its bucket all the same', async () => {
    await granter.send(new CreateBucketCommand({ Bucket: 'bare-acl' }));
    const owner = (await granter.send(new GetBucketAclCommand({ Bucket: 'bare-acl' }))).Owner;
    await granter.send(new PutBucketAclCommand({ Bucket: 'bare-acl', AccessControlPolicy: { Owner: owner, Grants: [] } }));
    expect((await granter.send(new GetBucketAclCommand({ Bucket: 'bare-acl' }))).Grants ?? []).toEqual([]);
    await granter.send(new PutObjectCommand({ Bucket: 'bare-acl', Key: 'k', Body: 'v' }));
    expect(await body(granter, 'bare-acl', 'k')).toBe('v');
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'bare-acl', Key: 'k' })))).toMatchObject({ status: 404 });
  });

  test("a bucket's WRITE grant lets that organization write into it, counted as the bucket's", async () => {
    await granter.send(new CreateBucketCommand({ Bucket: 'write-grant' }));
    await granter.send(new PutBucketAclCommand({ Bucket: 'write-grant', GrantWrite: `id="${otherOrg.orgId}"` }));
    await other.send(new PutObjectCommand({ Bucket: 'write-grant', Key: 'in', Body: 'delivered' }));
    expect(await body(granter, 'write-grant', 'in')).toBe('delivered');
    // WRITE gives no READ: the other organization cannot list or read back.
    expect(await s3ErrorOf(other.send(new ListObjectsV2Command({ Bucket: 'write-grant' })))).toMatchObject({ code: 'AccessDenied' });
    expect(await s3ErrorOf(other.send(new GetObjectCommand({ Bucket: 'write-grant', Key: 'in' })))).toMatchObject({ code: 'AccessDenied' });
  });
});
