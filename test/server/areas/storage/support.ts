// Helpers of the object-storage tests: the simulated object store as an S3 client sees it
// (objects put and deleted directly in the simulator the server uses), and bucket shortcuts.
import { expect } from 'vitest';
import { FaultInjector } from '../../../../server/drivers/simulators/faults.ts';
import { createObjectStoreSimulator, type ObjectStoreSimulator } from '../../../../server/drivers/simulators/object-store.ts';
import type { TestOrg, TestServer } from '../../../support/server.ts';

export const GiB = 1024 ** 3;

/** Settings of the rgw driver that need no Ceph: a gateway address nothing answers at, unless a test says otherwise. */
export const RGW = {
  OBJECT_STORE_DRIVER: 'rgw',
  RGW_ENDPOINT: 'http://127.0.0.1:7480',
  RGW_ADMIN_ACCESS_KEY: 'ADMINKEY',
  RGW_ADMIN_SECRET_KEY: 'admin-secret',
};

/** The simulator on the test server's database: it sees and changes what the server's sees. */
export function objectStoreOf(server: TestServer): ObjectStoreSimulator {
  return createObjectStoreSimulator({ pool: server.pool, latencyMs: [0, 0], faults: new FaultInjector(server.pool, []) });
}

/** A bucket created and active (its bucket.create operation succeeded). */
export async function activeBucket(server: TestServer, org: TestOrg, name: string, versioning = false): Promise<any> {
  const created = await org.call('POST', '/s3/buckets', { body: { name, versioning } });
  expect(created.status, created.text).toBe(202);
  const operation = await server.waitForOperation(org, created.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
  return (await org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).body;
}

/** Soft-deletes a bucket and waits for its bucket.delete operation. */
export async function softDeleted(server: TestServer, org: TestOrg, bucketId: string): Promise<any> {
  const deleted = await org.call('DELETE', `/s3/buckets/${bucketId}`);
  expect(deleted.status, deleted.text).toBe(202);
  const operation = await server.waitForOperation(org, deleted.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
  return (await org.call('GET', `/s3/buckets/${bucketId}`)).body;
}

export { eventually } from '../../../support/eventually.ts';
