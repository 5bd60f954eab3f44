// The limits of object storage on the real server: bucket slots (plan value and live override,
// soft-deleted buckets holding none, restore needing one), the spend budget, per-bucket quotas
// inside the organization ceiling, the ceiling itself (setQuota and its warning, enforcement by
// the object store), the organization context figures, and metering of stored bytes.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WriteRefusedError, type ObjectStoreSimulator } from '../../../../server/drivers/simulators/object-store.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { activeBucket, eventually, GiB, objectStoreOf, softDeleted } from './support.ts';

let server: TestServer;
let store: ObjectStoreSimulator;

beforeAll(async () => {
  server = await startTestServer();
  store = objectStoreOf(server);
});
afterAll(() => server?.close());

const setPlan = (org: TestOrg, planMaxBuckets: number, override: number | null) =>
  server.pool.query('UPDATE orgs SET plan_max_buckets = $2, max_buckets_override = $3 WHERE id = $1', [
    org.orgId,
    planMaxBuckets,
    override,
  ]);

const quotaFigures = async (org: TestOrg) => (await org.call('GET', '')).body.quota;

describe('organization context', () => {
  test('a new organization has the default figures before it ever used object storage', async () => {
    const fresh = await server.createOrg('Fresh Start');
    expect(await quotaFigures(fresh)).toEqual({
      buckets_used: 0,
      hard_bytes: 107374182400,
      max_buckets: 10,
      max_objects: 10000000,
      soft_bytes: 96636764160,
    });
  });
});

describe('bucket slots', () => {
  test('max_buckets is the plan value with the live override folded in', async () => {
    const org = await server.createOrg('Override AG');
    await setPlan(org, 10, 1);
    expect((await quotaFigures(org)).max_buckets).toBe(1);
    await activeBucket(server, org, 'the-only-one');
    const refused = await org.call('POST', '/s3/buckets', { body: { name: 'one-too-many' } });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('bucket_limit_reached');
    await setPlan(org, 10, null);
    expect((await quotaFigures(org)).max_buckets).toBe(10);
    expect((await org.call('POST', '/s3/buckets', { body: { name: 'one-too-many' } })).status).toBe(202);
  });

  test('a bucket being created holds a slot; a soft-deleted one does not; restoring needs a free slot', async () => {
    const org = await server.createOrg('Slots SA');
    await setPlan(org, 2, null);
    const first = await activeBucket(server, org, 'slot-one');
    const second = await org.call('POST', '/s3/buckets', { body: { name: 'slot-two' } });
    expect(second.status).toBe(202);
    // Still creating, and already counted.
    expect(await quotaFigures(org)).toMatchObject({ buckets_used: 2, max_buckets: 2 });
    const third = await org.call('POST', '/s3/buckets', { body: { name: 'slot-three' } });
    expect(third.status).toBe(409);
    expect(third.body.code).toBe('bucket_limit_reached');

    await softDeleted(server, org, first.id);
    expect((await quotaFigures(org)).buckets_used).toBe(1);
    expect((await org.call('GET', '/s3/buckets')).body.items).toHaveLength(2);
    expect((await org.call('POST', '/s3/buckets', { body: { name: 'slot-three' } })).status).toBe(202);

    const restore = await org.call('POST', `/s3/buckets/${first.id}/restore`);
    expect(restore.status).toBe(409);
    expect(restore.body.code).toBe('bucket_limit_reached');
    expect((await org.call('GET', `/s3/buckets/${first.id}`)).body.state).toBe('soft_deleted');

    await setPlan(org, 2, 3);
    const restored = await org.call('POST', `/s3/buckets/${first.id}/restore`);
    expect(restored.status, restored.text).toBe(202);
    expect(await quotaFigures(org)).toMatchObject({ buckets_used: 3, max_buckets: 3 });
  });
});

describe('spend budget', () => {
  test('a new bucket is refused while month-to-date charges are at or above the budget', async () => {
    const org = await server.createOrg('Thrifty Co');
    await server.pool.query(
      `INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 'vcpu_hour', 1000)`,
      [org.orgId],
    );
    expect((await org.call('PUT', '/billing', { body: { spend_budget_cents: 100 } })).status).toBe(200);
    const refused = await org.call('POST', '/s3/buckets', { body: { name: 'over-budget' } });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('spend_budget_exceeded');
    expect((await org.call('GET', '/s3/buckets')).body.items).toEqual([]);

    expect((await org.call('PUT', '/billing', { body: { spend_budget_cents: null } })).status).toBe(200);
    expect((await org.call('POST', '/s3/buckets', { body: { name: 'over-budget' } })).status).toBe(202);
  });
});

describe('setBucketQuota', () => {
  test('sets caps as desired at once and as observed once the operation has run', async () => {
    const org = server.org;
    const bucket = await activeBucket(server, org, 'capped');
    const accepted = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_objects: 3, max_size_bytes: 1000 } });
    expect(accepted.status, accepted.text).toBe(202);
    expect(accepted.body.bucket).toMatchObject({
      state: 'active',
      quota: { max_objects: 3, max_size_bytes: 1000 },
      operation_id: accepted.body.operation.id,
    });
    expect(accepted.body.operation).toMatchObject({ type: 'bucket.quota', resource_id: bucket.id });
    await server.waitForOperation(org, accepted.body.operation.id);
    expect((await org.call('GET', `/s3/buckets/${bucket.id}`)).body.observed_quota).toEqual({ max_objects: 3, max_size_bytes: 1000 });

    // The store enforces it.
    const location = { orgId: org.orgId, bucket: 'capped' };
    await store.putObject({ ...location, key: 'a', sizeBytes: 600 });
    await expect(store.putObject({ ...location, key: 'b', sizeBytes: 600 })).rejects.toThrow(WriteRefusedError);

    // null removes a cap; an omitted field stays.
    const removed = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_size_bytes: null } });
    expect(removed.body.bucket.quota).toEqual({ max_objects: 3, max_size_bytes: null });
    await server.waitForOperation(org, removed.body.operation.id);
    expect((await org.call('GET', `/s3/buckets/${bucket.id}`)).body.observed_quota).toEqual({ max_objects: 3, max_size_bytes: null });
  });

  test('max_size_bytes must fit inside the organization ceiling', async () => {
    const org = await server.createOrg('Ceiling Partners');
    const bucket = await activeBucket(server, org, 'under-ceiling');
    const above = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_size_bytes: 100 * GiB + 1 } });
    expect(above.status).toBe(400);
    expect(above.body.code).toBe('bucket_quota_exceeds_ceiling');
    expect(above.body.errors).toEqual([
      { pointer: '/max_size_bytes', detail: 'must not exceed the organization ceiling of 107374182400 bytes' },
    ]);
    expect((await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_size_bytes: 100 * GiB } })).status).toBe(202);

    expect((await org.call('PUT', '/s3/quota', { body: { hard_bytes: 2 * GiB } })).status).toBe(200);
    const lowered = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_size_bytes: 3 * GiB } });
    expect(lowered.body.code).toBe('bucket_quota_exceeds_ceiling');
    // Caps set earlier are not changed by a lower ceiling.
    expect((await org.call('GET', `/s3/buckets/${bucket.id}`)).body.quota.max_size_bytes).toBe(100 * GiB);
  });

  test('an empty change is accepted and changes nothing: its operation has already succeeded', async () => {
    const org = server.org;
    const bucket = await activeBucket(server, org, 'quota-empty');
    const response = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: {} });
    expect(response.status, response.text).toBe(202);
    expect(response.body.bucket.quota).toEqual(bucket.quota);
    expect(response.body.operation).toMatchObject({ type: 'bucket.quota', state: 'succeeded', finished_at: expect.any(String) });
    const read = await org.call('GET', `/s3/buckets/${bucket.id}`);
    expect(read.body.quota).toEqual(bucket.quota);
    expect(read.body.state).toBe('active');
  });

  test('refuses an unknown body, out-of-range values, and buckets that are not active', async () => {
    const org = server.org;
    const bucket = await activeBucket(server, org, 'quota-rules');
    for (const body of [{ max_objects: 0 }, { max_size_bytes: -1 }, { max_objects: '5' }, { max_files: 5 }]) {
      const response = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe('validation_failed');
    }
    await softDeleted(server, org, bucket.id);
    const conflict = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_objects: 5 } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('bucket_state_conflict');
  });
});

describe('organization ceiling', () => {
  test('a new organization: the default ceiling, nothing enforced or measured', async () => {
    const org = await server.createOrg('No Sample Ltd');
    expect((await org.call('GET', '/s3/quota')).body).toEqual({
      cap_bytes: 107374182400,
      cap_objects: 10000000,
      soft_bytes: 96636764160,
      enforced_bytes: null,
      enforced_objects: null,
      usage_bytes: null,
      usage_objects: null,
      frozen_reason: null,
      warning: null,
    });
  });

  test('without a usage sample the warning is null, even for the floor; the store then confirms the ceiling', async () => {
    const org = await server.createOrg('Floor Inc');
    const response = await org.call('PUT', '/s3/quota', { body: { hard_bytes: GiB } });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({ cap_bytes: GiB, soft_bytes: 966367641, usage_bytes: null, warning: null, frozen_reason: null });
    expect((await quotaFigures(org)).hard_bytes).toBe(GiB);
    const confirmed = await eventually(async () => {
      const quota = (await org.call('GET', '/s3/quota')).body;
      return quota.enforced_bytes === GiB ? quota : undefined;
    }, 'the store to enforce the ceiling');
    expect(confirmed).toMatchObject({ enforced_objects: 10000000, usage_bytes: 0, usage_objects: 0, warning: null });
  });

  test('below the measured usage: success with below_current_usage, writes frozen until the ceiling is raised', async () => {
    const org = await server.createOrg('Hoarders plc');
    await activeBucket(server, org, 'big-data', true);
    await store.putObject({ orgId: org.orgId, bucket: 'big-data', key: 'dump', sizeBytes: 3 * GiB });
    await eventually(async () => ((await org.call('GET', '/s3/quota')).body.usage_bytes === 3 * GiB ? true : undefined), 'a usage sample');

    const lowered = await org.call('PUT', '/s3/quota', { body: { hard_bytes: GiB } });
    expect(lowered.status).toBe(200);
    expect(lowered.body).toMatchObject({
      cap_bytes: GiB,
      usage_bytes: 3 * GiB,
      usage_objects: 1,
      warning: 'below_current_usage',
      frozen_reason: 'over_ceiling',
    });
    expect((await org.call('GET', '/s3/quota')).body).toMatchObject({ warning: null, frozen_reason: 'over_ceiling' });

    await eventually(
      async () => ((await org.call('GET', '/s3/quota')).body.enforced_bytes === GiB ? true : undefined),
      'the lower ceiling to be enforced',
    );
    await expect(store.putObject({ orgId: org.orgId, bucket: 'big-data', key: 'more', sizeBytes: 1 })).rejects.toThrow(WriteRefusedError);

    // Above usage: no warning, nothing frozen, and writes resume once the store enforces it.
    const raised = await org.call('PUT', '/s3/quota', { body: { hard_bytes: 5 * GiB } });
    expect(raised.body).toMatchObject({ cap_bytes: 5 * GiB, warning: null, frozen_reason: null });
    await eventually(
      async () => ((await org.call('GET', '/s3/quota')).body.enforced_bytes === 5 * GiB ? true : undefined),
      'the raised ceiling to be enforced',
    );
    await store.putObject({ orgId: org.orgId, bucket: 'big-data', key: 'more', sizeBytes: 1 });
  });

  test('a suspended billing account freezes writes: frozen_reason billing_suspended', async () => {
    const org = await server.createOrg('Unpaid Ltd');
    await activeBucket(server, org, 'unpaid-bucket');
    await store.putObject({ orgId: org.orgId, bucket: 'unpaid-bucket', key: 'before', sizeBytes: 1 });
    await server.pool.query(`UPDATE billing_accounts SET state = 'suspended' WHERE org_id = $1`, [org.orgId]);
    expect((await org.call('GET', '/s3/quota')).body.frozen_reason).toBe('billing_suspended');
    await eventually(
      () =>
        store.putObject({ orgId: org.orgId, bucket: 'unpaid-bucket', key: 'after', sizeBytes: 1 }).then(
          () => undefined,
          (error: unknown) => (error instanceof WriteRefusedError ? error.reason : undefined),
        ),
      'the store to stop writes',
    ).then((reason) => expect(reason).toBe('writes_suspended'));
    // Deletes keep working.
    await store.deleteObject({ orgId: org.orgId, bucket: 'unpaid-bucket', key: 'before' });
  });

  test('hard_bytes must be a JSON integer from the platform floor to the platform maximum', async () => {
    const org = await server.createOrg('Bounds GmbH');
    for (const body of [
      { hard_bytes: GiB - 1 },
      { hard_bytes: 1024 ** 5 + 1 },
      { hard_bytes: String(2 * GiB) },
      { hard_bytes: 2 * GiB + 0.5 },
      {},
      { hard_bytes: 2 * GiB, soft_bytes: 1 },
    ]) {
      const response = await org.call('PUT', '/s3/quota', { body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe('validation_failed');
    }
    expect((await org.call('PUT', '/s3/quota', { body: { hard_bytes: 1024 ** 5 } })).body).toMatchObject({
      cap_bytes: 1024 ** 5,
      soft_bytes: 1013309916158361,
    });
    const reader = await org.memberKey('member', ['read']);
    expect((await org.call('PUT', '/s3/quota', { body: { hard_bytes: 2 * GiB }, key: reader })).status).toBe(403);
  });
});

describe('metering', () => {
  test('stored bytes accrue as storage_gb_month', async () => {
    const org = await server.createOrg('Archive AB');
    expect((await org.call('PUT', '/s3/quota', { body: { hard_bytes: 1024 ** 5 } })).status).toBe(200);
    await activeBucket(server, org, 'cold-archive');
    await eventually(
      async () => ((await org.call('GET', '/s3/quota')).body.enforced_bytes === 1024 ** 5 ? true : undefined),
      'the ceiling to be enforced',
    );
    await store.putObject({ orgId: org.orgId, bucket: 'cold-archive', key: 'tape', sizeBytes: 500 * 1024 ** 4 });
    const billed = await eventually(async () => {
      const storage = Number((await org.call('GET', '/billing')).body.month_to_date.storage_gb_month);
      return storage > 0 ? storage : undefined;
    }, 'storage to be metered');
    expect(billed).toBeGreaterThan(0);
  });
});
