// `npm run bench`: the real server (as `npm start` runs it, embedded PostgreSQL in a temporary
// DATA_DIR) measured side by side with the floor of its own stack (scripts/bench/floor-server.ts)
// and the Prism mock, in one run; then lists at 100,000 rows, the operations engine, a metering
// pass at 1,200 instances, memory, cold start and restart; real guests under COMPUTE_DRIVER=qemu
// where QEMU and the test image are there. Prints each figure with its ratio and goal; asserts
// nothing.
//   npm run bench               the full run (about ten minutes)
//   npm run bench -- --quick    a smoke run (also BENCH_QUICK=1): short loads, 10,000 rows
//   npm run bench -- --only requests,startup   only the named sections
//     (startup, requests, lists, engine, metering, events, s3, cli, qemu; memory comes with requests and lists)
// Each section is a module of scripts/bench/; a new one is a function called below.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../server/config.ts';
import { IDLE_COLLECTION_DEFAULTS } from '../server/idle-collection.ts';
import { runS3Bench } from './bench-s3.ts';
import { cliSection } from './bench/cli.ts';
import { call, mib } from './bench/api.ts';
import {
  acceptOnlySection,
  compareEngines,
  driveOnlySection,
  ENGINE_ENV,
  engineSection,
  engineTitle,
  type EngineFigures,
} from './bench/engine.ts';
import { eventsSection } from './bench/events.ts';
import { listsSection } from './bench/lists.ts';
import { meteringSection } from './bench/metering.ts';
import { memoryOf } from './bench/processes.ts';
import { QEMU_ENV, qemuMissing, qemuSection } from './bench/qemu.ts';
import { printTable, ratio, record, section } from './bench/report.ts';
import { requestsSection } from './bench/requests.ts';
import { startWithDataDir, type RunningServer } from './bench/servers.ts';
import { stopStartedOnSignals } from './lib/processes.ts';

const SECTIONS = ['startup', 'requests', 'lists', 'engine', 'metering', 'events', 's3', 'cli', 'qemu'] as const;
/** Lists whose first request after a start the start-up section times. */
const FIRST_REQUESTS = [
  '/compute/vms',
  '/compute/public-ips',
  '/s3/buckets',
  '/s3/access-keys',
  '/invoices',
  '/api-tokens',
  '/operations',
  '/audit-events',
];
const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } } });
const quick = values.quick || process.env.BENCH_QUICK === '1';
const only = values.only?.split(',').map((name) => name.trim());
const unknownSection = only?.find((name) => !(SECTIONS as readonly string[]).includes(name));
if (unknownSection) {
  console.error(`bench: no section "${unknownSection}"; the sections are ${SECTIONS.join(', ')}`);
  process.exit(2);
}
const runs = (name: (typeof SECTIONS)[number]): boolean => !only || only.includes(name);
const workDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-'));
// As root, the embedded PostgreSQL runs as a user of its own, which must be able to enter it.
chmodSync(workDir, 0o711);
// A Ctrl-C or a kill stops the servers, floors and mocks the bench started (each in a process
// group of its own, which the signal does not reach), then removes what they kept.
stopStartedOnSignals(() => rmSync(workDir, { recursive: true, force: true }));
const dataDir = (name: string) => path.join(workDir, name);

/**
 * Another checkout of the project (BENCH_BASELINE, its dependencies installed), whose server the
 * start-up, requests, engine and events sections measure in the same run, in turn with this
 * one's: a change is read as a ratio measured under the same load, on a machine whose load others
 * set.
 */
const baselineRoot = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : undefined;

const running: RunningServer[] = [];
async function start(name: string, env: Record<string, string> = {}, root?: string): Promise<RunningServer> {
  const server = await startWithDataDir(dataDir(name), env, root);
  running.push(server);
  return server;
}
async function stop(server: RunningServer): Promise<void> {
  await server.child.stop();
  running.splice(running.indexOf(server), 1);
}

/** How long the server is left quiet before its memory at rest is read: past its idle collection. */
const AT_REST_AFTER_MS = IDLE_COLLECTION_DEFAULTS.quietForMs + 2_000;

function recordMemory(figure: string, server: RunningServer): void {
  const memory = memoryOf(server.child.pid, path.join(server.dataDir, 'postgres'));
  const node = memoryOf(server.child.pid);
  record({
    figure,
    real: `RSS ${mib(memory.rss).toFixed(0)} MiB, PSS ${mib(memory.pss).toFixed(0)} MiB (Node RSS ${mib(node.rss).toFixed(0)} MiB; PostgreSQL ${memory.processes - 1} processes)`,
    goal: '≤ 250 MiB',
  });
}

try {
  console.log(`cloud-platform bench${quick ? ' (quick)' : ''}: Node ${process.versions.node}, work in ${workDir}`);
  // The machine may be shared: figures per second are only comparable at a similar load.
  const loadNow = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(', ');
  console.log(`load average at the start: ${loadNow()}`);

  if (runs('startup')) {
    section('start-up');
    type StartFigures = Pick<RunningServer, 'startMs' | 'startCpuMs'>;
    const seconds = ({ startMs, startCpuMs }: StartFigures) =>
      `${(startMs / 1000).toFixed(2)} s (Node CPU ${(startCpuMs / 1000).toFixed(2)} s)`;
    /** A start of a checkout on DATA_DIR `name`, stopped again at once. */
    const timedStart = async (name: string, root?: string): Promise<StartFigures> => {
      const server = await start(name, {}, root);
      await stop(server);
      return { startMs: server.startMs, startCpuMs: server.startCpuMs };
    };
    const mean = (starts: StartFigures[]): StartFigures => ({
      startMs: starts.reduce((sum, one) => sum + one.startMs, 0) / starts.length,
      startCpuMs: starts.reduce((sum, one) => sum + one.startCpuMs, 0) / starts.length,
    });
    // With a baseline, the checkouts start in the order this, the baseline, the baseline, this
    // (`names`: the DATA_DIRs of the first and the second start of each), and each figure is the
    // mean of a checkout's two. Started once each in turn, the checkout that went first met a
    // colder machine: the same code read 1.11x to 1.15x of itself as a cold start, and 1.04x to
    // 1.09x as a restart.
    const startTwice = async (figure: string, goal: string, names: [first: string, second: string]) => {
      const first = await timedStart(names[0]);
      if (!baselineRoot) return record({ figure, real: seconds(first), goal });
      const theirs = mean([await timedStart(`baseline-${names[0]}`, baselineRoot), await timedStart(`baseline-${names[1]}`, baselineRoot)]);
      const ours = mean([first, await timedStart(names[1])]);
      record({
        figure,
        real: `${seconds(ours)}; the baseline ${seconds(theirs)} (each the mean of two starts, in the order this, the baseline, the baseline, this)`,
        ratio: ratio(ours.startMs / theirs.startMs),
        goal,
      });
    };
    await startTwice('cold start (empty DATA_DIR)', '< 2 s', ['startup', 'startup-again']);
    await startTwice('restart (same DATA_DIR)', '< 1 s', ['startup', 'startup']);
    // An operation's first request builds its request and response validators: what a client of a
    // freshly started server waits for once per operation.
    const fresh = await start('startup');
    const firstMs: number[] = [];
    for (const orgPath of FIRST_REQUESTS) {
      const started = performance.now();
      const answer = await call(fresh.api, 'GET', orgPath);
      if (answer.status !== 200) throw new Error(`GET ${orgPath}: ${answer.status} ${answer.text}`);
      firstMs.push(performance.now() - started);
    }
    await stop(fresh);
    firstMs.sort((a, b) => a - b);
    record({
      figure: `first request of an operation (${FIRST_REQUESTS.length} lists after a restart)`,
      real: `median ${firstMs[firstMs.length >> 1]!.toFixed(0)} ms, slowest ${firstMs.at(-1)!.toFixed(0)} ms`,
    });
  }

  if (runs('requests') || runs('lists')) {
    const main = await start('main');
    if (runs('requests')) {
      const baseline = baselineRoot ? await start('baseline-main', {}, baselineRoot) : undefined;
      await requestsSection({
        api: main.api,
        server: { pid: main.child.pid, postgresDir: path.join(main.dataDir, 'postgres') },
        workDir,
        listSize: 100,
        settings: quick ? { connections: 32, seconds: 2, warmupSeconds: 1 } : { connections: 32, seconds: 10, warmupSeconds: 3 },
        baseline: baseline?.api,
      });
      if (baseline) await stop(baseline);
      section('memory');
      recordMemory('server + embedded PostgreSQL after the requests', main);
      // Once quiet, the server gives back what the burst took: its idle collection once quiet for
      // quietForMs (server/idle-collection.ts), the pools' extra connections after an idle second.
      await new Promise((resolve) => setTimeout(resolve, AT_REST_AFTER_MS));
      recordMemory(`… ${AT_REST_AFTER_MS / 1000} s later, at rest`, main);
    }
    if (runs('lists')) {
      await listsSection({
        api: main.api,
        databaseUrl: main.databaseUrl,
        rows: quick ? 10_000 : 100_000,
        settings: quick ? { connections: 1, seconds: 1, warmupSeconds: 0.3 } : { connections: 1, seconds: 3, warmupSeconds: 1 },
      });
      section('memory');
      recordMemory('server + embedded PostgreSQL at the end', main);
    }
    await stop(main);
  }

  if (runs('engine')) {
    const engineSettings = quick ? { seconds: 1, warmupSeconds: 1 } : { seconds: 4, warmupSeconds: 2 };
    engineTitle(engineSettings);
    const measureEngine = async (label: string, root?: string): Promise<EngineFigures> => {
      const name = root ? 'baseline-engine' : 'engine';
      const engine = await start(name, ENGINE_ENV, root);
      const figures = await engineSection(engine, engineSettings, label);
      await stop(engine);
      const acceptOnly = await start(`${name}-accept`, { ...ENGINE_ENV, WORKER_CONCURRENCY: '0' }, root);
      figures.acceptingAlone = await acceptOnlySection(acceptOnly, engineSettings, label);
      await stop(acceptOnly);
      // The same data directory with the workers on: what it accepted is driven with nothing else to do.
      const driveOnly = await start(`${name}-accept`, ENGINE_ENV, root);
      figures.drivingAlone = await driveOnlySection(driveOnly, label);
      await stop(driveOnly);
      return figures;
    };
    const current = await measureEngine('');
    if (baselineRoot) compareEngines(current, await measureEngine(' (baseline)', baselineRoot));
  }

  if (runs('metering')) {
    // No background work: the server's own passes would interleave with the measured ones.
    const metered = await start('metering', { BACKGROUND_WORK: 'false' });
    await meteringSection(metered.databaseUrl, { passes: quick ? 3 : 10 });
    await stop(metered);
  }

  if (runs('events')) {
    await eventsSection(
      start,
      stop,
      quick ? { connections: 32, seconds: 2, warmupSeconds: 1 } : { connections: 32, seconds: 10, warmupSeconds: 3 },
      baselineRoot,
    );
  }

  // The S3 figures, on servers of their own: the embedded store, and RGW beside it when Ceph is
  // there (scripts/bench-s3.ts).
  if (runs('s3')) await runS3Bench({ quick });
  if (runs('cli')) {
    const forCli = await start('cli');
    cliSection(forCli, { quick });
    await stop(forCli);
  }

  // Real guests, where QEMU and the test image are there (the driver's own default folder for it).
  if (runs('qemu')) {
    const testImageDir = loadConfig({ ...process.env, COMPUTE_DRIVER: 'qemu' }).qemu!.testImageDir;
    const missing = qemuMissing(testImageDir);
    if (missing) {
      section('real guests (COMPUTE_DRIVER=qemu)');
      console.log(`  skipped: ${missing}`);
    } else {
      const guests = await start('qemu', QEMU_ENV);
      await qemuSection(guests, workDir, quick ? 1 : 3);
      await stop(guests);
    }
  }
  console.log(`\nload average at the end: ${loadNow()}`);
  printTable();
} finally {
  for (const server of [...running]) await server.child.stop();
  rmSync(workDir, { recursive: true, force: true });
}
