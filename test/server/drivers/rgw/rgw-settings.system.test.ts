// `npm start` with the rgw driver, no Ceph needed: users are told the gateway's public address, and
// no S3 endpoint of the platform's own is started. Settings and an unreachable gateway: rgw-settings.test.ts.
import { afterAll, describe, expect, test } from 'vitest';
import { freePort, type Started } from '../../../support/processes.ts';
import { createTestDatabase, readBootstrap, startServerProcess } from '../../../support/server.ts';
import { RGW } from '../../areas/storage/support.ts';

describe('npm start with the rgw driver', () => {
  let running: Started | undefined;
  afterAll(async () => running?.stop());

  test("tells users the gateway's public address (bootstrap.json s3_endpoint) and starts no S3 endpoint of its own", async () => {
    const [closed, s3Port] = [await freePort(), await freePort()];
    const started = await startServerProcess(await createTestDatabase(), {
      ...RGW,
      RGW_ENDPOINT: `http://127.0.0.1:${closed}`,
      RGW_PUBLIC_URL: 'https://s3.example.test',
      S3_PORT: String(s3Port),
    });
    running = started;
    expect((await readBootstrap(started.dataDir)).s3_endpoint).toBe('https://s3.example.test');
    // The embedded endpoint serves only the embedded store: nothing listens on S3_PORT.
    const embedded = await fetch(`http://127.0.0.1:${s3Port}/`).then(
      () => 'answered',
      () => 'refused',
    );
    expect(embedded).toBe('refused');
  });
});
