// Lifecycle rules on the embedded endpoint: set, given back as they were given and deleted
// through S3, refused with S3's codes when malformed; and applied by the platform's background
// work: current versions expire (deleted, or hidden behind a delete marker when versioned),
// noncurrent versions past their days go (the newest kept when asked), lone delete markers go,
// unfinished uploads are aborted, versions under object lock stay, and the freed bytes leave the
// organization's usage. A lifecycle day lasts a second here (S3_LIFECYCLE_DAY_SECONDS).
import {
  CreateMultipartUploadCommand,
  DeleteBucketLifecycleCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  PutBucketLifecycleConfigurationCommand,
  PutObjectCommand,
  PutObjectLockConfigurationCommand,
  UploadPartCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { storageUsage } from '../../../../../server/areas/storage/storage-metering.ts';
import { BYTES_PER_BILLED_GB } from '../../../../../server/areas/storage/storage-limits.ts';
import { createEmbeddedObjectStore } from '../../../../../server/drivers/embedded/store.ts';
import { FaultInjector } from '../../../../../server/drivers/simulators/faults.ts';
import { createAccessKey, createBucket, s3Client, s3ErrorOf, settles, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server({ S3_LIFECYCLE_DAY_SECONDS: '1', S3_LIFECYCLE_INTERVAL_MS: '200' });
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

const setRules = (bucket: string, rules: LifecycleRule[]) =>
  s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: rules } }));

const keysOf = async (bucket: string) =>
  ((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map((item) => item.Key);

const usageBytes = async () => (await server.org.call('GET', '/s3/quota')).body.usage_bytes as number;

describe('the lifecycle configuration', () => {
  test('is given back as it was given, and deleted', async () => {
    await createBucket(server, server.org, 'config');
    expect(await s3ErrorOf(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'config' })))).toEqual({
      code: 'NoSuchLifecycleConfiguration',
      status: 404,
    });
    const rules: LifecycleRule[] = [
      { ID: 'old-form', Prefix: 'logs/', Status: 'Enabled', Expiration: { Days: 31 } },
      { ID: 'new-form', Filter: { Prefix: 'tmp/' }, Status: 'Disabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 } },
      {
        ID: 'versions',
        Filter: { And: { Prefix: 'docs/', ObjectSizeGreaterThan: 10 } },
        Status: 'Enabled',
        NoncurrentVersionExpiration: { NoncurrentDays: 3, NewerNoncurrentVersions: 2 },
      },
    ];
    await setRules('config', rules);
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'config' }));
    expect(got.Rules).toEqual(rules);
    await s3.send(new DeleteBucketLifecycleCommand({ Bucket: 'config' }));
    expect(await s3ErrorOf(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'config' })))).toMatchObject({ status: 404 });
  });

  test('malformed rules are refused with S3 codes; transitions and tag filters are not offered', async () => {
    const cases: Array<[string, string, number, string]> = [
      ['two rules with one ID', rule('same') + rule('same'), 400, 'InvalidArgument'],
      ['a lower-case status', rule('a', { status: 'enabled' }), 400, 'MalformedXML'],
      ['zero days', rule('b', { action: '<Expiration><Days>0</Days></Expiration>' }), 400, 'InvalidArgument'],
      ['an ID of 256 characters', rule('c'.repeat(256)), 400, 'InvalidArgument'],
      [
        'a date not at midnight',
        rule('d', { action: '<Expiration><Date>2030-01-01T12:00:00Z</Date></Expiration>' }),
        400,
        'InvalidArgument',
      ],
      ['no action', rule('e', { action: '' }), 400, 'InvalidRequest'],
      [
        'a transition',
        rule('f', { action: '<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>' }),
        501,
        'NotImplemented',
      ],
      ['a tag filter', rule('g', { filter: '<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>' }), 501, 'NotImplemented'],
    ];
    for (const [what, rules, status, code] of cases) {
      const answer = await signedRequest(server, key, {
        method: 'PUT',
        path: '/config',
        query: { lifecycle: '' },
        body: `<LifecycleConfiguration>${rules}</LifecycleConfiguration>`,
      });
      expect([answer.status, answer.code], `${what}: ${answer.text}`).toEqual([status, code]);
    }
    expect(await s3ErrorOf(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'config' })))).toMatchObject({ status: 404 });
  });
});

function rule(id: string, parts: { status?: string; action?: string; filter?: string } = {}): string {
  return `<Rule><ID>${id}</ID>${parts.filter ?? '<Filter><Prefix>p/</Prefix></Filter>'}<Status>${parts.status ?? 'Enabled'}</Status>${
    parts.action ?? '<Expiration><Days>1</Days></Expiration>'
  }</Rule>`;
}

describe('the answers say when an object will expire', () => {
  test('PUT and HEAD carry x-amz-expiration with the earliest rule that expires the object', async () => {
    await createBucket(server, server.org, 'announced');
    await setRules('announced', [
      { ID: 'month', Filter: { Prefix: 'reports/' }, Status: 'Enabled', Expiration: { Days: 30 } },
      { ID: 'week', Filter: { Prefix: 'reports/draft-' }, Status: 'Enabled', Expiration: { Days: 7 } },
      { ID: 'off', Filter: { Prefix: 'reports/' }, Status: 'Disabled', Expiration: { Days: 1 } },
    ]);
    const before = Date.now();
    const put = await s3.send(new PutObjectCommand({ Bucket: 'announced', Key: 'reports/draft-q3', Body: 'numbers' }));
    expect(put.Expiration).toMatch(/^expiry-date="[^"]+", rule-id="week"$/);
    // Seven lifecycle days (a second each here), counted from the write rounded up to a whole day.
    const expiry = Date.parse(/expiry-date="([^"]+)"/.exec(put.Expiration!)![1]!);
    expect(expiry).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 7000);
    expect(expiry).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) * 1000 + 8000);
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'announced', Key: 'reports/draft-q3' }));
    expect(head.Expiration).toBe(put.Expiration);
    const untouched = await s3.send(new PutObjectCommand({ Bucket: 'announced', Key: 'kept/forever', Body: 'x' }));
    expect(untouched.Expiration).toBeUndefined();
  });
});

describe('the background work applies the rules', () => {
  test('current objects past their days are deleted, others stay, and the freed bytes leave the usage', async () => {
    const bucket = await createBucket(server, server.org, 'expiring');
    const body = 'x'.repeat(10_000);
    for (const name of ['logs/a', 'logs/b', 'keep/c']) await s3.send(new PutObjectCommand({ Bucket: 'expiring', Key: name, Body: body }));
    // The bucket's own usage: the organization's also holds the other tests' objects, some of
    // which expire meanwhile.
    const bucketBytes = async () =>
      ((await storageUsage.meteredResources(server.pool)).find((resource) => resource.resourceId === bucket.id)?.ratesPerHour
        .storage_gb_month ?? 0) * BYTES_PER_BILLED_GB;
    await settles(async () => expect(await bucketBytes()).toBe(30_000));
    const before = await usageBytes();
    await setRules('expiring', [
      { ID: 'logs', Filter: { Prefix: 'logs/' }, Status: 'Enabled', Expiration: { Days: 1 } },
      { ID: 'off', Filter: { Prefix: 'keep/' }, Status: 'Disabled', Expiration: { Days: 1 } },
    ]);
    await settles(async () => expect(await keysOf('expiring')).toEqual(['keep/c']));
    await settles(async () => expect(await bucketBytes()).toBe(10_000));
    // The organization's usage lost the two objects' bytes (and, at most, the other tests' few).
    await settles(async () => {
      const freed = before - (await usageBytes());
      expect(freed).toBeGreaterThanOrEqual(20_000);
      expect(freed).toBeLessThan(20_100);
    });
    // What metering bills as stored from now on: the bytes that stayed.
    await settles(async () => {
      const metered = await storageUsage.meteredResources(server.pool);
      expect(metered.find((resource) => resource.resourceId === bucket.id)?.ratesPerHour.storage_gb_month).toBe(
        10_000 / BYTES_PER_BILLED_GB,
      );
    });
  });

  test('in a versioned bucket: the current version gets a delete marker, old versions go (the newest kept), lone markers go', async () => {
    await createBucket(server, server.org, 'history', { versioning: true });
    for (const content of ['v1', 'v2', 'v3']) await s3.send(new PutObjectCommand({ Bucket: 'history', Key: 'doc', Body: content }));
    await s3.send(new PutObjectCommand({ Bucket: 'history', Key: 'gone', Body: 'soon deleted' }));
    const removed = await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'gone' }));
    const versions = async () =>
      ((await s3.send(new ListObjectVersionsCommand({ Bucket: 'history', Prefix: 'doc' }))).Versions ?? []).map((version) => [
        version.Key,
        version.IsLatest,
      ]);
    // Noncurrent versions first: v1 goes, v2 (the newest noncurrent) stays.
    await setRules('history', [
      { ID: 'old', Filter: {}, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 1, NewerNoncurrentVersions: 1 } },
    ]);
    await settles(async () => {
      expect(await versions()).toEqual([
        ['doc', true],
        ['doc', false],
      ]);
    });
    // Then the current one expires behind a delete marker, and lone markers go.
    await setRules('history', [{ ID: 'all', Filter: {}, Status: 'Enabled', Expiration: { Days: 1 } }]);
    await settles(async () => expect(await keysOf('history')).toEqual([]));
    const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: 'history' }));
    expect(listed.DeleteMarkers?.find((marker) => marker.Key === 'doc')?.IsLatest).toBe(true);
    await setRules('history', [{ ID: 'markers', Filter: {}, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } }]);
    // 'gone' only had its version deleted by hand; its marker stays while the version is there.
    await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'gone', VersionId: (await versionsOf('history', 'gone'))[0] }));
    await settles(async () => {
      const markers = (await s3.send(new ListObjectVersionsCommand({ Bucket: 'history' }))).DeleteMarkers ?? [];
      expect(markers.map((marker) => marker.VersionId)).not.toContain(removed.VersionId);
    });
  });

  test('unfinished multipart uploads are aborted after their days; versions under object lock stay', async () => {
    await createBucket(server, server.org, 'kept', { versioning: true });
    await s3.send(new PutObjectLockConfigurationCommand({ Bucket: 'kept', ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } }));
    const held = await s3.send(new PutObjectCommand({ Bucket: 'kept', Key: 'evidence', Body: 'v1', ObjectLockLegalHoldStatus: 'ON' }));
    await s3.send(new PutObjectCommand({ Bucket: 'kept', Key: 'evidence', Body: 'v2' }));
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'kept', Key: 'tmp/big' }));
    await s3.send(new UploadPartCommand({ Bucket: 'kept', Key: 'tmp/big', UploadId: upload.UploadId, PartNumber: 1, Body: 'part' }));
    await setRules('kept', [
      { ID: 'uploads', Filter: { Prefix: 'tmp/' }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
      { ID: 'old', Filter: {}, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 1 } },
    ]);
    await settles(async () => expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: 'kept' }))).Uploads ?? []).toEqual([]));
    // Several runs later, the held version is still there.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(await versionsOf('kept', 'evidence')).toContain(held.VersionId);
  });
});

describe('several processes', () => {
  test('running the rules at once (this server and two more stores on the same database) expires each object once', async () => {
    const org = await server.createOrg('Busy Logs Ltd');
    await createBucket(server, org, 'busy');
    const client = s3Client(server, await createAccessKey(server, org));
    const names = [
      ...Array.from({ length: 230 }, (_, index) => `old/${index}`),
      ...Array.from({ length: 20 }, (_, index) => `new/${index}`),
    ];
    for (let at = 0; at < names.length; at += 25)
      await Promise.all(
        names.slice(at, at + 25).map((name) => client.send(new PutObjectCommand({ Bucket: 'busy', Key: name, Body: 'x'.repeat(1000) }))),
      );
    // Two more stores, as other processes sharing the database hold them, run the same rules at the same time.
    const others = await Promise.all(
      [1, 2].map(() =>
        createEmbeddedObjectStore({
          pool: server.pool,
          dataDir: server.dataDir,
          secretKey: undefined,
          faults: new FaultInjector(server.pool, []),
        }),
      ),
    );
    try {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      await client.send(
        new PutBucketLifecycleConfigurationCommand({
          Bucket: 'busy',
          LifecycleConfiguration: { Rules: [{ ID: 'old', Filter: { Prefix: 'old/' }, Status: 'Enabled', Expiration: { Days: 1 } }] },
        }),
      );
      await Promise.all(others.map((store) => store.lifecycle.run()));
    } finally {
      await Promise.all(others.map((store) => store.close()));
    }
    let listed: string[] = [];
    await settles(async () => {
      listed = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: 'busy', ContinuationToken: token }));
        listed.push(...(page.Contents ?? []).map((item) => item.Key!));
        token = page.NextContinuationToken;
      } while (token);
      expect(listed.sort()).toEqual(names.filter((name) => name.startsWith('new/')).sort());
    });
    // The usage fell by what went, once: not twice for the objects two runs both chose.
    await settles(async () => expect((await org.call('GET', '/s3/quota')).body.usage_bytes).toBe(20_000));
  });
});

async function versionsOf(bucket: string, name: string): Promise<string[]> {
  const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: name }));
  return (listed.Versions ?? []).filter((version) => version.Key === name).map((version) => version.VersionId!);
}
