// Child processes of the tools and the tests: a long-running command in a process group of its
// own (stopped as a whole: npm and tsx wrappers and what they started), what it printed, and a
// wait until it answers HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A TCP port of 127.0.0.1 that was free a moment ago. It is drawn below the system's ephemeral range where there is room:
 * every outgoing connection of the machine takes a port from that range, and one could take a port probed free there before
 * the process it was meant for binds it. Below it, only another listener can.
 */
export async function freePort(): Promise<number> {
  const [lowest, highest] = portsBelowEphemeralRange();
  for (let attempt = 0; attempt < 50 && highest > lowest; attempt++) {
    const port = await listenOnce(lowest + Math.floor(Math.random() * (highest - lowest)));
    if (port) return port;
  }
  return listenOnce(0);
}

function portsBelowEphemeralRange(): [number, number] {
  let ephemeralStart = 32768;
  try {
    ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    // Not Linux: Linux's default is a fair guess (macOS starts at 49152).
  }
  return [10_000, Math.min(ephemeralStart, 65_536)];
}

/** Binds and releases `port` (0: one the system picks); the port bound, or 0 when it was taken. */
function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(0) : reject(error)));
    probe.listen(port, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface Started {
  child: ChildProcess;
  /** What it printed on stdout and stderr, interleaved (for error messages and assertions). */
  output: () => string;
  /** SIGTERM to its process group (whatever of it still runs); resolves once it has exited. */
  stop: () => Promise<void>;
}

export interface StartOptions {
  cwd?: string;
  /** Keep only the end of the output: a server logging every request under load would fill memory. */
  keepLastChars?: number;
}

/** What startProcess started and is still running: what a signal to this process stops (stopStartedOnSignals). */
const running = new Set<Started>();

/** Starts a long-running command and keeps what it prints. */
export function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv = {}, options: StartOptions = {}): Started {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
    if (options.keepLastChars !== undefined && output.length > options.keepLastChars) output = output.slice(-options.keepLastChars);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const started: Started = {
    child,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        // The group is signalled even when its first process has ended: what it started may
        // still run (a mock whose output closed under it ended, and left Prism running).
        const ended = child.exitCode !== null || child.signalCode !== null;
        if (!ended) child.once('exit', () => resolve());
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          return resolve(); // no process is left in the group
        }
        if (ended) resolve();
      }),
  };
  running.add(started);
  child.once('exit', () => running.delete(started));
  return started;
}

/**
 * For a tool that starts servers and may be stopped (`npm run bench`, `npm run fuzz`): on SIGINT
 * or SIGTERM, stops every process startProcess started that still runs, then runs `cleanup`, then
 * exits 130 or 143. Each of those processes runs in a process group of its own (so that its stop
 * reaches what it started: PostgreSQL), which a Ctrl-C in the terminal or a kill of the tool does
 * not reach: without this they were left running.
 */
export function stopStartedOnSignals(cleanup: () => void | Promise<void> = () => {}): void {
  onStopSignals(async () => {
    await Promise.all([...running].map((started) => started.stop()));
    await cleanup();
  });
}

/** On SIGINT or SIGTERM (the first of them), runs `stop`, then exits as the signal would have: 130 or 143. */
export function onStopSignals(stop: () => Promise<void>): void {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => void stop().finally(() => process.exit(code)));
  }
}

/** Polls `url` every `pollMs` until it answers with any HTTP status; fails when the process exits or after `timeoutMs`. */
export async function waitForHttp(url: string, started: Started, timeoutMs = 60_000, pollMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (started.child.exitCode !== null) throw new Error(`the process exited early:\n${started.output()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${started.output()}`);
}

/** A process's arguments, its command first, read from Linux's /proc; none once it has ended. */
export function commandLineOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * The text of `/proc/<pid>/<file>` for every process running, by pid (Linux). A process that
 * ends while they are read is left out.
 */
export function procFiles(file: 'comm' | 'cmdline' | 'stat'): Map<number, string> {
  const texts = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      texts.set(Number(entry), readFileSync(`/proc/${entry}/${file}`, 'utf8'));
    } catch {
      // Ended meanwhile.
    }
  }
  return texts;
}

/** Every process under `root` (its children, theirs, and so on), read from Linux's /proc. */
export function descendantsOf(root: number): number[] {
  const parents = new Map<number, number>();
  // The parent pid is the second field after the command name in parentheses (which may contain spaces).
  for (const [pid, stat] of procFiles('stat')) parents.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
  const found = [root];
  for (let index = 0; index < found.length; index++) {
    for (const [pid, parent] of parents) if (parent === found[index]) found.push(pid);
  }
  return found.slice(1);
}
