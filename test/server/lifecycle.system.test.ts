// `npm start` and `npm run admin` as a user runs them: the embedded PostgreSQL in DATA_DIR, the
// bootstrap organization printed once, the admin command with and without a running server,
// structured logs without credentials, and a graceful shutdown that lets requests finish.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';
import { freePort, startProcess, waitForHttp, type Started } from '../support/processes.ts';
import { call, createTestDatabase, readBootstrap, startServerProcess, TEST_ENV } from '../support/server.ts';

const running: Started[] = [];
afterAll(async () => {
  await Promise.all(running.map((process) => process.stop()));
});

function exited(started: Started): Promise<number | null> {
  return started.child.exitCode !== null
    ? Promise.resolve(started.child.exitCode)
    : new Promise((resolve) => started.child.once('exit', (code) => resolve(code)));
}

/** `npm start` as a process of the test (stopped after the file), with TEST_ENV and `env`. */
function spawnServer(env: Record<string, string>): Started {
  const started = startProcess(process.execPath, [path.join(repoRoot, 'scripts', 'start.mjs'), path.join(repoRoot, 'server', 'main.ts')], {
    ...TEST_ENV,
    ...env,
  });
  running.push(started);
  return started;
}

/** What a process wrote that is not a JSON log line: what an operator reads. */
function plainLines(started: Started): string[] {
  return started
    .output()
    .trim()
    .split('\n')
    .filter((line) => !line.startsWith('{'));
}

async function startEmbedded(dataDir: string, port: number): Promise<Started> {
  const started = spawnServer({ LOG_LEVEL: 'info', DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' });
  await waitForHttp(`http://127.0.0.1:${port}/v1/orgs/00000000-0000-0000-0000-000000000000`, started, 90_000);
  return started;
}

function admin(dataDir: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'scripts', 'start.mjs'), path.join(repoRoot, 'server', 'admin', 'main.ts'), ...args],
      {
        env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '' },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Creates an API key with a request whose body arrives in two halves: the first now, the second
 * after `interrupt` ran (it signals the server) and 300 ms more. Resolves with the answer.
 */
function createKeyAcross(
  baseUrl: string,
  credentials: { org_id: string; api_key: string },
  name: string,
  interrupt: () => void,
): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({ name });
  return new Promise((resolve, reject) => {
    const headers = {
      Authorization: `Bearer ${credentials.api_key}`,
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body),
    };
    const req = request(new URL(`${baseUrl}/v1/orgs/${credentials.org_id}/api-tokens`), { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.write(body.slice(0, 10));
    setTimeout(() => {
      interrupt();
      setTimeout(() => req.end(body.slice(10)), 300);
    }, 200);
  });
}

/** The databases of DATA_DIR's embedded PostgreSQL (running), by name; `drop`: dropped first. */
async function embeddedDatabases(dataDir: string, drop?: string): Promise<string[]> {
  const settings = JSON.parse(readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as { port: number; password: string };
  const client = new pg.Client({
    connectionString: `postgres://postgres:${encodeURIComponent(settings.password)}@127.0.0.1:${settings.port}/cloud_platform`,
  });
  await client.connect();
  try {
    if (drop) await client.query(`DROP DATABASE ${drop}`);
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY datname');
    return rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
}

describe('the embedded default', () => {
  test('first start bootstraps an organization; the admin command works with and without a server; a restart keeps everything', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-embedded-'));
    const port = await freePort();
    const server = await startEmbedded(dataDir, port);
    const credentials = await readBootstrap(dataDir);
    expect(credentials.api_key).toMatch(/^cpk_[A-Za-z0-9_-]{43}$/);
    expect(credentials.base_url).toBe(`http://127.0.0.1:${port}`);
    expect(statSync(path.join(dataDir, 'bootstrap.json')).mode & 0o777).toBe(0o600);
    await eventually(() => (server.output().includes('The key is not shown again.') ? true : undefined), 'the credentials to be printed');
    expect(server.output()).toContain(credentials.api_key);
    const base = `${credentials.base_url}/v1/orgs/${credentials.org_id}`;
    expect((await call(base, 'GET', '/billing', { defaultKey: credentials.api_key })).status).toBe(200);
    // The platform's database, and `postgres`, which tools connect to unless told otherwise: the
    // first start gave initdb's to the platform and makes it again once it serves.
    await eventually(
      async () => ((await embeddedDatabases(dataDir)).join() === 'cloud_platform,postgres' ? true : undefined),
      'the maintenance database to be made again',
    );
    // Without it (a first start stopped before it was made), the admin command and a restart
    // still find the server, and the restart makes it.
    expect(await embeddedDatabases(dataDir, 'postgres')).toEqual(['cloud_platform']);

    // With the server running: the admin command uses the PostgreSQL the server started.
    const created = await admin(dataDir, ['create-org', '--name', 'Second Org', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const second = JSON.parse(created.stdout.trim());
    expect(second.org_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await call(credentials.base_url, 'GET', `/v1/orgs/${second.org_id}`, { defaultKey: second.api_key })).body.name).toBe(
      'Second Org',
    );

    // JSON log lines carry request id, org, route, status and duration, and never a credential.
    const logLines = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    const requestLog = logLines
      .map((line) => JSON.parse(line))
      .find((entry) => entry.msg === 'request' && entry.org_id === credentials.org_id);
    expect(requestLog).toMatchObject({
      route: '/v1/orgs/{org}/billing',
      status: 200,
      method: 'GET',
      request_id: expect.stringMatching(/^req_/),
    });
    expect(requestLog.duration_ms).toEqual(expect.any(Number));
    expect(logLines.some((line) => line.includes('cpk_'))).toBe(false);

    server.child.kill('SIGTERM');
    expect(await exited(server)).toBe(0);

    // Without a server: the admin command starts the embedded PostgreSQL itself.
    const scheduling = await admin(dataDir, ['scheduling', '--org', credentials.org_id, '--enabled', 'false', '--json']);
    expect(scheduling.code, scheduling.stderr).toBe(0);
    expect(JSON.parse(scheduling.stdout.trim())).toEqual({ org_id: credentials.org_id, scheduling_enabled: false });
    const usage = await admin(dataDir, ['scheduling', '--org', 'nope', '--enabled', 'maybe']);
    expect(usage.code).toBe(2);

    const restarted = await startEmbedded(dataDir, port);
    expect(restarted.output()).not.toContain('First start');
    expect((await call(base, 'GET', '/billing', { defaultKey: credentials.api_key })).status).toBe(200);
    await eventually(
      async () => ((await embeddedDatabases(dataDir)).join() === 'cloud_platform,postgres' ? true : undefined),
      'the maintenance database to be made at the restart',
    );
    const events = (await call(base, 'GET', '/audit-events?resource_type=organization', { defaultKey: credentials.api_key })).body.items;
    expect(events[0]).toMatchObject({ action: 'org.set_scheduling', actor_realm: 'operator', after: { scheduling_enabled: false } });
    restarted.child.kill('SIGTERM');
    expect(await exited(restarted)).toBe(0);
  });
});

describe('start-up', () => {
  test('a busy port is one line saying what to change, exit 1; a start on another port brings bootstrap.json up to date', async () => {
    const databaseUrl = await createTestDatabase();
    const first = await startServerProcess(databaseUrl);
    running.push(first);
    const port = new URL(first.url).port;
    const busy = spawnServer({ DATABASE_URL: databaseUrl, PORT: port, HOST: '127.0.0.1', DATA_DIR: first.dataDir });
    expect(await exited(busy)).toBe(1);
    expect(plainLines(busy)).toEqual([
      `cloud-platform: cannot listen on 127.0.0.1:${port}: the port is already in use; stop the other process or choose another port (PORT, S3_PORT, METRICS_PORT).`,
    ]);

    first.child.kill('SIGTERM');
    expect(await exited(first)).toBe(0);
    const otherPort = await freePort();
    const moved = spawnServer({ DATABASE_URL: databaseUrl, PORT: String(otherPort), HOST: '127.0.0.1', DATA_DIR: first.dataDir });
    await waitForHttp(`http://127.0.0.1:${otherPort}/v1/orgs/00000000-0000-0000-0000-000000000000`, moved);
    // Rewritten once the server listens (it may answer a moment before).
    const credentials = await eventually(async () => {
      const saved = await readBootstrap(first.dataDir);
      return saved.base_url === `http://127.0.0.1:${otherPort}` ? saved : undefined;
    }, 'bootstrap.json to name the new port');
    expect(
      (await call(credentials.base_url, 'GET', `/v1/orgs/${credentials.org_id}/billing`, { defaultKey: credentials.api_key })).status,
    ).toBe(200);
  });
});

describe('an embedded PostgreSQL that will not start', () => {
  test('is one line with its reason, exit 1, not a bare crash', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-refused-'));
    const port = await freePort();
    const first = await startEmbedded(dataDir, port);
    first.child.kill('SIGTERM');
    expect(await exited(first)).toBe(0);
    // What an operator's typo in the cluster's settings does.
    appendFileSync(path.join(dataDir, 'postgres', 'postgresql.auto.conf'), "shared_buffers = 'plenty'\n");
    const refused = spawnServer({ DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' });
    expect(await exited(refused)).toBe(1);
    expect(plainLines(refused)).toEqual([
      expect.stringMatching(
        /^cloud-platform: the embedded PostgreSQL in .+ stopped while starting: invalid value for parameter "shared_buffers": "plenty"/,
      ),
    ]);
  });
});

describe("the embedded PostgreSQL's port", () => {
  test('taken by another program at a restart, is replaced by a free one, saved where the admin command finds it', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-port-'));
    const port = await freePort();
    const first = await startEmbedded(dataDir, port);
    first.child.kill('SIGTERM');
    expect(await exited(first)).toBe(0);
    const settingsFile = path.join(dataDir, 'postgres.json');
    const taken = (JSON.parse(readFileSync(settingsFile, 'utf8')) as { port: number }).port;
    const squatter = createServer().listen(taken, '127.0.0.1');
    await new Promise((resolve) => squatter.once('listening', resolve));
    try {
      const second = await startEmbedded(dataDir, port);
      const moved = (JSON.parse(readFileSync(settingsFile, 'utf8')) as { port: number }).port;
      expect(moved).not.toBe(taken);
      const credentials = await readBootstrap(dataDir);
      expect(
        (await call(`${credentials.base_url}/v1/orgs/${credentials.org_id}`, 'GET', '/billing', { defaultKey: credentials.api_key }))
          .status,
      ).toBe(200);
      const created = await admin(dataDir, ['create-org', '--name', 'After the move', '--json']);
      expect(created.code, created.stderr).toBe(0);
      second.child.kill('SIGTERM');
      expect(await exited(second)).toBe(0);
    } finally {
      squatter.close();
    }
  });
});

describe('logs', () => {
  test('LOG_FORMAT=pretty (the default on a terminal) writes readable lines, still without credentials', async () => {
    const server = await startServerProcess(await createTestDatabase(), { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' });
    running.push(server);
    const credentials = await readBootstrap(server.dataDir);
    await call(server.url, 'GET', `/v1/orgs/${credentials.org_id}/billing`, { defaultKey: credentials.api_key });
    // pino-pretty: the message on one line, its fields indented below it.
    const entry = await eventually(
      () => /INFO.*request\n(?:\s+.*\n)*?\s+route: "\/v1\/orgs\/\{org\}\/billing"/.exec(server.output())?.[0],
      'a request entry',
      15_000,
    );
    expect(entry).not.toMatch(/^\{/m);
    const logPart = server.output().slice(server.output().indexOf('The key is not shown again.'));
    expect(logPart).not.toContain(credentials.api_key);
  });
});

describe('graceful shutdown', () => {
  test('on SIGTERM, a request in flight finishes, new connections are refused, and the process exits 0', async () => {
    const databaseUrl = await createTestDatabase();
    const server = await startServerProcess(databaseUrl);
    running.push(server);
    const credentials = await readBootstrap(server.dataDir);
    // Half the body now, half after the server was told to stop.
    const response = await createKeyAcross(server.url, credentials, 'created-during-shutdown', () => server.child.kill('SIGTERM'));
    expect(response.status).toBe(201);
    expect(JSON.parse(response.body).token.name).toBe('created-during-shutdown');
    expect(await exited(server)).toBe(0);
    await expect(fetch(`${server.url}/v1/orgs/${credentials.org_id}`)).rejects.toThrow();
  });

  test("with its standard output's reader gone (a closed pipe), a SIGTERM still ends the process: exit 0", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-stdout-gone-'));
    const port = await freePort();
    const server = await startEmbedded(dataDir, port);
    // A log shipper or `| head` that went away: the server's next write to standard output is EPIPE.
    server.child.stdout?.destroy();
    server.child.kill('SIGTERM');
    const code = await Promise.race([
      exited(server),
      new Promise<string>((resolve) => setTimeout(() => resolve('still running 20 s after SIGTERM'), 20_000)),
    ]);
    expect(code).toBe(0);
  });

  test('a SIGTERM while the server is still starting stops the start where it is: exit 0, nothing made, and the next start serves', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-early-stop-'));
    const port = await freePort();
    const early = spawnServer({ LOG_LEVEL: 'info', DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' });
    // The first start makes its PostgreSQL cluster: seconds during which Node's default would end the process.
    await eventually(() => (early.output().includes('initialising the embedded PostgreSQL') ? true : undefined), 'initdb to begin');
    early.child.kill('SIGTERM');
    expect(await exited(early)).toBe(0);
    // It did not go on to make the first organization and its key, nor to listen.
    expect(existsSync(path.join(dataDir, 'bootstrap.json'))).toBe(false);
    expect(early.output()).not.toContain('"msg":"listening"');
    const again = await startEmbedded(dataDir, port);
    const credentials = await readBootstrap(dataDir);
    expect(
      (await call(`${credentials.base_url}/v1/orgs/${credentials.org_id}`, 'GET', '/billing', { defaultKey: credentials.api_key })).status,
    ).toBe(200);
    again.child.kill('SIGTERM');
    expect(await exited(again)).toBe(0);
  });
});

describe('Ctrl-C in a terminal', () => {
  test('SIGINT to the whole process group: a request in flight finishes on the embedded PostgreSQL, which stops after it', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-ctrl-c-'));
    const port = await freePort();
    const server = await startEmbedded(dataDir, port);
    const credentials = await readBootstrap(dataDir);
    // What a terminal does on Ctrl-C: the signal goes to every process of the foreground group.
    const response = await createKeyAcross(credentials.base_url, credentials, 'created-during-ctrl-c', () =>
      process.kill(-server.child.pid!, 'SIGINT'),
    );
    expect(response.status, response.body).toBe(201);
    expect(await exited(server)).toBe(0);
    // PostgreSQL was stopped by the server, after the request: its pid file is gone.
    await eventually(
      () => (existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')) ? undefined : true),
      'the embedded PostgreSQL to stop',
    );
  });
});

describe('a worker killed mid-operation', () => {
  test('another process takes the operation over once the lease expires, and it finishes once', async () => {
    const databaseUrl = await createTestDatabase();
    // Backend calls take a minute here, so the operation is mid-call when the process dies, however
    // long a busy machine takes to see it start (the process is killed: nothing waits the minute).
    const first = await startServerProcess(databaseUrl, { SIM_LATENCY_MS: '60000', WORKER_LEASE_MS: '1500' });
    running.push(first);
    const credentials = await readBootstrap(first.dataDir);
    const base = `${first.url}/v1/orgs/${credentials.org_id}`;
    const accepted = await call(base, 'POST', '/s3/buckets', { defaultKey: credentials.api_key, body: { name: 'survives-a-crash' } });
    expect(accepted.status, accepted.text).toBe(202);
    const operationId = accepted.body.operation.id;

    const probe = new pg.Client({ connectionString: databaseUrl });
    await probe.connect();
    try {
      for (let waited = 0; ; waited += 50) {
        const { rows } = await probe.query('SELECT state, attempt FROM operations WHERE id = $1', [operationId]);
        if (rows[0].state === 'running' && rows[0].attempt === 1) break;
        if (waited > 15_000) throw new Error(`the operation never started: ${JSON.stringify(rows[0])}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      process.kill(-first.child.pid!, 'SIGKILL');
      await exited(first);

      const second = await startServerProcess(databaseUrl, { SIM_LATENCY_MS: '5-20' });
      running.push(second);
      const secondBase = `${second.url}/v1/orgs/${credentials.org_id}`;
      let operation: any;
      for (let waited = 0; ; waited += 100) {
        operation = (await call(secondBase, 'GET', `/operations/${operationId}`, { defaultKey: credentials.api_key })).body;
        if (operation.finished_at) break;
        if (waited > 20_000) throw new Error(`still ${operation.state}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(operation).toMatchObject({ state: 'succeeded', attempt: 2, error_class: null });
      const bucket = (await call(secondBase, 'GET', `/s3/buckets/${accepted.body.bucket.id}`, { defaultKey: credentials.api_key })).body;
      expect(bucket).toMatchObject({ state: 'active', observed_exists: true });
      const held = await probe.query('SELECT count(*)::int AS n FROM sim_objectstore_buckets WHERE name = $1', ['survives-a-crash']);
      expect(held.rows[0].n).toBe(1);
      const finishes = await probe.query("SELECT count(*)::int AS n FROM operations WHERE resource_id = $1 AND type = 'bucket.create'", [
        accepted.body.bucket.id,
      ]);
      expect(finishes.rows[0].n).toBe(1);
    } finally {
      await probe.end();
    }
  });
});
