// The server never dies of, and never hangs on, its database. On a PostgreSQL of its own (the
// shared test PostgreSQL is never stopped), server processes run operations and serve requests
// while PostgreSQL is stopped, then started again, or frozen (SIGSTOP), then thawed: meanwhile
// every request is answered 503 problem+json with Retry-After (none is left waiting) and every
// process stays up; afterwards everything recovers by itself, and every operation finishes
// exactly once (a trigger records every move of an operation to a terminal state).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import type pg from 'pg';
import type { Started } from '../../support/processes.ts';
import { call, readBootstrap, startServerProcess, type ApiResponse } from '../../support/server.ts';
import { startStoppablePostgres, type StoppablePostgres } from '../../support/stoppable-postgres.ts';

/** Short timeouts, so that a frozen database turns into answers quickly; slow backends, so that operations are in flight. */
const SERVER_ENV = {
  LOG_LEVEL: 'warn',
  SIM_LATENCY_MS: '150-400',
  DATABASE_CONNECT_TIMEOUT_MS: '1000',
  DATABASE_STATEMENT_TIMEOUT_MS: '2000',
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '5000',
};
/**
 * A request the server would never answer fails the test after this long. While the database is
 * away a request is answered after its timeouts (a query's statement timeout + 1 s, bookkeeping
 * 1 s: about 4 s here); how much longer on a busy machine is not this test's business. Without
 * the timeouts, a request to a frozen PostgreSQL would wait forever.
 */
const NEVER_ANSWERED_MS = 30_000;

let postgres: StoppablePostgres;
const processes: Started[] = [];

beforeAll(async () => {
  postgres = await startStoppablePostgres();
});

afterAll(async () => {
  // Thawed first: should a test have failed while PostgreSQL was frozen, nothing could stop.
  postgres?.thaw();
  await Promise.all(processes.map(stopOrKill));
  await postgres?.close();
});

/** Stops a server process; one that has not exited 10 seconds after SIGTERM is killed. */
async function stopOrKill(started: Started): Promise<void> {
  const timer = setTimeout(() => {
    try {
      process.kill(-started.child.pid!, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }, 10_000);
  await started.stop();
  clearTimeout(timer);
}

/** A request that gets no answer in `ms` fails the test, rather than hanging it. */
function answeredWithin<T>(ms: number, what: string, answer: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_resolve, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  );
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** Records every move of an operation into a terminal state: finishing twice would show as two rows. */
async function recordFinishes(db: pg.Pool): Promise<void> {
  await db.query(`
    CREATE TABLE finishes (operation_id uuid NOT NULL, state text NOT NULL);
    CREATE FUNCTION record_finish() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO finishes VALUES (NEW.id, NEW.state); RETURN NEW; END $$;
    CREATE TRIGGER record_finish AFTER UPDATE ON operations FOR EACH ROW
      WHEN (NEW.finished_at IS NOT NULL AND OLD.finished_at IS DISTINCT FROM NEW.finished_at)
      EXECUTE FUNCTION record_finish();`);
}

const alive = (started: Started) => started.child.exitCode === null && started.child.signalCode === null;

/** Server processes on a new database, the first one's bootstrap credentials, and the finish record. */
async function cluster(size: number) {
  const { url, db } = await postgres.newDatabase();
  const servers: Array<Started & { url: string; dataDir: string }> = [];
  for (let index = 0; index < size; index++) {
    const started = await startServerProcess(url, SERVER_ENV);
    processes.push(started);
    servers.push(started);
  }
  const credentials = await readBootstrap(servers[0]!.dataDir);
  await recordFinishes(db);
  const api = (server: { url: string }, method: string, orgPath: string, body?: unknown) =>
    call(server.url, method, `/v1/orgs/${credentials.org_id}${orgPath}`, { defaultKey: credentials.api_key, body });
  return { db, servers, api };
}

type Cluster = Awaited<ReturnType<typeof cluster>>;

/** Queues work on every process: instances (with a firewall change each) and buckets. Returns the operation ids. */
async function queueWork({ servers, api }: Cluster, round: string): Promise<string[]> {
  const operations: string[] = [];
  for (const [index, server] of servers.entries()) {
    for (let vm = 0; vm < 3; vm++) {
      const created = await api(server, 'POST', '/compute/vms', {
        name: `${round}-${index}-${vm}`,
        image: 'ubuntu-24.04',
        region: 'fra1',
        vcpus: 1,
        memory_mb: 1024,
        disk_gb: 20,
        storage_pool: 'fra1-ssd',
        network_profile: 'fra1-standard',
      });
      expect(created.status, created.text).toBe(202);
      const firewall = await api(server, 'PUT', `/compute/vms/${created.body.vm.id}/firewall`, {
        inbound: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }],
      });
      expect(firewall.status, firewall.text).toBe(202);
      operations.push(created.body.operation.id, firewall.body.operation.id);
    }
    const bucket = await api(server, 'POST', '/s3/buckets', { name: `${round}-${index}` });
    expect(bucket.status, bucket.text).toBe(202);
    operations.push(bucket.body.operation.id);
  }
  return operations;
}

/** Requests of every kind to every process for `ms`: each answered (none left waiting) 503 problem+json with Retry-After. */
async function expectUnavailableAnswers({ servers, api }: Cluster, ms: number): Promise<void> {
  const until = Date.now() + ms;
  const answers: Array<{ answer: ApiResponse; what: string }> = [];
  while (Date.now() < until) {
    await Promise.all(
      servers.flatMap((server) =>
        (
          [
            ['GET', ''],
            ['GET', '/compute/vms'],
            ['POST', '/s3/buckets', { name: `outage-${randomUUID().slice(0, 8)}` }],
            ['PUT', '/billing', { spend_budget_cents: 5000 }],
          ] as const
        ).map(async ([method, orgPath, body]) => {
          const answer = await answeredWithin(NEVER_ANSWERED_MS, `${method} ${orgPath}`, api(server, method, orgPath, body));
          answers.push({ answer, what: `${method} ${orgPath}` });
        }),
      ),
    );
  }
  expect(answers.length).toBeGreaterThan(0);
  for (const { answer, what } of answers) {
    expect(answer.status, `${what}: ${answer.text}`).toBe(503);
    expect(answer.headers.get('content-type'), what).toContain('application/problem+json');
    expect(answer.body.code, what).toBe('service_unavailable');
    expect(Number(answer.headers.get('retry-after')), what).toBeGreaterThan(0);
  }
}

/** Everything works again by itself, and every operation finished exactly once, successfully. */
async function expectRecovered(cluster: Cluster, operations: string[]): Promise<void> {
  const { servers, api, db } = cluster;
  for (const server of servers) {
    await eventually(async () => ((await api(server, 'GET', '')).status === 200 ? true : undefined), 'the API to answer again', 30_000);
  }
  // New work is taken up too.
  operations.push(...(await queueWork(cluster, `after-${randomUUID().slice(0, 4)}`)));
  await eventually(
    async () => {
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM operations WHERE id = ANY($1) AND finished_at IS NOT NULL',
        [operations],
      );
      return rows[0]!.n === operations.length ? true : undefined;
    },
    'every operation to finish',
    45_000,
  );
  const { rows } = await db.query<{ id: string; state: string; finishes: number; error_detail: string | null }>(
    `SELECT o.id, o.state, o.error_detail, (SELECT count(*)::int FROM finishes f WHERE f.operation_id = o.id) AS finishes
     FROM operations o WHERE o.id = ANY($1)`,
    [operations],
  );
  for (const operation of rows) expect(operation, JSON.stringify(operation)).toMatchObject({ state: 'succeeded', finishes: 1 });
  // The backend holds what the API shows: every instance exists there, with its firewall.
  const { rows: missing } = await db.query(
    `SELECT v.name FROM vms v LEFT JOIN sim_servers s ON s.server_id = v.id
     WHERE v.deleted_at IS NULL AND (s.server_id IS NULL OR s.firewall <> v.firewall OR v.state <> 'running')`,
  );
  expect(missing).toEqual([]);
  for (const server of servers) {
    expect(alive(server), server.output()).toBe(true);
    expect(server.output()).not.toContain('unhandled promise rejection');
  }
}

describe('a database outage', () => {
  for (const size of [1, 2]) {
    test(`PostgreSQL stopped under load and started again: ${size} process${size > 1 ? 'es' : ''} stay up, answer 503, and recover by themselves`, async () => {
      const running = await cluster(size);
      const operations = await queueWork(running, `stop${size}`);
      await postgres.stop();
      try {
        await expectUnavailableAnswers(running, 3_000);
        for (const server of running.servers) expect(alive(server), server.output()).toBe(true);
      } finally {
        await postgres.start();
      }
      await expectRecovered(running, operations);
      await running.db.end();
    });
  }

  test('PostgreSQL frozen (SIGSTOP) under load and thawed: no request waits beyond the timeouts, and everything recovers', async () => {
    const running = await cluster(1);
    const operations = await queueWork(running, 'frozen');
    await postgres.freeze();
    try {
      await expectUnavailableAnswers(running, 4_000);
      for (const server of running.servers) expect(alive(server), server.output()).toBe(true);
    } finally {
      postgres.thaw();
    }
    await expectRecovered(running, operations);
    await running.db.end();
  });

  test('a start while PostgreSQL does not answer waits for it, and serves once it answers', async () => {
    const { url, db } = await postgres.newDatabase();
    await db.end();
    await postgres.freeze();
    let thawed = false;
    const thaw = setTimeout(() => {
      postgres.thaw();
      thawed = true;
    }, 3_000);
    try {
      // The connect timeout is 1 s: without waiting, the start would end at the first try.
      const started = await startServerProcess(url, SERVER_ENV);
      processes.push(started);
      expect(thawed).toBe(true);
      const answer = await fetch(`${started.url}/readyz`);
      expect(answer.status).toBe(200);
      expect(started.output()).toContain('the database does not answer yet; trying again');
    } finally {
      clearTimeout(thaw);
      postgres.thaw();
    }
  });

  test('the probes through an outage: /healthz stays 200; /readyz answers 503 not_ready while the database is away, 200 once it is back', async () => {
    const running = await cluster(1);
    const server = running.servers[0]!;
    const probe = async (path: string) => {
      const response = await answeredWithin(NEVER_ANSWERED_MS, path, fetch(`${server.url}${path}`));
      return { status: response.status, body: (await response.json()) as { code?: string; detail?: string; status?: string } };
    };
    expect(await probe('/readyz')).toEqual({
      status: 200,
      body: { status: 'ready', checks: { database: 'ok', migrations: 'ok', engine: 'ok' } },
    });
    await postgres.stop();
    try {
      const down = await probe('/readyz');
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ code: 'not_ready', detail: 'Not ready: the database does not answer.' });
      expect((await probe('/healthz')).status).toBe(200);
    } finally {
      await postgres.start();
    }
    await eventually(async () => ((await probe('/readyz')).status === 200 ? true : undefined), '/readyz to answer 200 again', 20_000);
    await running.db.end();
  });
});
