// PostgreSQL connections a server holds: each is a backend process of its own (10 to 25 MiB
// resident), and on a shared DATABASE_URL they count against the database's max_connections.
// A burst opens the pool's full size; once quiet, the server keeps only what it needs at rest:
// its own connection (it LISTENs for queued work and credential changes, and holds the object
// store's instance lock) and the API pool's first. The backends' pool keeps none: a background
// loop that calls a backend opens one for a moment.
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';

let server: TestServer;
let observer: pg.Client;

beforeAll(async () => {
  // As `npm start` runs: the embedded object store (its connections count too), and the
  // background loops at their default pace (the tests' own keep more connections busy).
  server = await startTestServer({
    OBJECT_STORE_DRIVER: 'embedded',
    WORKER_POLL_MS: '250',
    RECONCILE_INTERVAL_MS: '5000',
    METERING_INTERVAL_MS: '60000',
    SCHEDULER_INTERVAL_MS: '15000',
  });
  observer = new pg.Client({ connectionString: server.databaseUrl });
  await observer.connect();
});

afterAll(async () => {
  await observer?.end();
  await server?.close();
});

/** The server's connections to its database, by application_name (the observer's own left out). */
async function connections(): Promise<Record<string, number>> {
  const { rows } = await observer.query<{ name: string; count: number }>(
    `SELECT application_name AS name, count(*)::int AS count FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY application_name`,
  );
  return Object.fromEntries(rows.map((row) => [row.name, row.count]));
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, count) => sum + count, 0);

test("after a burst, the server goes back to its own connection and the API pool's first within seconds", async () => {
  const { org } = server;
  const get = () => org.call('GET', '/billing');
  // 24 requests at a time, until the pool is seen holding more than it keeps at rest (else this
  // test proves nothing): how soon that shows depends on the machine, so it is watched for.
  let busiest: Record<string, number> = {};
  const burstEnds = Date.now() + 30_000;
  const busy = () => (busiest['cloud-platform-api'] ?? 0) > 2;
  await Promise.all([
    ...Array.from({ length: 24 }, async () => {
      while (!busy() && Date.now() < burstEnds) {
        expect((await get()).status).toBe(200);
      }
    }),
    (async () => {
      while (!busy() && Date.now() < burstEnds) {
        const counts = await connections();
        if ((counts['cloud-platform-api'] ?? 0) > (busiest['cloud-platform-api'] ?? 0)) busiest = counts;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(),
  ]);
  expect(busiest['cloud-platform-api'], 'API connections during the burst').toBeGreaterThan(2);

  // A connection beyond those kept is closed after a second idle (pg's default, 10 s, kept them
  // all that long): 8 s leaves the machine seven seconds of slack and still tells the two apart.
  const restingBy = Date.now() + 8_000;
  let atRest = await connections();
  // Two listeners: the server's own and its S3 thread's (which holds the S3 thread's instance lock
  // of the store and hears credential changes); the S3 thread keeps no other connection at rest.
  const resting = (counts: Record<string, number>) =>
    counts['cloud-platform-listener'] === 2 &&
    (counts['cloud-platform-api'] ?? 0) <= 2 &&
    (counts['cloud-platform-backends'] ?? 0) === 0 &&
    (counts['cloud-platform-s3'] ?? 0) === 0 &&
    total(counts) <= 4;
  while (!resting(atRest) && Date.now() < restingBy) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    atRest = await connections();
  }
  expect(atRest, 'connections 8 s after the burst').toSatisfy(resting);
});
