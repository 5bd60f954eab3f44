// The S3 endpoint's lower CPU priority (s3-priority.ts): a thread that lowers its own runs lower,
// and so do the threads it starts, while the thread that started it keeps its priority; a
// PostgreSQL backend is lowered and never raised, and a process that is not PostgreSQL's is left
// as it is. npm-start.system.test.ts checks that a server started as users start it runs its S3
// endpoint and that endpoint's backends lower than its API.
import { spawn } from 'node:child_process';
import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { afterEach, describe, expect, inject, test } from 'vitest';
import { lowerBackendPriority } from '../../../../server/areas/storage/s3-priority.ts';

const MODULE = new URL('../../../../server/areas/storage/s3-priority.ts', import.meta.url).href;

// A thread that lowers its priority by `steps`, then starts a thread of its own; both report their
// kernel ids and stay until they are ended, so that their priorities can be read meanwhile.
const LOWERING_THREAD = `
const { parentPort, workerData, Worker } = require('node:worker_threads');
const ownId = "Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop())";
import(workerData.module).then(({ lowerThreadPriority }) => {
  const nice = lowerThreadPriority(workerData.steps);
  const started = new Worker(\`require('node:worker_threads').parentPort.postMessage(\${ownId}); setInterval(() => {}, 60000);\`, { eval: true });
  started.once('message', (startedThread) => parentPort.postMessage({ nice, thread: eval(ownId), startedThread }));
});
`;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

describe.runIf(process.platform === 'linux')("the S3 endpoint's priority", () => {
  test('a thread that lowers its priority runs lower, and so do the threads it starts; the thread that started it does not', async () => {
    const ownBefore = getPriority();
    const steps = 3;
    const worker = new Worker(LOWERING_THREAD, { eval: true, workerData: { module: MODULE, steps } });
    cleanups.push(() => worker.terminate());
    const { nice, thread, startedThread } = await new Promise<{ nice: number; thread: number; startedThread: number }>(
      (resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      },
    );

    const expected = Math.min(19, ownBefore + steps);
    expect(nice).toBe(expected);
    expect(getPriority(thread), 'the lowered thread').toBe(expected);
    expect(getPriority(startedThread), 'a thread it started afterwards').toBe(expected);
    expect(getPriority(), 'the thread that started it').toBe(ownBefore);
  });

  test('a PostgreSQL backend is lowered and never raised; a process that is not PostgreSQL is left as it is', async () => {
    const client = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await client.connect();
    cleanups.push(() => client.end());
    const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const lower = Math.min(19, getPriority(backend) + 4);

    expect(lowerBackendPriority(backend, lower)).toBe(true);
    expect(getPriority(backend)).toBe(lower);
    // Asked for a higher priority than it has, it keeps its own: S3 never takes the API's share.
    expect(lowerBackendPriority(backend, lower - 2)).toBe(true);
    expect(getPriority(backend)).toBe(lower);
    // The connection still answers.
    expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);

    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    cleanups.push(() => other.kill());
    await new Promise((resolve) => other.once('spawn', resolve));
    const otherPid = other.pid!;
    const otherBefore = getPriority(otherPid);
    expect(lowerBackendPriority(otherPid, 19)).toBe(false);
    expect(getPriority(otherPid)).toBe(otherBefore);
  });
});
