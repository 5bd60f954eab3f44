import type { ChildProcess } from 'node:child_process';
import { npmScriptCommand } from '../../scripts/lib/npm-start.ts';
import { commandLineOf, descendantsOf, freePort, procFiles, startProcess, waitForHttp, type Started } from '../../scripts/lib/processes.ts';

export { commandLineOf, descendantsOf, freePort, npmScriptCommand, procFiles, startProcess, waitForHttp, type Started };

/**
 * Stops a tool (`npm run fuzz`, `bench`, `readme:test`) as a busy machine may: `signal` goes to
 * `child` while `runner`, the process running the tool's script, is held stopped for `heldMs`. A
 * wrapper that kills its child when it has not acknowledged a signal within 30 ms (tsx) would
 * leave what the tool started running.
 */
export async function signalWhileHeld(
  child: ChildProcess,
  runner: number,
  signal: NodeJS.Signals = 'SIGTERM',
  heldMs = 500,
): Promise<void> {
  process.kill(runner, 'SIGSTOP');
  child.kill(signal);
  await new Promise((resolve) => setTimeout(resolve, heldMs));
  try {
    process.kill(runner, 'SIGCONT');
  } catch {
    // Killed while it was held: what it left is what the caller's expectations read.
  }
}

/** Process groups that a failing test may leave running; `stop()` (in afterAll) ends whichever still run. */
export class LeftBehind {
  private readonly groups = new Set<number>();

  add(group: number): void {
    this.groups.add(group);
  }

  stop(): void {
    for (const group of this.groups) {
      try {
        process.kill(-group, 'SIGTERM');
      } catch {
        // Gone already, as it should be.
      }
    }
  }
}

/** Whether a process of this id runs (a zombie, not yet reaped, counts as running). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether one of the process's arguments names `file` (a path ending in it). */
export function runsFile(pid: number, file: string): boolean {
  return commandLineOf(pid).some((argument) => argument.endsWith(file));
}

/** The process of `root`'s tree that runs `file` itself: the deepest to name it (a wrapper such as tsx names it too). */
export function processRunning(root: number, file: string): number | undefined {
  return [root, ...descendantsOf(root)].filter((pid) => runsFile(pid, file)).at(-1);
}

/**
 * Starts the mock (`scripts/mock.ts`) on a port found free, and waits until `readyPath` answers.
 * A port found free can be taken by another socket before the mock binds it (the ephemeral range
 * is shared with every outgoing connection of the machine): such a start is retried on a new port.
 * Prism, behind the mock, binds a port the system hands it, which cannot collide.
 */
export async function startMock(readyPath = '/healthz', attempts = 3): Promise<{ mock: Started; baseUrl: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const mock = startProcess(...npmScriptCommand('mock', ['--port', String(port)]));
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${baseUrl}${readyPath}`, mock);
      return { mock, baseUrl };
    } catch (error) {
      await mock.stop();
      if (attempt >= attempts || !mock.output().includes('EADDRINUSE')) throw error;
    }
  }
}
