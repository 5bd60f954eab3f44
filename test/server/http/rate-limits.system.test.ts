// Rate limits across server processes (npm start, twice, on one database): each process counts
// its own requests (README). The limits of one process: rate-limits.test.ts.
import { describe, expect, test } from 'vitest';
import { call, createTestDatabase, readBootstrap, startServerProcess } from '../../support/server.ts';

describe('several server processes on one database', () => {
  test('each process counts its own requests: a credential has the limit at each of them', async () => {
    const databaseUrl = await createTestDatabase();
    const env = { RATE_LIMIT: '2', RATE_LIMIT_WINDOW_SECONDS: '60' };
    const first = await startServerProcess(databaseUrl, env);
    try {
      const second = await startServerProcess(databaseUrl, env);
      try {
        const { org_id: orgId, api_key: apiKey } = await readBootstrap(first.dataDir);
        const path = `/v1/orgs/${orgId}/billing`;
        const statusesAt = async (url: string) => {
          const statuses = [];
          for (let index = 0; index < 3; index++) statuses.push((await call(url, 'GET', path, { defaultKey: apiKey })).status);
          return statuses;
        };
        expect(await statusesAt(first.url)).toEqual([200, 200, 429]);
        expect(await statusesAt(second.url)).toEqual([200, 200, 429]);
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
    }
  });
});
