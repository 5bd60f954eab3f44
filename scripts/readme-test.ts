// Runs the README as a new user would: every shell block and TypeScript snippet, in order and
// exactly as printed, against a fresh server (`npm start` on a free port with an empty DATA_DIR).
// Only the environment differs from a reader's terminal: PORT, DATA_DIR and MOCK_PORT point at
// what this run started. Shell blocks share one bash session (variables and functions carry over,
// as in a terminal), with `set -eo pipefail`: a failing command fails its block. A TypeScript
// snippet is saved in the repository's root and run with tsx, as the README tells readers to.
// Blocks marked `<!-- readme-test: skip (why) -->` are listed, not run (scripts/lib/readme-blocks.ts).
//   npm run readme:test [-- --file README.md] [--no-server]
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readmeBlocks, type ReadmeBlock } from './lib/readme-blocks.ts';
import { freePort } from './lib/processes.ts';
import { bin, repoRoot } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    file: { type: 'string', default: path.join(repoRoot, 'README.md') },
    'no-server': { type: 'boolean', default: false },
    'block-timeout': { type: 'string', default: '300' },
  },
});
const readmePath = path.resolve(values.file);
const blockTimeoutMs = Number(values['block-timeout']) * 1000;
const relative = path.relative(repoRoot, readmePath) || readmePath;

const dataDir = mkdtempSync(path.join(tmpdir(), 'readme-test-'));
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PORT: String(await freePort()),
  MOCK_PORT: String(await freePort()),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  METRICS_PORT: '0',
  S3_PORT: String(await freePort()),
  LOG_FORMAT: 'json',
  LOG_LEVEL: 'warn',
  NO_COLOR: '1',
  NO_UPDATE_NOTIFIER: '1',
  // The AWS CLI and SDK of the S3 blocks talk only to the local endpoint the blocks name: never
  // to an instance metadata service for credentials or a region.
  AWS_EC2_METADATA_DISABLED: 'true',
};
const background: ChildProcess[] = [];

type BlockResult = { ok: true } | { ok: false; reason: string; output: string };

async function runBlock(block: ReadmeBlock, shell: ShellSession): Promise<BlockResult> {
  if (block.directive?.mode === 'background') {
    const child = spawn('bash', ['-c', block.text], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    background.push(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    if (!block.directive.ready) return { ok: true };
    const url = block.directive.ready.replace(/\$\{?(\w+)\}?/g, (_match, name: string) => env[name] ?? '');
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) return { ok: false, reason: `it exited (${child.exitCode}) before ${url} answered`, output };
      if (await answers(url)) return { ok: true };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return { ok: false, reason: `${url} did not answer within 120 s`, output };
  }
  if (block.kind === 'shell') return shell.run(block.text, blockTimeoutMs);
  // A TypeScript snippet: saved in the repository's root (its imports are relative to it) and run with tsx.
  const file = path.join(repoRoot, `readme-snippet-${process.pid}-${block.line}.ts`);
  writeFileSync(file, block.text);
  try {
    return await runProcess(bin('tsx'), [file], blockTimeoutMs);
  } finally {
    rmSync(file, { force: true });
  }
}

/** One bash process for every shell block, as one terminal: what a block defines, later ones use. */
class ShellSession {
  private readonly child: ChildProcess;
  private output = '';
  private waiting: ((status: number | 'exited') => void) | undefined;
  private readonly marker = `__readme_block_done_${process.pid}__`;
  private readonly scriptDir = mkdtempSync(path.join(tmpdir(), 'readme-blocks-'));
  private count = 0;

  constructor() {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const collect = (chunk: Buffer) => {
      this.output += chunk.toString();
      const done = new RegExp(`${this.marker} (\\d+)\\n`).exec(this.output);
      if (done && this.waiting) {
        this.output = this.output.replace(done[0], '');
        this.waiting(Number(done[1]));
      }
    };
    this.child.stdout!.on('data', collect);
    this.child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.on('exit', () => this.waiting?.('exited'));
    this.child.stdin!.write('set -eo pipefail\n');
  }

  run(text: string, timeoutMs: number): Promise<BlockResult> {
    this.count += 1;
    const file = path.join(this.scriptDir, `block-${this.count}.sh`);
    writeFileSync(file, text);
    this.output = '';
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        resolve({ ok: false, reason: `still running after ${timeoutMs / 1000} s`, output: this.output });
      }, timeoutMs);
      this.waiting = (status) => {
        clearTimeout(timer);
        this.waiting = undefined;
        if (status === 0) resolve({ ok: true });
        else
          resolve({
            ok: false,
            reason: status === 'exited' ? 'a command failed (set -e ended the session)' : `exit status ${status}`,
            output: this.output,
          });
      };
      // stdin of the block is /dev/null, so that no command in it reads the session's own input.
      this.child.stdin!.write(`source ${JSON.stringify(file)} < /dev/null; echo "${this.marker} $?"\n`);
    });
  }

  close(): void {
    this.child.stdin!.end();
    if (this.child.exitCode === null) this.child.kill();
    rmSync(this.scriptDir, { recursive: true, force: true });
  }
}

function runProcess(command: string, args: string[], timeoutMs: number): Promise<BlockResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ ok: true });
      else resolve({ ok: false, reason: signal ? `killed after ${timeoutMs / 1000} s` : `exit status ${code}`, output });
    });
  });
}

/** `npm start` as the README runs it, on this run's PORT and DATA_DIR; resolves once it is ready. */
async function startServer(): Promise<ChildProcess> {
  const child = spawn('npm', ['start'], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${env.PORT}/readyz`;
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode}):\n${output}`);
    if ((await answers(url, 200)) && existsSync(path.join(dataDir, 'bootstrap.json'))) {
      console.log(`readme-test: npm start serves ${url.replace('/readyz', '')} with DATA_DIR=${dataDir}`);
      return child;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stopGroup(child);
  throw new Error(`npm start was not ready within 180 s:\n${output}`);
}

async function answers(url: string, status?: number): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return status === undefined || response.status === status;
  } catch {
    return false;
  }
}

/**
 * Stops a process started in a group of its own, with everything it started, and waits for it:
 * the server stops its embedded PostgreSQL before it exits, and only then is DATA_DIR removed.
 */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    child.kill('SIGTERM');
  }
  const timeout = new Promise((resolve) => setTimeout(resolve, 30_000, 'timeout'));
  if ((await Promise.race([exited, timeout])) === 'timeout') {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }
}

// The run itself, after the declarations it uses.
let server: ChildProcess | undefined;
let failed = false;

try {
  if (!values['no-server']) server = await startServer();
  const shell = new ShellSession();
  for (const block of readmeBlocks(readFileSync(readmePath, 'utf8'))) {
    const where = `${relative}:${block.line} (${block.language || 'no language'})`;
    if (block.kind === 'output') {
      console.log(`-   ${where}: output shown to the reader, not run`);
      continue;
    }
    if (block.directive?.mode === 'skip') {
      console.log(`SKIP ${where}: ${block.directive.reason}`);
      continue;
    }
    const started = Date.now();
    const result = await runBlock(block, shell);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (result.ok) {
      console.log(`ok   ${where} ${block.directive ? `[${block.directive.mode}: ${block.directive.reason}] ` : ''}(${seconds} s)`);
      continue;
    }
    failed = true;
    console.error(`FAIL ${where} (${seconds} s): ${result.reason}\n--- the block ---\n${block.text}--- its output ---\n${result.output}`);
    break;
  }
  shell.close();
} finally {
  await Promise.all([...background, ...(server ? [server] : [])].map(stopGroup));
  rmSync(dataDir, { recursive: true, force: true });
}
if (failed) process.exit(1);
console.log(`readme-test: every block of ${relative} that is code ran as printed.`);
process.exit(0);
