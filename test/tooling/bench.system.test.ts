// `npm run bench` (scripts/bench.ts) starts servers, floors and mocks, each in a process group of
// its own (so that a stop reaches the PostgreSQL a server started), which a Ctrl-C in the terminal
// or a kill of the bench does not reach. Stopped, it stops them first.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';
import { descendantsOf, isRunning, LeftBehind, npmScriptCommand, processRunning, runsFile, signalWhileHeld } from '../support/processes.ts';

/** How long the bench may take to have its server and the floor running, at most. */
const STARTED_WITHIN_MS = 360_000;

/** Servers a failed run left behind: stopped after the test, whatever it found. */
const leftBehind = new LeftBehind();
afterAll(() => leftBehind.stop());

test(
  'killing the bench (Ctrl-C, SIGTERM) stops the servers it started and removes their data',
  async () => {
    const bench = spawn(...npmScriptCommand('bench', ['--quick', '--only', 'requests']), {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    bench.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    bench.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => bench.once('exit', (code) => resolve(code)));
    const workDir = await eventually(() => /work in (\S+)/.exec(output)?.[1], 'the bench to say where it works', 60_000);
    // The real server and its embedded PostgreSQL, then the stack floor beside it.
    const runner = await eventually(() => processRunning(bench.pid!, 'scripts/bench.ts'), 'the process running scripts/bench.ts', 60_000);
    // The floor starts once the server has answered every figure's request: in a CI run beside the
    // other system tests (QEMU guests, Ceph) and two busy processes, that took more than two minutes.
    // A limit, not a duration; should it pass, what the bench printed says where it was.
    const started = await eventually(
      () => {
        const pids = descendantsOf(runner);
        const servers = pids.filter((pid) => runsFile(pid, 'server/main.ts') || runsFile(pid, 'floor-server.ts'));
        const postgres = pids.filter((pid) => runsFile(pid, 'postgres'));
        return servers.length === 2 && postgres.length > 0 ? [...servers, ...postgres] : undefined;
      },
      'the bench to start its server (with PostgreSQL) and the floor',
      STARTED_WITHIN_MS,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; the bench printed:\n${output}`);
    });
    for (const pid of started) if (runsFile(pid, '.ts')) leftBehind.add(pid);
    await signalWhileHeld(bench, runner);
    expect(await exited, output).toBe(143);
    expect(started.filter(isRunning), output).toEqual([]);
    expect(existsSync(workDir)).toBe(false);
  },
  STARTED_WITHIN_MS + 120_000,
);
