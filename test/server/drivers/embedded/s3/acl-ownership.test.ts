// Owner-only ACLs and ObjectOwnership: every bucket and object belongs to the organization of the
// key and nobody else has any access, so an ACL request is answered with the owner alone, a
// grantee that names nobody is refused as S3 refuses it, and a bucket whose ownership is
// BucketOwnerEnforced takes no ACL but bucket-owner-full-control (S3: ACLs disabled).
import {
  CreateBucketCommand,
  DeleteBucketOwnershipControlsCommand,
  GetBucketAclCommand,
  GetBucketOwnershipControlsCommand,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, s3Client, s3ErrorOf, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  s3 = s3Client(server, await createAccessKey(server, server.org));
  await s3.send(new CreateBucketCommand({ Bucket: 'owned' }));
}, 120_000);
afterAll(async () => server?.close());

describe('ACLs', () => {
  test('GetBucketAcl answers the organization as owner with FULL_CONTROL, and nobody else', async () => {
    const acl = await s3.send(new GetBucketAclCommand({ Bucket: 'owned' }));
    expect(acl.Owner?.ID).toBe(server.org.orgId);
    expect(acl.Grants).toEqual([
      { Grantee: expect.objectContaining({ ID: server.org.orgId, Type: 'CanonicalUser' }), Permission: 'FULL_CONTROL' },
    ]);
  });

  test('a grantee that names nobody is refused as S3 refuses it: an e-mail address, an id that is no owner id', async () => {
    const owner = { ID: server.org.orgId };
    const withGrant = (Grantee: Record<string, string>) => ({
      Owner: owner,
      Grants: [
        { Grantee: { ...owner, Type: 'CanonicalUser' as const }, Permission: 'FULL_CONTROL' as const },
        { Grantee: Grantee as never, Permission: 'READ' as const },
      ],
    });
    expect(
      await s3ErrorOf(
        s3.send(
          new PutBucketAclCommand({
            Bucket: 'owned',
            AccessControlPolicy: withGrant({ EmailAddress: 'nobody@example.com', Type: 'AmazonCustomerByEmail' }),
          }),
        ),
      ),
    ).toEqual({ code: 'UnresolvableGrantByEmailAddress', status: 400 });
    expect(
      await s3ErrorOf(
        s3.send(new PutBucketAclCommand({ Bucket: 'owned', AccessControlPolicy: withGrant({ ID: '_foo', Type: 'CanonicalUser' }) })),
      ),
    ).toEqual({ code: 'InvalidArgument', status: 400 });
    expect((await s3.send(new GetBucketAclCommand({ Bucket: 'owned' }))).Grants).toHaveLength(1);
  });
});

describe('ObjectOwnership', () => {
  test('a bucket has none until set; it is read back and removed', async () => {
    const none = { code: 'OwnershipControlsNotFoundError', status: 404 };
    expect(await s3ErrorOf(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: 'owned' })))).toEqual(none);
    await s3.send(
      new PutBucketOwnershipControlsCommand({ Bucket: 'owned', OwnershipControls: { Rules: [{ ObjectOwnership: 'ObjectWriter' }] } }),
    );
    const set = await s3.send(new GetBucketOwnershipControlsCommand({ Bucket: 'owned' }));
    expect(set.OwnershipControls?.Rules).toEqual([{ ObjectOwnership: 'ObjectWriter' }]);
    await s3.send(new DeleteBucketOwnershipControlsCommand({ Bucket: 'owned' }));
    expect(await s3ErrorOf(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: 'owned' })))).toEqual(none);
  });

  test('BucketOwnerEnforced, set at creation: ACLs are refused but bucket-owner-full-control, and nothing is stored for a refused write', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'enforced', ObjectOwnership: 'BucketOwnerEnforced' }));
    const set = await s3.send(new GetBucketOwnershipControlsCommand({ Bucket: 'enforced' }));
    expect(set.OwnershipControls?.Rules).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
    const notSupported = { code: 'AccessControlListNotSupported', status: 400 };
    await s3.send(new PutObjectCommand({ Bucket: 'enforced', Key: 'no-acl', Body: 'x' }));
    await s3.send(new PutObjectCommand({ Bucket: 'enforced', Key: 'owner-full-control', Body: 'x', ACL: 'bucket-owner-full-control' }));
    expect(await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: 'enforced', Key: 'private', Body: 'x', ACL: 'private' })))).toEqual(
      notSupported,
    );
    expect(await s3ErrorOf(s3.send(new PutBucketAclCommand({ Bucket: 'enforced', ACL: 'private' })))).toEqual(notSupported);
    expect(await s3ErrorOf(s3.send(new PutObjectAclCommand({ Bucket: 'enforced', Key: 'no-acl', ACL: 'private' })))).toEqual(notSupported);
  });
});
