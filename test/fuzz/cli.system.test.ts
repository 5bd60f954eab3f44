// `npm run fuzz` itself (scripts/fuzz.ts): it starts its own server as `npm start` would, makes
// its fixtures, runs a campaign over every operation of the contract and says how it went. A
// small campaign here keeps the command working: it was once broken for weeks (its server's
// anonymous rate limit refused every case after the hundredth) with nothing to notice.
import { spawn, spawnSync } from 'node:child_process';
import { afterAll, expect, test } from 'vitest';
import { Campaign } from '../support/fuzz/campaign.ts';
import { repoRoot } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';
import { descendantsOf, LeftBehind, npmScriptCommand, processRunning, runsFile, signalWhileHeld } from '../support/processes.ts';

/** `npm run fuzz`'s command as package.json says it (`node scripts/fuzz.ts`), with these arguments. */
const fuzzCommand = (args: string[]) => npmScriptCommand('fuzz', args);

/** Servers a failed run left behind: stopped after the tests, whatever they found. */
const serverGroups = new LeftBehind();
afterAll(() => serverGroups.stop());

test('a small campaign over every operation runs against the server the command starts, and passes', () => {
  const run = spawnSync(...fuzzCommand(['--seed', '7', '--count', '3']), { cwd: repoRoot, encoding: 'utf8', timeout: 150_000 });
  const output = `${run.stdout}${run.stderr}`;
  expect(run.status, output).toBe(0);
  const operations = new Campaign().contract.operations;
  expect(output).toContain(`over ${operations.length} operations, 0 failed, 0 distinct failures.`);
  // Each operation had its cases, and none found the server unresponsive.
  for (const operation of operations) expect(output).toMatch(new RegExp(`^  ${operation.operationId} +3 cases, +0 failed`, 'm'));
  expect(output).not.toContain('stopped answering');
}, 180_000);

test('killing the command (Ctrl-C, SIGTERM) stops the server it started, rather than leaving it running', async () => {
  const fuzzer = spawn(...fuzzCommand(['--count', '100000']), { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  fuzzer.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  fuzzer.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => fuzzer.once('exit', (code) => resolve(code)));
  const serverUrl = await eventually(() => /fuzzing (http:\/\/\S+);/.exec(output)?.[1], 'the fuzzer to start its server', 120_000);
  expect((await fetch(serverUrl)).status).toBeGreaterThan(0);
  const runner = processRunning(fuzzer.pid!, 'scripts/fuzz.ts')!;
  for (const pid of descendantsOf(runner)) if (runsFile(pid, 'server/main.ts')) serverGroups.add(pid);
  // On a busy machine the fuzzer may not get to run for a while once the signal comes: a CI run
  // once found its server left running under tsx.
  await signalWhileHeld(fuzzer, runner);
  expect(await exited, output).toBe(143);
  await expect(fetch(serverUrl)).rejects.toThrow();
}, 180_000);
