// Liveness and readiness probes: no credential, outside the organization paths, in the contract.
// (Readiness through a database outage: outage.system.test.ts.)
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../../support/server.ts';

let server: TestServer;
let withoutBackground: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  withoutBackground = await startTestServer({ BACKGROUND_WORK: 'false' });
});
afterAll(async () => {
  await server?.close();
  await withoutBackground?.close();
});

describe('probes', () => {
  test('/healthz answers 200 without a credential, with the usual headers', async () => {
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(response.headers.get('ratelimit-limit')).not.toBeNull();
  });

  test('/readyz answers 200 with every check when the database, migrations and engine are in order', async () => {
    const response = await fetch(`${server.url}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', engine: 'ok' } });
  });

  test('a process without background work is ready without an engine', async () => {
    expect((await fetch(`${withoutBackground.url}/readyz`)).status).toBe(200);
  });

  test('a credential is not needed, and a bad one changes nothing', async () => {
    const response = await fetch(`${server.url}/healthz`, { headers: { Authorization: 'Bearer nonsense' } });
    expect(response.status).toBe(200);
  });

  test('other methods are 405 with Allow', async () => {
    const response = await fetch(`${server.url}/readyz`, { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
  });
});
