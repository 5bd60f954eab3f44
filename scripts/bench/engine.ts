// Section "operations engine": instance creations accepted through the API and driven to a
// terminal state with SIM_LATENCY_MS=1, by one server process, then by two on one DATABASE_URL.
// The creations are sent by the bench's load generator (wrk when installed, as for the requests
// section: on 2 cores the sender's own CPU is taken from the server's), for a fixed time.
import pg from 'pg';
import path from 'node:path';
import type { Api } from './api.ts';
import { vmRequest } from './api.ts';
import { load, loadGenerator, NUMBER_MARK, type LoadFigures } from './load.ts';
import { cpuOf, startRealServer } from './processes.ts';
import { cpuMs, perSecond, ratio, record, section } from './report.ts';
import { SERVER_ENV, type RunningServer } from './servers.ts';

export const ENGINE_ENV = { SIM_LATENCY_MS: '1' };

/** How long creations are sent, and for how long before that, unmeasured, to warm the servers up. */
export interface EngineSettings {
  seconds: number;
  warmupSeconds: number;
}

/** Creations in flight at once, over all the servers of a run (the requests section's 32). */
const CONNECTIONS = 32;

/** What a phase of the section measured: operations per second, and CPU (Node and PostgreSQL) per operation. */
export interface EngineFigure {
  perSecond: number;
  cpuPerOperation: number;
}

/** The section's figures, compared side by side with a baseline's (BENCH_BASELINE) by `compareEngines`. */
export interface EngineFigures {
  oneProcess: EngineFigure;
  twoProcesses: EngineFigure;
  acceptingAlone?: EngineFigure;
  drivingAlone?: EngineFigure;
}

export function engineTitle(settings: EngineSettings): void {
  section(`operations engine (instance creations for ${settings.seconds} s, SIM_LATENCY_MS=1, ${loadGenerator()})`);
}

/** `label` names the checkout measured (empty for this one, " (baseline)" for BENCH_BASELINE's). */
export async function engineSection(server: RunningServer, settings: EngineSettings, label = ''): Promise<EngineFigures> {
  const postgresDir = path.join(server.dataDir, 'postgres');
  const oneProcess = await drive(`one process${label}`, [server.api], server.databaseUrl, settings, {
    pids: [server.child.pid],
    postgresDir,
  });
  const second = await startRealServer(
    {
      ...SERVER_ENV,
      ...ENGINE_ENV,
      DATA_DIR: `${server.dataDir}-second`,
      DATABASE_URL: server.databaseUrl,
    },
    server.root,
  );
  try {
    const twoProcesses = await drive(
      `two processes, one DATABASE_URL${label}`,
      [server.api, { ...server.api, base: second.url }],
      server.databaseUrl,
      settings,
      { pids: [server.child.pid, second.pid], postgresDir },
    );
    return { oneProcess, twoProcesses };
  } finally {
    await second.stop();
  }
}

/** This checkout's figures against the baseline's, measured in the same run: ratios of throughput and of CPU per operation. */
export function compareEngines(current: EngineFigures, baseline: EngineFigures): void {
  const names: Record<keyof EngineFigures, string> = {
    oneProcess: 'one process, driven to a terminal state',
    twoProcesses: 'two processes, driven to a terminal state',
    acceptingAlone: 'accepting alone',
    drivingAlone: 'driving alone',
  };
  for (const key of Object.keys(names) as Array<keyof EngineFigures>) {
    const now = current[key];
    const before = baseline[key];
    if (!now || !before) continue;
    record({
      figure: `engine, ${names[key]}: against the baseline`,
      real: `${perSecond(now.perSecond)} against ${perSecond(before.perSecond)}; CPU per operation ${cpuMs(now.cpuPerOperation)} against ${cpuMs(before.cpuPerOperation)}`,
      ratio: `throughput ${ratio(now.perSecond / before.perSecond)}, CPU ${ratio(now.cpuPerOperation / before.cpuPerOperation)}`,
    });
  }
}

/** The server processes (Node) and their PostgreSQL, whose CPU time per operation is printed. */
interface Measured {
  pids: number[];
  postgresDir: string;
}

type Cpu = { node: number; postgres: number };

function cpuNow({ pids, postgresDir }: Measured): Cpu {
  const node = pids.reduce((sum, pid) => sum + cpuOf(pid).node, 0);
  return { node, postgres: cpuOf(pids[0]!, postgresDir).postgres };
}

/** The CPU time spent between `before` and `after`, per one of `count` operations, as printed. */
function cpuPerOperation(before: Cpu, after: Cpu, count: number): string {
  return `Node ${cpuMs((after.node - before.node) / count)}, PostgreSQL ${cpuMs((after.postgres - before.postgres) / count)}`;
}

/** The same in all, in ms. */
const cpuSum = (before: Cpu, after: Cpu, count: number): number => (after.node - before.node + after.postgres - before.postgres) / count;

/** Creations sent for `seconds`, the connections shared out over `apis`: how many were accepted (202), how many not. */
async function postCreations(apis: Api[], seconds: number): Promise<{ accepted: number; refused: number }> {
  const runs: LoadFigures[] = await Promise.all(
    apis.map((api) =>
      load(
        {
          method: 'POST',
          url: `${api.base}/v1/orgs/${api.orgId}/compute/vms`,
          headers: { authorization: `Bearer ${api.key}` },
          body: JSON.stringify(vmRequest(`engine-${NUMBER_MARK}`)),
          numberedBody: true,
        },
        { connections: CONNECTIONS / apis.length, seconds, warmupSeconds: 0 },
      ),
    ),
  );
  const sent = runs.reduce((sum, run) => sum + run.sent, 0);
  const refused = runs.reduce((sum, run) => sum + run.failures, 0);
  return { accepted: sent - refused, refused };
}

/** Waits until no operation is unfinished (five minutes at most); answers how many still are. */
async function untilAllFinished(db: pg.Client): Promise<number> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM operations WHERE finished_at IS NULL`);
    const unfinished = Number(rows[0]!.n);
    if (unfinished === 0 || Date.now() > deadline) return unfinished;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function drive(name: string, apis: Api[], databaseUrl: string, settings: EngineSettings, measured: Measured): Promise<EngineFigure> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    // Compiled code, the contract's validators of these operations and a pool of connections,
    // as a server that has been serving has them; and nothing left over of the warm-up.
    await postCreations(apis, settings.warmupSeconds);
    await untilAllFinished(db);
    const { rows: before } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM operations`);
    const cpuBefore = cpuNow(measured);
    const started = performance.now();
    const { accepted, refused } = await postCreations(apis, settings.seconds);
    const acceptedMs = performance.now() - started;
    const unfinished = await untilAllFinished(db);
    const finishedMs = performance.now() - started;
    const cpuAfter = cpuNow(measured);
    const { rows: states } = await db.query<{ state: string; n: string }>(
      `SELECT state, count(*) AS n FROM (SELECT state FROM operations ORDER BY seq OFFSET $1) AS measured GROUP BY state`,
      [Number(before[0]!.n)],
    );
    const outcome = states.map((row) => `${row.n} ${row.state}`).join(', ');
    record({
      figure: `engine, ${name}`,
      real: `${perSecond((accepted / acceptedMs) * 1000)} accepted, ${perSecond((accepted / finishedMs) * 1000)} terminal${unfinished > 0 ? ` (${unfinished} unfinished after 5 min)` : ''}${refused ? ` (${refused} refused)` : ''} [${outcome}]`,
      goal: '≥ 1,000/s',
    });
    record({
      figure: `engine, ${name}: CPU per operation (accepted and driven)`,
      real: cpuPerOperation(cpuBefore, cpuAfter, accepted),
      goal: 'what 1,000/s needs: well under 2 ms in all on 2 cores',
    });
    return { perSecond: (accepted / finishedMs) * 1000, cpuPerOperation: cpuSum(cpuBefore, cpuAfter, accepted) };
  } finally {
    await db.end();
  }
}

/**
 * What accepting a creation costs alone, on a server whose workers are off
 * (WORKER_CONCURRENCY=0): the engine's figures above are this and the driving together.
 */
export async function acceptOnlySection(server: RunningServer, settings: EngineSettings, label = ''): Promise<EngineFigure> {
  const measured: Measured = { pids: [server.child.pid], postgresDir: path.join(server.dataDir, 'postgres') };
  await postCreations([server.api], settings.warmupSeconds);
  const cpuBefore = cpuNow(measured);
  const started = performance.now();
  const { accepted, refused } = await postCreations([server.api], settings.seconds);
  const acceptedMs = performance.now() - started;
  const cpuAfter = cpuNow(measured);
  record({
    figure: `engine, accepting alone (workers off)${label}`,
    real: `${perSecond((accepted / acceptedMs) * 1000)} accepted${refused ? ` (${refused} refused)` : ''}; CPU per creation: ${cpuPerOperation(cpuBefore, cpuAfter, accepted)}`,
    goal: 'the part of the engine figure that is the API',
  });
  return { perSecond: (accepted / acceptedMs) * 1000, cpuPerOperation: cpuSum(cpuBefore, cpuAfter, accepted) };
}

/**
 * What driving the operations costs alone: `server` has just started, with its workers on, on the
 * data directory of `acceptOnlySection`, whose accepted creations it now drives with no request to
 * serve. The engine's figures above are this and the accepting together, on the same cores.
 */
export async function driveOnlySection(server: RunningServer, label = ''): Promise<EngineFigure> {
  const measured: Measured = { pids: [server.child.pid], postgresDir: path.join(server.dataDir, 'postgres') };
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  try {
    const cpuBefore = cpuNow(measured);
    const started = performance.now();
    // Counted as they stand now: the workers started with the server, and some may be done already.
    const { rows } = await db.query<{ total: string; unfinished: string }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE finished_at IS NULL) AS unfinished FROM operations`,
    );
    const unfinishedAtStart = Number(rows[0]!.unfinished);
    const left = await untilAllFinished(db);
    const drivenMs = performance.now() - started;
    const cpuAfter = cpuNow(measured);
    const driven = unfinishedAtStart - left;
    record({
      figure: `engine, driving alone (a backlog of creations, no requests)${label}`,
      real: `${perSecond((driven / drivenMs) * 1000)} driven to a terminal state (${driven} of ${rows[0]!.total}); CPU per operation: ${cpuPerOperation(cpuBefore, cpuAfter, driven)}`,
      goal: 'the other part of the engine figure',
    });
    return { perSecond: (driven / drivenMs) * 1000, cpuPerOperation: cpuSum(cpuBefore, cpuAfter, driven) };
  } finally {
    await db.end();
  }
}
