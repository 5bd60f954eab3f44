// scripts/start.mjs, which `npm start` runs: Node's compile cache for the program it starts, in
// every thread. The S3 endpoint runs in a worker thread; without the cache there, it stripped the
// types of its modules again at every start (about a third of its start-up CPU).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';

const start = path.join(repoRoot, 'scripts', 'start.mjs');
const program = path.join(repoRoot, 'test', 'fixtures', 'compile-cache', 'threads.ts');
const cacheParent = mkdtempSync(path.join(tmpdir(), 'compile-cache-'));
afterAll(() => rmSync(cacheParent, { recursive: true, force: true }));

/** The compile cache folders of the main thread and of a worker thread, as the program reports them. */
async function cacheFolders(env: Record<string, string>): Promise<{ main: string | null; worker: string | null }> {
  // This process's environment without the cache's settings, which would choose for the program.
  const { NODE_COMPILE_CACHE: _folder, NODE_DISABLE_COMPILE_CACHE: _disabled, ...inherited } = process.env;
  const { stdout } = await promisify(execFile)(process.execPath, [start, program], { cwd: repoRoot, env: { ...inherited, ...env } });
  return JSON.parse(stdout.trim()) as { main: string | null; worker: string | null };
}

test('a worker thread of the program uses the same compile cache as its main thread', async () => {
  const folders = await cacheFolders({ TMPDIR: cacheParent });
  expect(folders.main).toContain(path.join(cacheParent, 'node-compile-cache'));
  expect(folders.worker).toBe(folders.main);
});

test('NODE_COMPILE_CACHE chooses the folder for every thread; NODE_DISABLE_COMPILE_CACHE turns it off in every thread', async () => {
  const chosen = path.join(cacheParent, 'chosen');
  const folders = await cacheFolders({ NODE_COMPILE_CACHE: chosen });
  expect(folders.main).toContain(chosen);
  expect(folders.worker).toBe(folders.main);
  expect(await cacheFolders({ NODE_DISABLE_COMPILE_CACHE: '1', TMPDIR: cacheParent })).toEqual({ main: null, worker: null });
});
