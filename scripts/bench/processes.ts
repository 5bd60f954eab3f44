// The processes the benchmark compares: the real server (as `npm start` runs it), the stack
// floor and the Prism mock, each a child process in a process group of its own, on 127.0.0.1.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { extraNodeArgs, npmScriptCommand, startAsNpmStart } from '../lib/npm-start.ts';
import { descendantsOf, freePort, procFiles, startProcess, waitForHttp, type Started } from '../lib/processes.ts';
import { repoRoot } from '../lib/run.ts';

/** A started process and the address it serves. */
export interface Child extends Started {
  url: string;
  pid: number;
}

/** `command` run from the repository, with `env`, to serve on `url`. */
function spawnChild([command, args]: [command: string, args: string[]], env: Record<string, string>, url: string): Child {
  const started = startProcess(command, args, env, { cwd: repoRoot, keepLastChars: 20_000 });
  return { ...started, url, pid: started.child.pid! };
}

/** Waits until `child` answers `probePath` (polled every 10 ms: start-up time is measured). */
function answers(child: Child, probePath: string, timeoutMs = 60_000): Promise<void> {
  return waitForHttp(`${child.url}${probePath}`, child, timeoutMs, 10);
}

/**
 * The real server as `npm start` runs it (its command line from package.json), with `env`;
 * `root`: another checkout of the project (a baseline measured in the same run).
 */
export async function startRealServer(env: Record<string, string>, root = repoRoot): Promise<Child> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = startAsNpmStart(
    { HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: 'off', LOG_FORMAT: 'json', ...env },
    { root, nodeArgs: extraNodeArgs('BENCH_SERVER_NODE_ARGS'), keepLastChars: 20_000 },
  );
  const child: Child = { ...started, url, pid: started.child.pid! };
  await answers(child, '/healthz');
  return child;
}

/** The stack floor (floor-server.ts) serving the recorded answers in `routesFile`. */
export async function startFloor(routesFile: string): Promise<Child> {
  const port = await freePort();
  // Node (the one running the bench), as `npm start` runs the server.
  const child = spawnChild(
    [process.execPath, [path.join(repoRoot, 'scripts', 'start.mjs'), path.join(repoRoot, 'scripts', 'bench', 'floor-server.ts')]],
    {
      PORT: String(port),
      BENCH_FLOOR_ROUTES: routesFile,
    },
    `http://127.0.0.1:${port}`,
  );
  await answers(child, '/healthz');
  return child;
}

/** `npm run mock` on a free port (its proxy there, Prism on the next port). */
export async function startPrism(): Promise<Child> {
  const port = await freePort();
  const child = spawnChild(npmScriptCommand('mock', ['--port', String(port)]), {}, `http://127.0.0.1:${port}`);
  await answers(child, '/healthz', 120_000);
  return child;
}

/**
 * Resident memory of a process and, when `postgresDir` is given, of the embedded PostgreSQL
 * running there (its postmaster and every backend). `rss` adds each process's RSS (shared pages
 * counted once per process, as `ps` shows them); `pss` shares them out (proportional set size).
 */
export function memoryOf(pid: number, postgresDir?: string): { rss: number; pss: number; processes: number } {
  const pids = [pid];
  if (postgresDir) pids.push(...postgresPids(postgresDir));
  let rss = 0;
  let pss = 0;
  for (const each of pids) {
    try {
      rss += kib(readFileSync(`/proc/${each}/status`, 'utf8'), 'VmRSS');
      pss += kib(readFileSync(`/proc/${each}/smaps_rollup`, 'utf8'), 'Pss');
    } catch {
      // Ended meanwhile.
    }
  }
  return { rss: rss * 1024, pss: pss * 1024, processes: pids.length };
}

/** CPU time (user + system, ms) used so far by a process and, as for `memoryOf`, its PostgreSQL. */
export function cpuOf(pid: number, postgresDir?: string): { node: number; postgres: number } {
  const postgres = postgresDir ? postgresPids(postgresDir) : [];
  // A backend that ended between two readings takes its CPU with it from the sum of the live
  // ones (a pool closing idle connections made a figure taken over a minute read less than
  // nothing): the postmaster's count of its ended children keeps it.
  const ended = postgres.length > 0 ? cpuMsOf(postgres[0]!, 'ended children') : 0;
  return { node: cpuMsOf(pid), postgres: postgres.reduce((sum, each) => sum + cpuMsOf(each), ended) };
}

/**
 * CPU time (user + system, ms) used so far by every process whose name is one of `names` (Ceph's
 * daemons, which the benchmark did not start as children of its own).
 */
export function cpuOfNamed(names: readonly string[]): number {
  let total = 0;
  for (const [pid, name] of procFiles('comm')) if (names.includes(name.trim())) total += cpuMsOf(pid);
  return total;
}

/** CPU time (user + system, ms) this process has used so far: the benchmark's own clients. */
export function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * CPU time per unit of work, measured around `work`: a figure the machine's other load hardly
 * changes, where requests per second on a shared machine do. Beside the server's Node and its
 * PostgreSQL, `also` names other readings of CPU used so far (ms) to take the same way (another
 * store's daemons, the benchmark's own clients).
 */
export async function cpuPer<T, Also extends string = never>(
  server: { pid: number; postgresDir: string } | undefined,
  work: () => Promise<T>,
  units: (result: T) => number,
  also = {} as Record<Also, () => number>,
): Promise<{ result: T; perUnit?: Record<'node' | 'postgres' | Also, number> }> {
  if (!server) return { result: await work() };
  const readings = (): Record<string, number> => ({
    ...cpuOf(server.pid, server.postgresDir),
    ...Object.fromEntries(Object.entries<() => number>(also).map(([name, read]) => [name, read()])),
  });
  const before = readings();
  const result = await work();
  const after = readings();
  const count = units(result);
  const perUnit = Object.fromEntries(Object.keys(after).map((name) => [name, (after[name]! - before[name]!) / count]));
  return { result, perUnit: perUnit as Record<'node' | 'postgres' | Also, number> };
}

function postgresPids(postgresDir: string): number[] {
  const pidFile = path.join(postgresDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return [];
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  return [postmaster, ...descendantsOf(postmaster)];
}

/**
 * utime + stime of /proc/<pid>/stat, in ms (clock ticks of 10 ms); or, for 'ended children',
 * cutime + cstime: the CPU of the children it has waited for.
 */
function cpuMsOf(pid: number, whose: 'own' | 'ended children' = 'own'): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const first = whose === 'own' ? 11 : 13;
    return (Number(fields[first]) + Number(fields[first + 1])) * 10;
  } catch {
    // Ended meanwhile.
    return 0;
  }
}

function kib(text: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}
