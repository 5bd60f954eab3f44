// Section "operations engine": instance creations accepted through the API and driven to a
// terminal state with SIM_LATENCY_MS=1, by one server process, then by two on one DATABASE_URL.
import pg from 'pg';
import { call, inParallel, vmRequest, type Api } from './api.ts';
import path from 'node:path';
import { cpuOf, startRealServer } from './processes.ts';
import { cpuMs, perSecond, record, section } from './report.ts';
import { SERVER_ENV, type RunningServer } from './servers.ts';

export const ENGINE_ENV = { SIM_LATENCY_MS: '1' };

export async function engineSection(server: RunningServer, operations: number): Promise<void> {
  section(`operations engine (${operations} instance creations, SIM_LATENCY_MS=1)`);
  const postgresDir = path.join(server.dataDir, 'postgres');
  await drive('one process', [server.api], server.databaseUrl, operations, 'a', { pids: [server.child.pid], postgresDir });
  const second = await startRealServer({
    ...SERVER_ENV,
    ...ENGINE_ENV,
    DATA_DIR: `${server.dataDir}-second`,
    DATABASE_URL: server.databaseUrl,
  });
  try {
    await drive('two processes, one DATABASE_URL', [server.api, { ...server.api, base: second.url }], server.databaseUrl, operations, 'b', {
      pids: [server.child.pid, second.pid],
      postgresDir,
    });
  } finally {
    await second.stop();
  }
}

/** The server processes (Node) and their PostgreSQL, whose CPU time per operation is printed. */
interface Measured {
  pids: number[];
  postgresDir: string;
}

function cpuNow({ pids, postgresDir }: Measured): { node: number; postgres: number } {
  const node = pids.reduce((sum, pid) => sum + cpuOf(pid).node, 0);
  return { node, postgres: cpuOf(pids[0]!, postgresDir).postgres };
}

/** `count` instance creations, 32 at a time, spread over `apis` in turn; answers how many were not 202. */
async function postCreations(apis: Api[], count: number, namePrefix: string): Promise<number> {
  let rejected = 0;
  await inParallel(count, 32, async (index) => {
    const answer = await call(apis[index % apis.length]!, 'POST', '/compute/vms', vmRequest(`${namePrefix}-${index}`));
    if (answer.status !== 202) rejected++;
  });
  return rejected;
}

async function drive(name: string, apis: Api[], databaseUrl: string, count: number, prefix: string, measured: Measured): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const cpuBefore = cpuNow(measured);
    const started = performance.now();
    const rejected = await postCreations(apis, count, `engine-${prefix}`);
    const acceptedMs = performance.now() - started;
    const deadline = Date.now() + 300_000;
    let unfinished = Infinity;
    while (unfinished > 0 && Date.now() < deadline) {
      const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM operations WHERE finished_at IS NULL`);
      unfinished = Number(rows[0]!.n);
      if (unfinished > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const finishedMs = performance.now() - started;
    const cpuAfter = cpuNow(measured);
    const { rows: states } = await db.query<{ state: string; n: string }>(
      `SELECT state, count(*) AS n FROM operations WHERE resource_id IN (SELECT id::text FROM vms WHERE name LIKE $1) GROUP BY state`,
      [`engine-${prefix}-%`],
    );
    const outcome = states.map((row) => `${row.n} ${row.state}`).join(', ');
    record({
      figure: `engine, ${name}`,
      real: `${perSecond((count / acceptedMs) * 1000)} accepted, ${perSecond((count / finishedMs) * 1000)} terminal${unfinished > 0 ? ` (${unfinished} unfinished after 5 min)` : ''}${rejected ? ` (${rejected} refused)` : ''} [${outcome}]`,
      goal: '≥ 1,000/s',
    });
    record({
      figure: `engine, ${name}: CPU per operation (accepted and driven)`,
      real: `Node ${cpuMs((cpuAfter.node - cpuBefore.node) / count)}, PostgreSQL ${cpuMs((cpuAfter.postgres - cpuBefore.postgres) / count)}`,
      goal: 'what 1,000/s needs: well under 2 ms in all on 2 cores',
    });
  } finally {
    await db.end();
  }
}

/**
 * What accepting a creation costs alone, on a server whose workers are off
 * (WORKER_CONCURRENCY=0): the engine's figures above are this and the driving together.
 */
export async function acceptOnlySection(server: RunningServer, operations: number): Promise<void> {
  const measured: Measured = { pids: [server.child.pid], postgresDir: path.join(server.dataDir, 'postgres') };
  const cpuBefore = cpuNow(measured);
  const started = performance.now();
  const rejected = await postCreations([server.api], operations, 'accept');
  const acceptedMs = performance.now() - started;
  const cpuAfter = cpuNow(measured);
  record({
    figure: 'engine, accepting alone (workers off)',
    real: `${perSecond((operations / acceptedMs) * 1000)} accepted${rejected ? ` (${rejected} refused)` : ''}; CPU per creation: Node ${cpuMs((cpuAfter.node - cpuBefore.node) / operations)}, PostgreSQL ${cpuMs((cpuAfter.postgres - cpuBefore.postgres) / operations)}`,
    goal: 'the part of the engine figure that is the API',
  });
}
