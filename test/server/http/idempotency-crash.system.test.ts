// An Idempotency-Key left by a process killed mid-request is released as soon as that process is
// known dead (its database session ends with it), not after a fixed lock: the client's retry, on
// another process, runs at once, and exactly one change is made.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import type { Started } from '../../support/processes.ts';
import { call, createTestDatabase, readBootstrap, startServerProcess } from '../../support/server.ts';

let databaseUrl: string;
let db: pg.Pool;
const processes: Started[] = [];

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  db = new pg.Pool({ connectionString: databaseUrl, max: 3 });
});

afterAll(async () => {
  await Promise.all(processes.map((started) => started.stop()));
  await db?.end();
});

test('a retry on another process runs at once once the process holding the key was killed (SIGKILL)', async () => {
  const doomed = await startServerProcess(databaseUrl, { BACKGROUND_WORK: 'false' });
  processes.push(doomed);
  const survivor = await startServerProcess(databaseUrl, { BACKGROUND_WORK: 'false' });
  processes.push(survivor);
  const { org_id: orgId, api_key: apiKey } = await readBootstrap(doomed.dataDir, doomed);
  const key = randomUUID();
  const createKey = (url: string) =>
    call(url, 'POST', `/v1/orgs/${orgId}/api-tokens`, {
      defaultKey: apiKey,
      body: { name: 'created once' },
      headers: { 'Idempotency-Key': key },
    });

  // The first request claims its key, then its change waits on a lock the test holds: the wrong
  // moment to be killed.
  const blocker = await db.connect();
  await blocker.query('BEGIN');
  await blocker.query('LOCK TABLE api_tokens IN SHARE ROW EXCLUSIVE MODE');
  const first = createKey(doomed.url).catch((error: unknown) => error);
  await eventually(
    async () => ((await db.query('SELECT 1 FROM idempotency_keys WHERE key = $1', [key])).rowCount === 1 ? true : undefined),
    'the first request to claim its key',
  );
  process.kill(-doomed.child.pid!, 'SIGKILL');
  await new Promise((resolve) => doomed.child.once('exit', resolve));
  await blocker.query('ROLLBACK');
  blocker.release();
  expect(await first).toBeInstanceOf(Error);

  // Its key is still claimed, for a lock of a minute, but its process is gone: the retry runs.
  const retry = await createKey(survivor.url);
  expect(retry.status, retry.text).toBe(201);
  expect(retry.headers.get('idempotent-replayed')).toBeNull();
  const replay = await createKey(survivor.url);
  expect(replay.status).toBe(201);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  expect(replay.body.token.id).toBe(retry.body.token.id);
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_tokens WHERE name = 'created once'`);
  expect(rows[0]!.n).toBe(1);
});
