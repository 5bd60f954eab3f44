// Runs the documentation as a new user would: every shell block and TypeScript snippet of the
// README and of each page of docs/, in order and exactly as printed, each page against a fresh
// server (`npm start` on free ports with an empty DATA_DIR, started before the page's first block
// that runs). Only the environment differs from a reader's terminal: PORT, DATA_DIR, S3_PORT,
// METRICS_PORT and MOCK_PORT point at what this run started. A page's shell blocks share one bash
// session (variables and functions carry over, as in a terminal) with `set -euo pipefail`: a
// failing command, or a variable the page never set, fails its block. A TypeScript snippet is
// saved in the repository's root and run with tsx, as the pages tell readers to. Blocks marked
// `<!-- readme-test: skip (why) -->` are listed, not run; a page whose block is marked `server`
// starts the server itself, with the settings it shows; a block marked `standalone` needs no
// server, and a page made only of such blocks gets none (scripts/lib/readme-blocks.ts).
//   npm run readme:test [-- --file README.md --file docs/billing.md] [--no-server] [--verbose: every block's output]
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readmeBlocks, type ReadmeBlock } from './lib/readme-blocks.ts';
import { freePort, onStopSignals } from './lib/processes.ts';
import { bin, repoRoot } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    file: { type: 'string', multiple: true },
    'no-server': { type: 'boolean', default: false },
    'block-timeout': { type: 'string', default: '300' },
    verbose: { type: 'boolean', default: false },
  },
});
const blockTimeoutMs = Number(values['block-timeout']) * 1000;

/** The README, then every page of docs/ in name order. */
function documentationPages(): string[] {
  const docs = path.join(repoRoot, 'docs');
  const pages = existsSync(docs) ? readdirSync(docs).filter((name) => name.endsWith('.md')) : [];
  return [path.join(repoRoot, 'README.md'), ...pages.sort().map((name) => path.join(docs, name))];
}

type BlockResult = { ok: true; output?: string } | { ok: false; reason: string; output: string };

/** One page's run: its own DATA_DIR, ports, shell session and (when it needs one) server. */
class PageRun {
  private readonly background: ChildProcess[] = [];
  private server: ChildProcess | undefined;
  private shell: ShellSession | undefined;

  readonly relative: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly dataDir: string;

  private constructor(relative: string, env: NodeJS.ProcessEnv, dataDir: string) {
    this.relative = relative;
    this.env = env;
    this.dataDir = dataDir;
  }

  static async create(file: string): Promise<PageRun> {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'readme-test-'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(await freePort()),
      MOCK_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
      S3_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'warn',
      NO_COLOR: '1',
      NO_UPDATE_NOTIFIER: '1',
      // The AWS CLI and SDK of the S3 blocks talk only to the local endpoint the blocks name: never
      // to an instance metadata service for credentials or a region.
      AWS_EC2_METADATA_DISABLED: 'true',
    };
    return new PageRun(path.relative(repoRoot, file) || file, env, dataDir);
  }

  /** Runs the page's blocks in order; false once one fails (the later ones are not run). */
  async run(blocks: ReadmeBlock[], startServer: boolean): Promise<boolean> {
    const startsItsOwn = blocks.some((block) => block.directive?.mode === 'server');
    for (const block of blocks) {
      const where = `${this.relative}:${block.line} (${block.language || 'no language'})`;
      if (block.kind === 'output') {
        console.log(`-   ${where}: output shown to the reader, not run`);
        continue;
      }
      if (block.directive?.mode === 'skip') {
        console.log(`SKIP ${where}: ${block.directive.reason}`);
        continue;
      }
      const checks = checksRunBeside(block);
      if (checks) {
        console.log(`SKIP ${where}: npm test runs ${checks.join(' and ')} itself, beside this test, and fails if they fail`);
        continue;
      }
      const needsServer = block.directive?.mode !== 'standalone';
      if (startServer && needsServer && !startsItsOwn && !this.server) this.server = await this.startServer();
      const started = Date.now();
      const result = await this.runBlock(block);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      if (result.ok) {
        console.log(`ok   ${where} ${block.directive ? `[${block.directive.mode}: ${block.directive.reason}] ` : ''}(${seconds} s)`);
        if (values.verbose && result.output) console.log(result.output.replace(/\r/g, '').replace(/^/gm, '     | '));
        continue;
      }
      console.error(`FAIL ${where} (${seconds} s): ${result.reason}\n--- the block ---\n${block.text}--- its output ---\n${result.output}`);
      return false;
    }
    return true;
  }

  private async runBlock(block: ReadmeBlock): Promise<BlockResult> {
    const mode = block.directive?.mode;
    if (mode === 'background' || mode === 'server') {
      const { child, output } = this.spawnInGroup('bash', ['-c', block.text]);
      this.background.push(child);
      if (mode === 'server') return this.untilReady(child, output);
      if (!block.directive!.ready) return { ok: true };
      const url = block.directive!.ready.replace(/\$\{?(\w+)\}?/g, (_match, name: string) => this.env[name] ?? '');
      return this.untilAnswers(child, output, url, 120_000);
    }
    if (block.kind === 'shell') {
      this.shell ??= new ShellSession(this.env);
      return this.shell.run(block.text, blockTimeoutMs);
    }
    // A TypeScript snippet: saved in the repository's root (its imports are relative to it) and run with tsx.
    const file = path.join(repoRoot, `readme-snippet-${process.pid}-${path.basename(this.relative, '.md')}-${block.line}.ts`);
    writeFileSync(file, block.text);
    try {
      return await runProcess(bin('tsx'), [file], this.env, blockTimeoutMs);
    } finally {
      rmSync(file, { force: true });
    }
  }

  /** `npm start` as the README runs it, on this page's PORT and DATA_DIR; resolves once it is ready. */
  private async startServer(): Promise<ChildProcess> {
    const { child, output } = this.spawnInGroup('npm', ['start']);
    const ready = await this.untilReady(child, output);
    if (!ready.ok) {
      await stopGroup(child);
      throw new Error(`npm start ${ready.reason}:\n${ready.output}`);
    }
    console.log(`readme-test: npm start serves http://127.0.0.1:${this.env.PORT} with DATA_DIR=${this.dataDir}`);
    return child;
  }

  /** Ready as a reader's server is after its first start: /readyz answers 200 and bootstrap.json is written. */
  private async untilReady(child: ChildProcess, output: () => string): Promise<BlockResult> {
    const url = `http://127.0.0.1:${this.env.PORT}/readyz`;
    const bootstrap = path.join(this.dataDir, 'bootstrap.json');
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) return { ok: false, reason: `exited (${child.exitCode}) before it was ready`, output: output() };
      if ((await answers(url, 200)) && existsSync(bootstrap)) return { ok: true };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return { ok: false, reason: `was not ready (${url}, ${bootstrap}) within 180 s`, output: output() };
  }

  private async untilAnswers(child: ChildProcess, output: () => string, url: string, timeoutMs: number): Promise<BlockResult> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) return { ok: false, reason: `it exited (${child.exitCode}) before ${url} answered`, output: output() };
      if (await answers(url)) return { ok: true };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return { ok: false, reason: `${url} did not answer within ${timeoutMs / 1000} s`, output: output() };
  }

  /** A command in a process group of its own (stopped with everything it started), and what it printed. */
  private spawnInGroup(command: string, args: string[]): { child: ChildProcess; output: () => string } {
    const child = spawn(command, args, { cwd: repoRoot, env: this.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return { child, output: () => output };
  }

  /** Stops what the page started (the server stops its embedded PostgreSQL first), then removes its DATA_DIR. */
  async close(): Promise<void> {
    this.shell?.close();
    await Promise.all([...this.background, ...(this.server ? [this.server] : [])].map(stopGroup));
    rmSync(this.dataDir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** One bash process for every shell block of a page, as one terminal: what a block defines, later ones use. */
class ShellSession {
  private readonly child: ChildProcess;
  private output = '';
  private waiting: ((status: number | 'exited') => void) | undefined;
  private readonly marker = `__readme_block_done_${process.pid}__`;
  private readonly scriptDir = mkdtempSync(path.join(tmpdir(), 'readme-blocks-'));
  private count = 0;

  constructor(env: NodeJS.ProcessEnv) {
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
    // A session ended by `set -e` may have its last words (bash's "unbound variable") still in the
    // pipes when 'exit' comes: they are read first ('close'), unless a job the page left running
    // in the background holds the pipes open, which a short wait bounds.
    this.child.on('exit', () => {
      const ended = () => this.waiting?.('exited');
      const grace = setTimeout(ended, 2_000);
      this.child.once('close', () => {
        clearTimeout(grace);
        ended();
      });
    });
    // -u as well: a block that uses a variable no block of its page set (a `$BASE` never defined)
    // prints something else than the page promises, and must fail rather than print it.
    this.child.stdin!.write('set -euo pipefail\n');
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
        if (status === 0) resolve({ ok: true, output: this.output });
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

function runProcess(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<BlockResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    // 'close': once the output is read to its end (at 'exit' its last lines may still be in the pipes).
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ ok: true, output });
      else resolve({ ok: false, reason: signal ? `killed after ${timeoutMs / 1000} s` : `exit status ${code}`, output });
    });
  });
}

/**
 * `npm test` runs its static checks beside the tests (scripts/run-tests.ts), and names them in
 * NPM_TEST_CHECKS. A shell block that only runs some of them (`npm run -s spec:lint`) would run
 * them a second time in the same `npm test`, on the same tree: the contract page's lint alone took
 * a minute and a half of the docs test. Such a block's checks, when named there, are left to npm
 * test; run on its own (`npm run readme:test`), the block runs.
 */
function checksRunBeside(block: ReadmeBlock): string[] | undefined {
  const named = new Set((process.env.NPM_TEST_CHECKS ?? '').split(',').filter(Boolean));
  if (block.kind !== 'shell' || named.size === 0) return undefined;
  const commands = block.text
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const checks = commands.map((command) => /^npm run (?:-s )?([\w:-]+)$/.exec(command)?.[1]);
  return commands.length > 0 && checks.every((check) => check !== undefined && named.has(check)) ? (checks as string[]) : undefined;
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
 * Stops a process started in a group of its own, with everything it started, and waits until
 * every process of the group has exited: npm (or the bash of a block) can exit at the signal while
 * the server under it is still stopping its embedded PostgreSQL, which wrote into a DATA_DIR
 * already being removed and left it behind. Only then is DATA_DIR removed.
 */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.pid === undefined) return;
  const group = -child.pid;
  const signal = (name: NodeJS.Signals | 0): boolean => {
    try {
      process.kill(group, name);
      return true;
    } catch {
      return false; // no process is left in the group
    }
  };
  if (!signal('SIGTERM')) return;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if (!signal(0)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  signal('SIGKILL');
}

// The run itself, after the declarations it uses: page after page, each on its own.
const files = values.file?.length ? values.file.map((file) => path.resolve(file)) : documentationPages();
const failedPages: string[] = [];
// A Ctrl-C or a kill stops what the page being run started (its server and background blocks run
// in process groups of their own, which the signal does not reach) and removes its DATA_DIR.
let running: PageRun | undefined;
onStopSignals(async () => await running?.close());
for (const file of files) {
  const page = await PageRun.create(file);
  running = page;
  let passed = false;
  try {
    passed = await page.run(readmeBlocks(readFileSync(file, 'utf8')), !values['no-server']);
  } catch (error) {
    console.error(`FAIL ${page.relative}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await page.close();
    running = undefined;
  }
  if (passed) console.log(`readme-test: every block of ${page.relative} that is code ran as printed.`);
  else failedPages.push(page.relative);
}
if (failedPages.length > 0) {
  console.error(`readme-test: a block failed in ${failedPages.join(', ')}`);
  process.exit(1);
}
process.exit(0);
