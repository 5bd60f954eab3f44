// Each instance of the store (a server has two: its driver's, and its S3 thread's) holds an
// advisory lock that tells the other instances' sweeps it is alive,
// so that they leave its writes in flight alone. The lock survives a lost connection: the server
// takes it again once the connection is back. While it was lost, another process's sweep may take
// the process's reservations and mark their files as garbage: a write whose reservation went is
// refused as it commits (503, for the client to retry), rather than made visible with bytes the
// sweep removes.
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { request as httpRequest } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { INSTANCE_LOCK_NAMESPACE } from '../../../../../server/drivers/embedded/store.ts';
import { createAccessKey, createBucket, MiB, s3Client, s3ErrorOf, settles, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;
let observer: pg.Client;

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, server.org, 'in-flight');
  s3 = s3Client(server, await createAccessKey(server, server.org));
  observer = new pg.Client({ connectionString: server.databaseUrl });
  await observer.connect();
}, 120_000);

afterAll(async () => {
  await observer?.end();
  await server?.close();
});

/** The backends holding a store instance lock in this test's database (others run beside it), with their application_name. */
async function instanceLockHolders(): Promise<Array<{ pid: number; application_name: string }>> {
  const { rows } = await observer.query<{ pid: number; application_name: string }>(
    `SELECT l.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)
     WHERE l.locktype = 'advisory' AND l.classid::bigint = $1 AND l.granted
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [INSTANCE_LOCK_NAMESPACE],
  );
  return rows;
}

test('the instance locks are taken again once their connections, lost, are back', async () => {
  // Two instances of the store in a server: the driver's (operations, sweeps) and the S3 thread's (requests).
  const before = await instanceLockHolders();
  expect(before).toEqual([
    { pid: expect.any(Number), application_name: 'cloud-platform-listener' },
    { pid: expect.any(Number), application_name: 'cloud-platform-listener' },
  ]);
  for (const holder of before) await observer.query('SELECT pg_terminate_backend($1)', [holder.pid]);
  await settles(async () => {
    const after = await instanceLockHolders();
    expect(after).toHaveLength(2);
    for (const holder of after) expect(before.map((old) => old.pid)).not.toContain(holder.pid);
  }, 10_000);
  await s3.send(new PutObjectCommand({ Bucket: 'in-flight', Key: 'after-reconnect.txt', Body: 'written' }));
});

test('a lock another session still holds (the lost connection, not yet seen gone) is taken once released, and the listener serves meanwhile', async () => {
  const [holder] = await instanceLockHolders();
  const { rows } = await observer.query<{ objid: number }>(
    `SELECT objid::bigint AS objid FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND classid::bigint = $2`,
    [holder!.pid, INSTANCE_LOCK_NAMESPACE],
  );
  const instance = Number(rows[0]!.objid);
  // The observer takes the lock the moment the server's connection is gone, before it reconnects.
  await observer.query('SELECT pg_terminate_backend($1)', [holder!.pid]);
  await settles(async () => {
    const taken = await observer.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS held', [
      INSTANCE_LOCK_NAMESPACE,
      instance,
    ]);
    expect(taken.rows[0]!.held).toBe(true);
  }, 5_000);
  // The server's new connection listens meanwhile, waiting on no lock.
  await settles(async () => {
    const listener = await observer.query<{ wait_event_type: string | null }>(
      `SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'cloud-platform-listener' AND datname = current_database()`,
    );
    expect(listener.rows).toHaveLength(2);
    for (const row of listener.rows) expect(row.wait_event_type).not.toBe('Lock');
  }, 5_000);
  await observer.query('SELECT pg_advisory_unlock($1, $2)', [INSTANCE_LOCK_NAMESPACE, instance]);
  await settles(async () => {
    const after = await instanceLockHolders();
    expect(after).toHaveLength(2);
    expect(after.map((holder) => holder.pid)).not.toContain(holder!.pid);
  }, 10_000);
});

test('a write whose reservation a sweep took is refused as it commits with 503 (an outage: retry), and nothing of it is stored', async () => {
  const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'in-flight', Key: 'swept.bin' }), { expiresIn: 300 });
  const upload = httpRequest(url, { method: 'PUT', headers: { 'Content-Length': String(2 * MiB) } });
  const status = new Promise<{ status: number; code: string | undefined; retryAfter: string | undefined }>((resolve, reject) => {
    upload.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          code: /<Code>([^<]*)<\/Code>/.exec(body)?.[1],
          retryAfter: response.headers['retry-after'],
        }),
      );
    });
    upload.on('error', reject);
  });
  upload.write(Buffer.alloc(MiB, 1));
  // While the body streams in, what another process's sweep does to the reservations of a process
  // whose lock it could take: they go, and their files become garbage.
  await settles(async () => expect((await observer.query('SELECT count(*)::int AS n FROM store_reservations')).rows[0].n).toBe(1));
  await observer.query(
    'WITH gone AS (DELETE FROM store_reservations RETURNING blob) INSERT INTO store_garbage (blob) SELECT blob FROM gone',
  );
  upload.end(Buffer.alloc(MiB, 2));
  // The sweep took it because the database lost this process's lock connection: an outage, which
  // the client retries (nothing was stored), never an internal error.
  expect(await status).toEqual({ status: 503, code: 'ServiceUnavailable', retryAfter: '5' });
  expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'in-flight', Key: 'swept.bin' })))).toMatchObject({ status: 404 });
});
