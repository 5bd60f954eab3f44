// The API and the object store never disagree about a bucket, whatever door a change comes
// through (issue 28): on the embedded store S3's bucket operations are the platform's own; on
// Ceph's gateway (rgw driver), where S3 clients talk to RGW directly, a key may not delete a
// bucket behind the platform's back (the bucket's policy refuses it, names.ts), and what is
// changed in the store directly (versioning switched, a bucket removed by its operator) is
// observed by the reconciler and recorded, with an audit event by the platform.
import {
  DeleteBucketCommand,
  DeleteBucketPolicyCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createAdminOps } from '../../../../server/drivers/rgw/admin-ops.ts';
import { tenantOf } from '../../../../server/drivers/rgw/names.ts';
import { createSignedHttp } from '../../../../server/drivers/rgw/signed-http.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { s3ErrorOf, settles } from '../../drivers/embedded/s3/support.ts';
import { issuedAccessKey, s3Client, type StorageDriverFactory, type StorageDriverUnderTest } from './drivers.ts';
import { activeBucket } from './support.ts';

/** The tests of one store; run on the embedded store (s3-bucket-changes.test.ts) and on Ceph's gateway (the .system.test.ts). */
export function bucketChangeTests(factory: StorageDriverFactory): void {
  let driver: StorageDriverUnderTest;
  let server: TestServer;

  beforeAll(async () => {
    driver = await factory.start();
    server = await startTestServer(driver.env);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await driver?.stop();
  });

  async function tenant(name: string, bucket: string): Promise<{ org: TestOrg; bucketId: string; client: S3Client }> {
    const org = await server.createOrg(name);
    const made = (await activeBucket(server, org, bucket)) as { id: string };
    const client = s3Client(driver.s3Endpoint(server)!, await issuedAccessKey(server, org));
    return { org, bucketId: made.id, client };
  }

  const bucketOf = async (org: TestOrg, bucketId: string) => (await org.call('GET', `/s3/buckets/${bucketId}`)).body;
  const auditOf = async (org: TestOrg, bucketId: string) =>
    (await org.call('GET', `/audit-events?resource_id=${bucketId}`)).body.items as Array<{ action: string; actor_realm: string }>;

  test(
    factory.name === 'rgw'
      ? "S3's DeleteBucket is refused by RGW (the platform's guard): the bucket stays, active and serving"
      : "S3's DeleteBucket is the platform's soft delete: the API shows the bucket soft_deleted",
    async () => {
      const { org, bucketId, client } = await tenant('Deleters', 'empty-one');
      if (factory.name === 'rgw') {
        expect(await s3ErrorOf(client.send(new DeleteBucketCommand({ Bucket: 'empty-one' })))).toEqual({
          code: 'AccessDenied',
          status: 403,
        });
        // Nor can the key take the guard away, or replace it.
        expect(await s3ErrorOf(client.send(new DeleteBucketPolicyCommand({ Bucket: 'empty-one' })))).toEqual({
          code: 'AccessDenied',
          status: 403,
        });
        const open = JSON.stringify({
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3::${tenantOf(org.orgId)}:empty-one/*` },
          ],
        });
        expect(await s3ErrorOf(client.send(new PutBucketPolicyCommand({ Bucket: 'empty-one', Policy: open })))).toEqual({
          code: 'AccessDenied',
          status: 403,
        });
        await client.send(new PutObjectCommand({ Bucket: 'empty-one', Key: 'still-serving', Body: 'yes' }));
        await settles(async () => expect(await bucketOf(org, bucketId)).toMatchObject({ state: 'active', observed_exists: true }), 30_000);
      } else {
        await client.send(new DeleteBucketCommand({ Bucket: 'empty-one' }));
        expect((await bucketOf(org, bucketId)).state).toBe('soft_deleted');
      }
    },
  );

  test("versioning switched through S3 is the bucket's versioning in the API too, with an audit event", async () => {
    const { org, bucketId, client } = await tenant('Versioners', 'switched');
    await client.send(new PutBucketVersioningCommand({ Bucket: 'switched', VersioningConfiguration: { Status: 'Enabled' } }));
    // The embedded endpoint changes it through the platform; RGW's change is seen by the reconciler.
    await settles(async () => expect(await bucketOf(org, bucketId)).toMatchObject({ versioning: true, observed_versioning: true }), 30_000);
    const event = (await auditOf(org, bucketId)).find((entry) => entry.action === 'bucket.set_versioning');
    expect(event?.actor_realm).toBe(factory.name === 'rgw' ? 'system' : 's3_access_key');
  });

  test("a bucket removed from the store behind the platform's back is observed: the API shows it in error, and says why", async () => {
    const { org, bucketId } = await tenant('Vanishing', 'vanishing');
    if (factory.name === 'rgw') {
      const http = createSignedHttp({ endpoint: driver.env.RGW_ENDPOINT!, region: 'us-east-1', timeoutMs: 10_000 });
      const admin = createAdminOps(http, {
        accessKeyId: driver.env.RGW_ADMIN_ACCESS_KEY!,
        secretAccessKey: driver.env.RGW_ADMIN_SECRET_KEY!,
      });
      await admin.removeBucket(tenantOf(org.orgId), 'vanishing');
    } else {
      await server.pool.query('DELETE FROM store_buckets WHERE id = $1', [bucketId]);
    }
    await settles(async () => expect(await bucketOf(org, bucketId)).toMatchObject({ state: 'error', observed_exists: false }), 30_000);
    expect((await auditOf(org, bucketId)).map((entry) => [entry.action, entry.actor_realm])).toContainEqual([
      'bucket.observed_missing',
      'system',
    ]);
    // In error, it can be deleted through the API: the store holds nothing, so its record and name go.
    const deleted = await org.call('DELETE', `/s3/buckets/${bucketId}`);
    expect(deleted.status, deleted.text).toBe(202);
    expect((await server.waitForOperation(org, deleted.body.operation.id)).state).toBe('succeeded');
  });
}
