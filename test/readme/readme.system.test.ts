// The documentation is tested: every shell block and TypeScript snippet of the README and of each
// page of docs/ runs, in order and as printed, each page against a fresh `npm start`
// (scripts/readme-test.ts). The runner itself is checked on planted pages: a broken block fails
// the run and is named, a variable no block set fails its block, skips are reported with their
// reason, and a page that starts its own server gets no other.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { readmeBlocks } from '../../scripts/lib/readme-blocks.ts';
import { repoRoot, run } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';
import { LeftBehind, npmScriptCommand, processRunning, signalWhileHeld } from '../support/processes.ts';

/** `npm run readme:test -- args` as package.json says it (Node running scripts/readme-test.ts), without npm. */
const readmeTest = (args: string[]) => npmScriptCommand('readme:test', args);
const workDir = mkdtempSync(path.join(tmpdir(), 'readme-runner-'));
/** Servers a failed run left behind: stopped after the tests, whatever they found. */
const leftBehind = new LeftBehind();
afterAll(() => {
  leftBehind.stop();
  rmSync(workDir, { recursive: true, force: true });
});

function planted(name: string, markdown: string): string {
  const file = path.join(workDir, name);
  writeFileSync(file, markdown);
  return file;
}

/** The README, then every page of docs/: what a reader is given. */
const pages = [
  'README.md',
  ...(existsSync(path.join(repoRoot, 'docs')) ? readdirSync(path.join(repoRoot, 'docs')) : [])
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const tally = { ran: 0, skipped: 0 };

describe('the documentation', () => {
  test.each(pages)(
    'every block of %s that is code runs as printed against a fresh server',
    async (page) => {
      const result = await run(...readmeTest(['--file', page]));
      // The whole stderr goes with a failure: it holds the failing block's output, which CI shows last.
      expect(
        result.stderr.split('\n').filter((line) => /^FAIL/.test(line)),
        result.stderr,
      ).toEqual([]);
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(result.stdout).toContain(`every block of ${page} that is code ran as printed`);
      // Each skip says why.
      const skips = result.stdout.split('\n').filter((line) => line.startsWith('SKIP'));
      for (const skip of skips) expect(skip.slice(`SKIP ${page}`.length)).toMatch(/^:\d+ \(\w+\): \S.{10,}/);
      // A block left to npm test's own checks runs, in npm test (scripts/readme-test.ts, checksRunBeside).
      const leftToChecks = skips.filter((skip) => /^SKIP \S+ \(\w+\): npm test runs /.test(skip)).length;
      tally.skipped += skips.length - leftToChecks;
      tally.ran += result.stdout.split('\n').filter((line) => line.startsWith('ok ')).length + leftToChecks;
    },
    900_000,
  );

  test('most blocks run: the skipped ones are few', () => {
    expect(tally.ran).toBeGreaterThanOrEqual(30);
    expect(tally.skipped).toBeLessThanOrEqual(tally.ran / 3);
  });
});

describe('the documentation runner', () => {
  test('a failing shell block fails the run, naming its line and showing its output', async () => {
    const file = planted(
      'broken.md',
      [
        '# Broken',
        '',
        '```sh',
        'echo first block runs',
        '```',
        '',
        'Then:',
        '',
        '```sh',
        'GREETING=hello',
        'false',
        'echo never',
        '```',
        '',
      ].join('\n'),
    );
    const result = await run(...readmeTest(['--file', file, '--no-server']));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ok {3}.*broken\.md:3 \(sh\)/m);
    expect(result.stderr).toMatch(/^FAIL .*broken\.md:9 \(sh\).*a command failed/m);
    expect(result.stderr.split('--- its output ---')[1]).not.toContain('never');
  });

  test('blocks share one shell session, TypeScript snippets run with tsx from the repository root, skips are reported', async () => {
    const file = planted(
      'good.md',
      [
        '```sh',
        'greet() { echo "hello $1"; }',
        'NAME=reader',
        '```',
        '',
        '```sh',
        'test "$(greet "$NAME")" = "hello reader"',
        '```',
        '',
        '```ts',
        "import { createPlatformClient } from './client/index.ts';",
        "if (typeof createPlatformClient !== 'function') process.exit(3);",
        '```',
        '',
        '<!-- readme-test: skip (would need a second machine) -->',
        '```sh',
        'exit 1',
        '```',
        '',
        '```text',
        'output, not run',
        '```',
        '',
      ].join('\n'),
    );
    const result = await run(...readmeTest(['--file', file, '--no-server']));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ok {3}.*good\.md:6 \(sh\)/m);
    expect(result.stdout).toMatch(/^ok {3}.*good\.md:10 \(ts\)/m);
    expect(result.stdout).toMatch(/^SKIP .*good\.md:16 \(sh\): would need a second machine$/m);
    expect(result.stdout).toMatch(/^- {3}.*good\.md:20 \(text\): output shown to the reader, not run$/m);
  });

  test("a block that only runs npm test's own checks is left to npm test when it names them, and runs otherwise", async () => {
    // `checks:planted` is no script of package.json: run, the block fails.
    const file = planted(
      'checks.md',
      ['```sh', 'npm run -s checks:planted   # a check npm test runs itself', '```', '', '```sh', 'echo not a check', '```', ''].join('\n'),
    );
    const named = await run(...readmeTest(['--file', file, '--no-server']), { env: { NPM_TEST_CHECKS: 'lint,checks:planted' } });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toMatch(/^SKIP .*checks\.md:1 \(sh\): npm test runs checks:planted itself, beside this test/m);
    expect(named.stdout).toMatch(/^ok {3}.*checks\.md:5 \(sh\)/m);
    const alone = await run(...readmeTest(['--file', file, '--no-server']), { env: { NPM_TEST_CHECKS: '' } });
    expect(alone.code).toBe(1);
    expect(alone.stderr).toMatch(/^FAIL .*checks\.md:1 \(sh\)/m);
  });

  test('a failing TypeScript snippet fails the run', async () => {
    const file = planted('broken-ts.md', ['```ts', "throw new Error('the snippet is broken');", '```', ''].join('\n'));
    const result = await run(...readmeTest(['--file', file, '--no-server']));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/FAIL .*broken-ts\.md:1 \(ts\)[\s\S]*the snippet is broken/);
  });

  test('a readme-test comment it cannot read is an error, not a silent run', () => {
    expect(() => readmeBlocks('<!-- readme-test: skipp -->\n```sh\ntrue\n```\n')).toThrow(/cannot read the readme-test comment/);
    expect(
      readmeBlocks('<!-- readme-test: background (keeps running); ready: http://127.0.0.1:$PORT/ -->\n\n```sh\nsleep 1\n```\n')[0]!
        .directive,
    ).toEqual({
      mode: 'background',
      reason: 'keeps running',
      ready: 'http://127.0.0.1:$PORT/',
    });
  });
  test('a variable that no block of the page set fails its block instead of printing nothing', async () => {
    const file = planted('unset.md', ['```sh', 'CONSOLE_URL=ws://example', 'echo "$BASE/console#$CONSOLE_URL"', '```', ''].join('\n'));
    const result = await run(...readmeTest(['--file', file, '--no-server']));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^FAIL .*unset\.md:1 \(sh\)[\s\S]*BASE: unbound variable/m);
  });

  test('each page runs in a session of its own, and a failing page fails the run while the others still run', async () => {
    const first = planted('first.md', ['```sh', 'FROM_FIRST=yes', '```', ''].join('\n'));
    const second = planted('second.md', ['```sh', 'echo "$FROM_FIRST"', '```', ''].join('\n'));
    const third = planted('third.md', ['```sh', 'true', '```', ''].join('\n'));
    const result = await run(...readmeTest(['--file', first, '--file', second, '--file', third, '--no-server']));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/every block of .*first\.md that is code ran as printed/);
    expect(result.stderr).toMatch(/^FAIL .*second\.md:1 \(sh\)[\s\S]*FROM_FIRST: unbound variable/m);
    expect(result.stdout).toMatch(/every block of .*third\.md that is code ran as printed/);
    expect(result.stderr).toMatch(/a block failed in .*second\.md$/m);
  });

  test('a page with a server block starts that server and no other; a page without code starts none', async () => {
    // A stand-in for `npm start`: it writes bootstrap.json and answers /readyz on the page's PORT.
    const serves = [
      'node -e "',
      "require('fs').writeFileSync(process.env.DATA_DIR + '/bootstrap.json', '{}');",
      "require('http').createServer((request, response) => response.end('ready')).listen(process.env.PORT, '127.0.0.1');",
      '"',
    ].join(' ');
    const own = planted(
      'own-server.md',
      [
        '<!-- readme-test: server (the page starts its own) -->',
        '```sh',
        serves,
        '```',
        '',
        '```sh',
        'test "$(curl -sS --fail-with-body "http://127.0.0.1:$PORT/readyz")" = ready',
        '```',
        '',
      ].join('\n'),
    );
    const prose = planted('prose.md', ['# Only prose', '', '```text', 'output', '```', ''].join('\n'));
    const result = await run(...readmeTest(['--file', own, '--file', prose]));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ok {3}.*own-server\.md:2 \(sh\) \[server: the page starts its own\]/m);
    expect(result.stdout).toMatch(/^ok {3}.*own-server\.md:6 \(sh\)/m);
    expect(result.stdout).not.toMatch(/npm start serves/);
  });
  test('a page made of standalone blocks runs them without starting a server', async () => {
    const alone = planted(
      'standalone.md',
      ['<!-- readme-test: standalone (needs no server) -->', '```sh', 'echo "no server for this one"', '```', ''].join('\n'),
    );
    const aloneRun = await run(...readmeTest(['--file', alone]));
    expect(aloneRun.code, aloneRun.stderr).toBe(0);
    expect(aloneRun.stdout).toMatch(/^ok {3}.*standalone\.md:2 \(sh\) \[standalone: needs no server\]/m);
    expect(aloneRun.stdout).not.toMatch(/npm start serves/);
  });
  test("a page's DATA_DIR is removed only once its server has stopped, even when the process the runner started exits first", async () => {
    // The server block's bash exits at the signal; the server under it takes a moment to stop and
    // writes into DATA_DIR meanwhile, as the embedded PostgreSQL does while it shuts down.
    const serves = [
      'node -e "',
      "require('fs').writeFileSync(process.env.DATA_DIR + '/bootstrap.json', '{}');",
      "require('http').createServer((request, response) => response.end('ready')).listen(process.env.PORT, '127.0.0.1');",
      '"',
    ].join(' ');
    const stopped = path.join(workDir, 'slow-server-stopped');
    const file = planted(
      'slow-stop.md',
      [
        '<!-- readme-test: server (stops slowly) -->',
        '```sh',
        `( trap 'sleep 1; mkdir -p "$DATA_DIR"; echo late > "$DATA_DIR/late"; touch ${stopped}; exit 0' TERM; ${serves} & wait ) & wait`,
        '```',
        '',
        '```sh',
        'echo "data dir: $DATA_DIR"',
        '```',
        '',
      ].join('\n'),
    );
    const result = await run(...readmeTest(['--file', file, '--verbose']));
    expect(result.code, result.stderr).toBe(0);
    const dataDir = /data dir: (\S+)/.exec(result.stdout)?.[1];
    expect(dataDir).toBeDefined();
    // Once the slow server has finished stopping, nothing it wrote is left.
    while (!existsSync(stopped)) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(existsSync(dataDir!)).toBe(false);
  });
  test("a run stopped (Ctrl-C, SIGTERM) stops the page's server and removes its DATA_DIR before it exits", async () => {
    const started = path.join(workDir, 'interrupted-server');
    const serves = [
      // $$: the block's bash, which leads the process group the runner started it in.
      `echo "$DATA_DIR $PORT $$" > ${started};`,
      'node -e "',
      "require('fs').writeFileSync(process.env.DATA_DIR + '/bootstrap.json', '{}');",
      "require('http').createServer((request, response) => response.end('ready')).listen(process.env.PORT, '127.0.0.1');",
      '"',
    ].join(' ');
    const file = planted(
      'interrupted.md',
      ['<!-- readme-test: server (the page starts its own) -->', '```sh', serves, '```', '', '```sh', 'sleep 120', '```', ''].join('\n'),
    );
    const [command, args] = readmeTest(['--file', file]);
    const child = spawn(command, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await eventually(() => /^ok {3}.*interrupted\.md:2 /m.test(output) || undefined, 'the page to start its server', 60_000);
    const [dataDir, port, group] = readFileSync(started, 'utf8').trim().split(' ');
    leftBehind.add(Number(group));
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    await signalWhileHeld(child, processRunning(child.pid!, 'scripts/readme-test.ts')!);
    expect(await exited, output).toBe(143);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    expect(existsSync(dataDir!)).toBe(false);
  });
});

describe('the wait_for helper of the docs (scripts/examples/wait-for.sh)', () => {
  const waitFor = (api: string, operation: string) =>
    run('bash', ['-c', 'set -u; source scripts/examples/wait-for.sh; wait_for "$1"', 'wait_for', operation], {
      env: { API: api, AUTH: 'Authorization: Bearer cpk_x', WAIT_TIMEOUT: '5' },
    });

  test('fails at once, saying so, when the request before it gave no operation id', async () => {
    for (const operation of ['null', '']) {
      const result = await waitFor('http://127.0.0.1:9', operation);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/wait_for: no operation id/);
    }
  });

  test('fails at once, saying so, when the poll is refused or unanswered', async () => {
    const result = await waitFor('http://127.0.0.1:9', 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51');
    expect(result.code).not.toBe(0);
    // This message comes only from the failed poll's own return, before any pause: a helper that
    // polled on would end with its timeout's message ("still … after 5 s") instead.
    expect(result.stderr).toMatch(/wait_for: GET http:\/\/127\.0\.0\.1:9\/operations\/c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51 failed/);
    expect(result.stderr).not.toMatch(/still/);
  });
});
