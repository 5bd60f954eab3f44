// The README is tested: every shell block and TypeScript snippet runs, in order and as printed,
// against a fresh `npm start` (scripts/readme-test.ts). The runner itself is checked on planted
// READMEs: a broken block fails the run and is named, skips are reported with their reason.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { readmeBlocks } from '../../scripts/lib/readme-blocks.ts';
import { bin, repoRoot, run } from '../../scripts/lib/run.ts';
import { readFileSync } from 'node:fs';

const runner = path.join(repoRoot, 'scripts', 'readme-test.ts');
const workDir = mkdtempSync(path.join(tmpdir(), 'readme-runner-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

function planted(name: string, markdown: string): string {
  const file = path.join(workDir, name);
  writeFileSync(file, markdown);
  return file;
}

describe('README.md', () => {
  test('every block that is code runs as printed against a fresh server', async () => {
    const result = await run(bin('tsx'), [runner]);
    // The whole stderr goes with a failure: it holds the failing block's output, which CI shows last.
    expect(
      result.stderr.split('\n').filter((line) => /^FAIL/.test(line)),
      result.stderr,
    ).toEqual([]);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(/every block of README\.md that is code ran as printed/);
    // Most blocks run; the skipped ones are few, and each says why.
    const skips = result.stdout.split('\n').filter((line) => line.startsWith('SKIP'));
    const ran = result.stdout.split('\n').filter((line) => line.startsWith('ok '));
    expect(ran.length).toBeGreaterThanOrEqual(8);
    expect(skips.length).toBeLessThanOrEqual(6);
    for (const skip of skips) expect(skip).toMatch(/^SKIP README\.md:\d+ \(\w+\): \S.{10,}/);
  }, 900_000);
});

describe('the README runner', () => {
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
    const result = await run(bin('tsx'), [runner, '--file', file, '--no-server']);
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
    const result = await run(bin('tsx'), [runner, '--file', file, '--no-server']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ok {3}.*good\.md:6 \(sh\)/m);
    expect(result.stdout).toMatch(/^ok {3}.*good\.md:10 \(ts\)/m);
    expect(result.stdout).toMatch(/^SKIP .*good\.md:16 \(sh\): would need a second machine$/m);
    expect(result.stdout).toMatch(/^- {3}.*good\.md:20 \(text\): output shown to the reader, not run$/m);
  });

  test('a failing TypeScript snippet fails the run', async () => {
    const file = planted('broken-ts.md', ['```ts', "throw new Error('the snippet is broken');", '```', ''].join('\n'));
    const result = await run(bin('tsx'), [runner, '--file', file, '--no-server']);
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
});

describe("the README's wait_for helper", () => {
  // The function exactly as README.md defines it, run on its own.
  const readmeText = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const definition = /^wait_for\(\) \{\n[\s\S]*?\n\}$/m.exec(readmeText)?.[0];
  const waitFor = (api: string, operation: string) =>
    run('bash', ['-c', `${definition}\nwait_for "$1"`, 'wait_for', operation], {
      env: { API: api, AUTH: 'Authorization: Bearer cpk_x', WAIT_TIMEOUT: '5' },
    });

  test('is defined in the README', () => {
    expect(definition).toMatch(/return 1/);
  });

  test('fails at once, saying so, when the request before it gave no operation id', async () => {
    const result = await waitFor('http://127.0.0.1:9', 'null');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/wait_for: no operation id/);
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
