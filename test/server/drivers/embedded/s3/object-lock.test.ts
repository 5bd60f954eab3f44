// Object lock on the embedded endpoint: a versioned bucket turns it on (PutObjectLockConfiguration),
// its default retention applies to new versions, and a version under retention or legal hold is
// kept: deleting it by its id is refused as S3 refuses it (GOVERNANCE gives way to
// x-amz-bypass-governance-retention, COMPLIANCE and legal hold do not), retentions are only
// weakened as S3 allows, and writes add versions rather than replacing kept ones.
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectLockConfigurationCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectLockConfigurationCommand,
  PutObjectRetentionCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { enableObjectLock } from '../../../../../server/drivers/embedded/object-lock.ts';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

const LOCKED = 'vault';
const FAR = new Date('2099-01-01T00:00:00.000Z');

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, 'plain-bucket');
  await createBucket(server, server.org, LOCKED, { versioning: true });
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
  await s3.send(new PutObjectLockConfigurationCommand({ Bucket: LOCKED, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } }));
}, 120_000);
afterAll(async () => server?.close());

const put = async (name: string, extra: Partial<ConstructorParameters<typeof PutObjectCommand>[0]> = {}) =>
  s3.send(new PutObjectCommand({ Bucket: LOCKED, Key: name, Body: `the bytes of ${name}`, ...extra }));

describe('a bucket without object lock', () => {
  test('cannot turn it on unversioned, has no configuration, and refuses retentions and legal holds', async () => {
    expect(
      await s3ErrorOf(
        s3.send(
          new PutObjectLockConfigurationCommand({ Bucket: 'plain-bucket', ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } }),
        ),
      ),
    ).toEqual({ code: 'InvalidBucketState', status: 409 });
    expect(await s3ErrorOf(s3.send(new GetObjectLockConfigurationCommand({ Bucket: 'plain-bucket' })))).toEqual({
      code: 'ObjectLockConfigurationNotFoundError',
      status: 404,
    });
    await s3.send(new PutObjectCommand({ Bucket: 'plain-bucket', Key: 'k', Body: 'kept as it is' }));
    expect(
      await s3ErrorOf(
        s3.send(
          new PutObjectRetentionCommand({ Bucket: 'plain-bucket', Key: 'k', Retention: { Mode: 'GOVERNANCE', RetainUntilDate: FAR } }),
        ),
      ),
    ).toEqual({ code: 'InvalidRequest', status: 400 });
    expect(
      await s3ErrorOf(s3.send(new PutObjectLegalHoldCommand({ Bucket: 'plain-bucket', Key: 'k', LegalHold: { Status: 'ON' } }))),
    ).toEqual({ code: 'InvalidRequest', status: 400 });
    const got = await s3.send(new GetObjectCommand({ Bucket: 'plain-bucket', Key: 'k' }));
    expect(await got.Body!.transformToString()).toBe('kept as it is');
  });
});

describe('the bucket configuration', () => {
  test('a default retention is kept and given back; malformed ones are refused with S3 codes', async () => {
    await s3.send(
      new PutObjectLockConfigurationCommand({
        Bucket: LOCKED,
        ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled', Rule: { DefaultRetention: { Mode: 'GOVERNANCE', Days: 1 } } },
      }),
    );
    const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: LOCKED }));
    expect(config.ObjectLockConfiguration).toEqual({
      ObjectLockEnabled: 'Enabled',
      Rule: { DefaultRetention: { Mode: 'GOVERNANCE', Days: 1 } },
    });

    const written = await put('defaulted.txt');
    const head = await s3.send(new HeadObjectCommand({ Bucket: LOCKED, Key: 'defaulted.txt' }));
    expect(head.ObjectLockMode).toBe('GOVERNANCE');
    const day = head.ObjectLockRetainUntilDate!.getTime() - Date.now();
    expect(day).toBeGreaterThan(23 * 3600_000);
    expect(day).toBeLessThan(25 * 3600_000);
    await s3.send(
      new DeleteObjectCommand({ Bucket: LOCKED, Key: 'defaulted.txt', VersionId: written.VersionId, BypassGovernanceRetention: true }),
    );

    for (const [retention, code] of [
      [{ Mode: 'GOVERNANCE', Days: 1, Years: 1 }, 'MalformedXML'],
      [{ Mode: 'GOVERNANCE', Days: 0 }, 'InvalidRetentionPeriod'],
      [{ Mode: 'governance', Days: 1 }, 'MalformedXML'],
    ] as const) {
      expect(
        await s3ErrorOf(
          s3.send(
            new PutObjectLockConfigurationCommand({
              Bucket: LOCKED,
              ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled', Rule: { DefaultRetention: retention as never } },
            }),
          ),
        ),
        JSON.stringify(retention),
      ).toEqual({ code, status: 400 });
    }
    // Back to no default for the tests below.
    await s3.send(new PutObjectLockConfigurationCommand({ Bucket: LOCKED, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } }));
    expect((await s3.send(new GetObjectLockConfigurationCommand({ Bucket: LOCKED }))).ObjectLockConfiguration?.Rule).toBeUndefined();
  });

  test('the store-level switch S3 CreateBucket uses turns object lock on for a versioned bucket only', async () => {
    const versioned = await createBucket(server, server.org, 'made-locked', { versioning: true });
    const unversioned = await createBucket(server, server.org, 'made-plain');
    // As the store calls it, but from outside the server: nothing here has served either bucket yet.
    const store = { pool: server.pool, cachesSynced: async () => {} };
    expect(await enableObjectLock(store, versioned.id)).toBe(true);
    expect(await enableObjectLock(store, unversioned.id)).toBe(false);
    expect((await s3.send(new GetObjectLockConfigurationCommand({ Bucket: 'made-locked' }))).ObjectLockConfiguration).toEqual({
      ObjectLockEnabled: 'Enabled',
    });
    expect(await s3ErrorOf(s3.send(new GetObjectLockConfigurationCommand({ Bucket: 'made-plain' })))).toMatchObject({ status: 404 });
  });
});

describe('retention', () => {
  test('GOVERNANCE keeps a version from deletion by id unless the request bypasses governance', async () => {
    const written = await put('governed.txt', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: FAR });
    const retention = await s3.send(new GetObjectRetentionCommand({ Bucket: LOCKED, Key: 'governed.txt' }));
    expect(retention.Retention).toEqual({ Mode: 'GOVERNANCE', RetainUntilDate: FAR });
    expect(
      await s3ErrorOf(s3.send(new DeleteObjectCommand({ Bucket: LOCKED, Key: 'governed.txt', VersionId: written.VersionId }))),
    ).toEqual({ code: 'AccessDenied', status: 403 });
    // A delete without an id adds a delete marker: allowed, the version stays.
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: LOCKED, Key: 'governed.txt' }));
    expect(marker.DeleteMarker).toBe(true);
    const kept = await s3.send(new GetObjectCommand({ Bucket: LOCKED, Key: 'governed.txt', VersionId: written.VersionId }));
    expect(await kept.Body!.transformToString()).toBe('the bytes of governed.txt');
    // Shortening needs the bypass too.
    const sooner = new Date('2090-01-01T00:00:00.000Z');
    expect(
      await s3ErrorOf(
        s3.send(
          new PutObjectRetentionCommand({
            Bucket: LOCKED,
            Key: 'governed.txt',
            VersionId: written.VersionId,
            Retention: { Mode: 'GOVERNANCE', RetainUntilDate: sooner },
          }),
        ),
      ),
    ).toEqual({ code: 'AccessDenied', status: 403 });
    await s3.send(
      new PutObjectRetentionCommand({
        Bucket: LOCKED,
        Key: 'governed.txt',
        VersionId: written.VersionId,
        Retention: { Mode: 'GOVERNANCE', RetainUntilDate: sooner },
        BypassGovernanceRetention: true,
      }),
    );
    const deleted = await s3.send(
      new DeleteObjectCommand({ Bucket: LOCKED, Key: 'governed.txt', VersionId: written.VersionId, BypassGovernanceRetention: true }),
    );
    expect(deleted.VersionId).toBe(written.VersionId);
  });

  test('COMPLIANCE keeps a version from everyone: no bypass, no shorter date, no other mode; a later date is fine', async () => {
    const written = await put('compliant.txt', { ObjectLockMode: 'COMPLIANCE', ObjectLockRetainUntilDate: FAR });
    expect(
      await s3ErrorOf(
        s3.send(
          new DeleteObjectCommand({ Bucket: LOCKED, Key: 'compliant.txt', VersionId: written.VersionId, BypassGovernanceRetention: true }),
        ),
      ),
    ).toEqual({ code: 'AccessDenied', status: 403 });
    for (const retention of [
      { Mode: 'COMPLIANCE', RetainUntilDate: new Date('2098-01-01T00:00:00.000Z') },
      { Mode: 'GOVERNANCE', RetainUntilDate: FAR },
    ] as const) {
      expect(
        await s3ErrorOf(
          s3.send(
            new PutObjectRetentionCommand({ Bucket: LOCKED, Key: 'compliant.txt', Retention: retention, BypassGovernanceRetention: true }),
          ),
        ),
        retention.Mode,
      ).toEqual({ code: 'AccessDenied', status: 403 });
    }
    const later = new Date('2100-06-01T00:00:00.000Z');
    await s3.send(
      new PutObjectRetentionCommand({ Bucket: LOCKED, Key: 'compliant.txt', Retention: { Mode: 'COMPLIANCE', RetainUntilDate: later } }),
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: LOCKED, Key: 'compliant.txt' }));
    expect([head.ObjectLockMode, head.ObjectLockRetainUntilDate]).toEqual(['COMPLIANCE', later]);
    // An overwrite adds a version; the kept one is still there.
    await put('compliant.txt', { Body: 'newer bytes' });
    const kept = await s3.send(new GetObjectCommand({ Bucket: LOCKED, Key: 'compliant.txt', VersionId: written.VersionId }));
    expect(await kept.Body!.transformToString()).toBe('the bytes of compliant.txt');
  });

  test('a retention must name a future date, and headers need both mode and date', async () => {
    expect(
      await s3ErrorOf(put('past.txt', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: new Date('2001-01-01T00:00:00Z') })),
    ).toEqual({ code: 'InvalidArgument', status: 400 });
    const onlyMode = await signedRequest(server, key, {
      method: 'PUT',
      path: `/${LOCKED}/half.txt`,
      headers: { 'x-amz-object-lock-mode': 'GOVERNANCE' },
      body: 'x',
    });
    expect([onlyMode.status, onlyMode.code]).toEqual([400, 'InvalidArgument']);
    for (const name of ['past.txt', 'half.txt'])
      expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: LOCKED, Key: name }))), name).toMatchObject({ status: 404 });
  });

  test('a multipart upload gives its completed version the lock it was created with', async () => {
    const created = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: LOCKED, Key: 'parts.txt', ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: FAR }),
    );
    const part = await s3.send(
      new UploadPartCommand({ Bucket: LOCKED, Key: 'parts.txt', UploadId: created.UploadId, PartNumber: 1, Body: 'one part' }),
    );
    const completed = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: LOCKED,
        Key: 'parts.txt',
        UploadId: created.UploadId,
        MultipartUpload: { Parts: [{ ETag: part.ETag, PartNumber: 1 }] },
      }),
    );
    expect(await s3ErrorOf(s3.send(new DeleteObjectCommand({ Bucket: LOCKED, Key: 'parts.txt', VersionId: completed.VersionId })))).toEqual(
      {
        code: 'AccessDenied',
        status: 403,
      },
    );
  });
});

describe('legal hold', () => {
  test('keeps a version from deletion, bypass or not, until it is lifted', async () => {
    const written = await put('held.txt');
    expect((await s3.send(new GetObjectLegalHoldCommand({ Bucket: LOCKED, Key: 'held.txt' }))).LegalHold?.Status).toBe('OFF');
    await s3.send(new PutObjectLegalHoldCommand({ Bucket: LOCKED, Key: 'held.txt', LegalHold: { Status: 'ON' } }));
    expect((await s3.send(new HeadObjectCommand({ Bucket: LOCKED, Key: 'held.txt' }))).ObjectLockLegalHoldStatus).toBe('ON');
    expect(
      await s3ErrorOf(
        s3.send(
          new DeleteObjectCommand({ Bucket: LOCKED, Key: 'held.txt', VersionId: written.VersionId, BypassGovernanceRetention: true }),
        ),
      ),
    ).toEqual({ code: 'AccessDenied', status: 403 });
    const malformed = await signedRequest(server, key, {
      method: 'PUT',
      path: `/${LOCKED}/held.txt`,
      query: { 'legal-hold': '' },
      body: '<LegalHold><Status>maybe</Status></LegalHold>',
    });
    expect([malformed.status, malformed.code]).toEqual([400, 'MalformedXML']);
    await s3.send(new PutObjectLegalHoldCommand({ Bucket: LOCKED, Key: 'held.txt', LegalHold: { Status: 'OFF' } }));
    await s3.send(new DeleteObjectCommand({ Bucket: LOCKED, Key: 'held.txt', VersionId: written.VersionId }));
    expect(
      await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: LOCKED, Key: 'held.txt', VersionId: written.VersionId }))),
    ).toMatchObject({
      status: 404,
    });
  });

  test('DeleteObjects answers AccessDenied for a kept version and deletes the others', async () => {
    const held = await put('batch-held.txt', { ObjectLockLegalHoldStatus: 'ON' });
    const free = await put('batch-free.txt');
    const answer = await s3.send(
      new DeleteObjectsCommand({
        Bucket: LOCKED,
        Delete: {
          Objects: [
            { Key: 'batch-held.txt', VersionId: held.VersionId },
            { Key: 'batch-free.txt', VersionId: free.VersionId },
          ],
        },
      }),
    );
    expect(answer.Errors).toEqual([expect.objectContaining({ Key: 'batch-held.txt', VersionId: held.VersionId, Code: 'AccessDenied' })]);
    expect(answer.Deleted).toEqual([expect.objectContaining({ Key: 'batch-free.txt', VersionId: free.VersionId })]);
    const kept = await s3.send(new GetObjectCommand({ Bucket: LOCKED, Key: 'batch-held.txt', VersionId: held.VersionId }));
    expect(await kept.Body!.transformToString()).toBe('the bytes of batch-held.txt');
  });
});
