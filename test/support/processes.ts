import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { bin, repoRoot } from '../../scripts/lib/run.ts';

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface Started {
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts a long-running command and keeps what it prints, for error messages. */
export function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Started {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    child,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        // The whole process group: npm/tsx wrappers and what they started.
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          resolve();
        }
      }),
  };
}

/** Polls `url` until it answers with any HTTP status, or fails after `timeoutMs`. */
export async function waitForHttp(url: string, started: Started, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (started.child.exitCode !== null) throw new Error(`the process exited early:\n${started.output()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${started.output()}`);
}

/**
 * Starts the mock (`scripts/mock.ts`) on ports found free, and waits until `readyPath` answers.
 * A port found free can be taken by another socket before the mock binds it (the ephemeral range
 * is shared with every outgoing connection of the machine): such a start is retried on new ports.
 */
export async function startMock(readyPath = '/healthz', attempts = 3): Promise<{ mock: Started; baseUrl: string }> {
  for (let attempt = 1; ; attempt++) {
    const [port, prismPort] = [await freePort(), await freePort()];
    const mock = startProcess(bin('tsx'), [
      path.join(repoRoot, 'scripts', 'mock.ts'),
      '--port',
      String(port),
      '--prism-port',
      String(prismPort),
    ]);
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
