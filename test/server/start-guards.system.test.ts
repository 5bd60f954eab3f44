// What `npm start` makes sure of before and while it starts: one server per DATA_DIR (a second is
// refused, naming the first), ports checked before anything is made, and a start interrupted by a
// signal, or killed, stops where it is and leaves nothing half made.
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';
import { freePort, startProcess, waitForHttp, type Started } from '../support/processes.ts';
import { call, readBootstrap, TEST_ENV } from '../support/server.ts';
import { startStoppablePostgres, type StoppablePostgres } from '../support/stoppable-postgres.ts';

const running: Started[] = [];
let postgres: StoppablePostgres | undefined;
afterAll(async () => {
  postgres?.thaw();
  await Promise.all(running.map((started) => started.stop()));
  await postgres?.close();
});

/** `npm start` as a process of the test, with TEST_ENV and `env`. */
function spawnServer(env: Record<string, string>): Started {
  const started = startProcess(process.execPath, [path.join(repoRoot, 'scripts', 'start.mjs'), path.join(repoRoot, 'server', 'main.ts')], {
    ...TEST_ENV,
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    ...env,
  });
  running.push(started);
  return started;
}

function exited(started: Started): Promise<number | null> {
  return started.child.exitCode !== null || started.child.signalCode !== null
    ? Promise.resolve(started.child.exitCode)
    : new Promise((resolve) => started.child.once('exit', (code) => resolve(code)));
}

/** Whether the process exits within `ms`. */
async function exitsWithin(started: Started, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([exited(started).then(() => true), late]).finally(() => clearTimeout(timer));
}

/** What a process wrote that is not a JSON log line nor the Node 20 notice about tsx: what an operator reads. */
function plainLines(started: Started): string[] {
  return started
    .output()
    .trim()
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('{') && !line.includes('running through tsx'));
}

/** The messages of its JSON log lines. */
function logMessages(started: Started): string[] {
  return started
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { msg: string }).msg);
}

async function startEmbedded(dataDir: string, port: number): Promise<Started> {
  const started = spawnServer({ DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' });
  await waitForHttp(`http://127.0.0.1:${port}/v1/orgs/00000000-0000-0000-0000-000000000000`, started, 90_000);
  return started;
}

/** Stops whatever PostgreSQL a killed server left running in `dataDir`. */
function stopLeftPostgres(dataDir: string): void {
  try {
    process.kill(Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGINT');
  } catch {
    // None running.
  }
}

describe('one server per DATA_DIR', () => {
  test('a second start on the same DATA_DIR is refused, naming the running server; the first goes on serving', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-one-server-'));
    const [firstPort, secondPort] = [await freePort(), await freePort()];
    const first = await startEmbedded(dataDir, firstPort);
    const credentials = await readBootstrap(dataDir, first);
    await eventually(() => (logMessages(first).includes('listening') ? true : undefined), 'the first server to say it listens');

    const second = spawnServer({ DATA_DIR: dataDir, PORT: String(secondPort), DATABASE_URL: '' });
    expect(await exited(second)).toBe(1);
    expect(plainLines(second)).toEqual([
      `cloud-platform: DATA_DIR ${dataDir} is in use by another server (pid ${first.child.pid}, listening on http://127.0.0.1:${firstPort}): one server runs on a DATA_DIR at a time, as its embedded PostgreSQL is that server's; stop the other one first, or give this one another DATA_DIR.`,
    ]);
    const answer = await call(credentials.base_url, 'GET', `/v1/orgs/${credentials.org_id}/billing`, { defaultKey: credentials.api_key });
    expect(answer.status).toBe(200);

    // Once the first has stopped, the DATA_DIR is free (the lock ended with it).
    first.child.kill('SIGTERM');
    expect(await exited(first)).toBe(0);
    const again = await startEmbedded(dataDir, secondPort);
    again.child.kill('SIGTERM');
    expect(await exited(again)).toBe(0);
  });
});

describe('a first start', () => {
  test('on a busy port ends before anything is made: no DATA_DIR is left', async () => {
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'cloud-platform-busy-port-')), 'data');
    const squatter = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => squatter.once('listening', resolve));
    try {
      const port = (squatter.address() as { port: number }).port;
      const refused = spawnServer({ DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' });
      expect(await exited(refused)).toBe(1);
      expect(plainLines(refused)).toEqual([
        `cloud-platform: cannot listen on 127.0.0.1:${port}: the port is already in use; stop the other process or choose another port (PORT, S3_PORT, METRICS_PORT).`,
      ]);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      squatter.close();
    }
  });

  // As root (CI), PostgreSQL runs as an OS user of its own, which must be able to enter DATA_DIR's folders.
  test.runIf(process.getuid?.() === 0)(
    "as root, under a folder PostgreSQL's OS user cannot enter, is one line naming that folder and what to do, before anything is made",
    async () => {
      const closed = mkdtempSync(path.join(tmpdir(), 'cloud-platform-closed-')); // mode 0700, root's
      const dataDir = path.join(closed, 'data');
      const refused = spawnServer({ DATA_DIR: dataDir, PORT: String(await freePort()), DATABASE_URL: '' });
      expect(await exited(refused)).toBe(1);
      expect(plainLines(refused)).toEqual([
        `cloud-platform: the embedded PostgreSQL runs as the OS user "postgres" (the server runs as root, which PostgreSQL refuses), and that user cannot enter ${closed}, on the way to DATA_DIR (${dataDir}): let it in (chmod o+x ${closed}) or choose a DATA_DIR it can reach.`,
      ]);
      expect(existsSync(dataDir)).toBe(false);

      chmodSync(closed, 0o711);
      const started = await startEmbedded(dataDir, await freePort());
      expect((await readBootstrap(dataDir, started)).org_id).toMatch(/^[0-9a-f-]{36}$/);
      started.child.kill('SIGTERM');
      expect(await exited(started)).toBe(0);
    },
  );

  test('killed while it initialises its PostgreSQL leaves no half-made cluster: the next start initialises it afresh and serves', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-killed-initdb-'));
    const port = await freePort();
    const killed = spawnServer({ DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' });
    // Killed once initdb has begun writing the cluster (its PG_VERSION comes first, the bulk after).
    await eventually(
      () =>
        readdirSync(dataDir).some((name) => name.startsWith('postgres') && existsSync(path.join(dataDir, name, 'PG_VERSION')))
          ? true
          : undefined,
      'initdb to begin writing',
      60_000,
    );
    // The process and initdb with it, as an out-of-memory killer or a power cut would.
    process.kill(-killed.child.pid!, 'SIGKILL');
    await exited(killed);
    stopLeftPostgres(dataDir);

    const again = await startEmbedded(dataDir, port);
    const credentials = await readBootstrap(dataDir, again);
    expect(
      (await call(credentials.base_url, 'GET', `/v1/orgs/${credentials.org_id}/billing`, { defaultKey: credentials.api_key })).status,
    ).toBe(200);
    expect(readdirSync(dataDir).filter((name) => name.includes('initialising'))).toEqual([]);
    again.child.kill('SIGTERM');
    expect(await exited(again)).toBe(0);
  });
});

describe('a signal while the server starts', () => {
  test('stops the start where it is (here, waiting for its database): it exits at once and makes no organization or key', async () => {
    postgres ??= await startStoppablePostgres();
    const { url, db } = await postgres.newDatabase();
    await postgres.freeze();
    try {
      const starting = spawnServer({ DATABASE_URL: url, PORT: String(await freePort()), DATABASE_CONNECT_TIMEOUT_MS: '1000' });
      await eventually(
        () => (logMessages(starting).includes('the database does not answer yet; trying again') ? true : undefined),
        'the start to wait for its database',
        30_000,
      );
      starting.child.kill('SIGINT');
      // Without waiting for the database, which is still frozen: long before the start would give
      // up on it (30 s), however busy the machine.
      expect(await exitsWithin(starting, 25_000), starting.output()).toBe(true);
      expect(starting.child.exitCode).toBe(0);
      postgres.thaw();
      const messages = logMessages(starting);
      expect(messages).toContain('shutting down: finishing requests, releasing claimed work');
      expect(messages).not.toContain('listening');
      expect(starting.output()).not.toContain('First start');
      const { rows } = await db.query<{ orgs: string | null }>(`SELECT to_regclass('orgs')::text AS orgs`);
      if (rows[0]!.orgs !== null) expect((await db.query('SELECT id FROM orgs')).rows).toEqual([]);
      // Nothing of it is left connected (its connections end with it, once PostgreSQL runs again to see it).
      await eventually(
        async () =>
          (await db.query(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'cloud-platform%'`)).rowCount === 0
            ? true
            : undefined,
        'its connections to end',
      );
    } finally {
      postgres.thaw();
      await db.end();
    }
  });
});
