import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

test('smoke', async () => {
  const response = await server.org.call('GET', '');
  expect(response.status).toBe(200);
});
