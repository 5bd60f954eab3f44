// The rgw driver's settings and failures that need no Ceph: settings checked at start with
// one-line errors; a gateway that cannot be reached makes operations retry, then fail with the
// platform's fixed phrase, and a request that needs it answer 503. `npm start` with the rgw
// driver: rgw-settings.system.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../../../server/config.ts';
import { freePort } from '../../../support/processes.ts';
import { startTestServer, type TestServer } from '../../../support/server.ts';
import { RGW } from '../../areas/storage/support.ts';

describe('settings', () => {
  test('OBJECT_STORE_DRIVER=rgw takes the endpoint, the public URL and the admin credentials', () => {
    expect(loadConfig({ ...RGW, RGW_PUBLIC_URL: 'https://s3.example.com/' }).rgw).toEqual({
      endpoint: 'http://127.0.0.1:7480',
      publicUrl: 'https://s3.example.com',
      region: 'us-east-1',
      adminAccessKey: 'ADMINKEY',
      adminSecretKey: 'admin-secret',
      timeoutMs: 10_000,
    });
    // Users are told the endpoint itself when no public URL is set; S3_PUBLIC_URL also names it.
    expect(loadConfig(RGW).rgw?.publicUrl).toBe('http://127.0.0.1:7480');
    expect(loadConfig({ ...RGW, S3_PUBLIC_URL: 'https://objects.example.com' }).rgw?.publicUrl).toBe('https://objects.example.com');
    expect(loadConfig({}).rgw).toBeUndefined();
  });

  test.each([
    [{ RGW_ENDPOINT: '' }, 'RGW_ENDPOINT is required when OBJECT_STORE_DRIVER is rgw'],
    [{ RGW_ENDPOINT: 'not a url' }, 'RGW_ENDPOINT must be a URL, not "not a url"'],
    [{ RGW_ADMIN_ACCESS_KEY: '' }, 'RGW_ADMIN_ACCESS_KEY is required when OBJECT_STORE_DRIVER is rgw'],
    [{ RGW_ADMIN_SECRET_KEY: '' }, 'RGW_ADMIN_SECRET_KEY is required when OBJECT_STORE_DRIVER is rgw'],
    [{ RGW_PUBLIC_URL: 'nope' }, 'RGW_PUBLIC_URL must be a URL, not "nope"'],
    [{ RGW_TIMEOUT_MS: '0' }, 'RGW_TIMEOUT_MS must be an integer from 100 to 600000, not "0"'],
    [{ OBJECT_STORE_DRIVER: 'ceph' }, 'OBJECT_STORE_DRIVER must be one of embedded, simulator, rgw, not "ceph"'],
  ])('%j stops start-up with one line', (change, message) => {
    expect(() => loadConfig({ ...RGW, ...change })).toThrow(new ConfigError(message));
  });
});

describe('a gateway that cannot be reached', () => {
  let server: TestServer;

  beforeAll(async () => {
    const closed = await freePort();
    server = await startTestServer({
      ...RGW,
      RGW_ENDPOINT: `http://127.0.0.1:${closed}`,
      OPERATION_MAX_ATTEMPTS: '3',
      RGW_TIMEOUT_MS: '500',
    });
  });
  afterAll(() => server?.close());

  test('a bucket operation is retried, then fails with the fixed phrase and leaves the bucket in error', async () => {
    const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'unreachable' } });
    expect(created.status).toBe(202);
    const operation = await server.waitForOperation(server.org, created.body.operation.id);
    expect(operation).toMatchObject({
      state: 'failed',
      attempt: 3,
      error_class: 'backend_unavailable',
      error_detail: 'The object store was unavailable after 3 attempts. [bucket.create]',
    });
    expect((await server.org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).body.state).toBe('error');
  });

  test('creating an access key (its secret goes to the gateway at once) answers 503 with Retry-After', async () => {
    const response = await server.org.call('POST', '/s3/access-keys');
    expect(response.status).toBe(503);
    expect(response.body.code).toBe('service_unavailable');
    expect(response.headers.get('retry-after')).not.toBeNull();
    expect((await server.org.call('GET', '/s3/access-keys')).body.items).toEqual([]);
  });
});
