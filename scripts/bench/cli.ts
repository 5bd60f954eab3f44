// The `cloud` command's start: each command is a new process, so its start is what a user waits
// for (goal: under 300 ms). Measured on the CLI as the client package ships it (built to
// JavaScript, `client/dist/client/cli/run.js`, built here first), beside the repository's own
// `npm run cli` (the TypeScript sources, as Node runs them), over several runs: the minimum and the
// median wall time, since a shared machine only ever adds time.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../lib/run.ts';
import type { RunningServer } from './servers.ts';
import { ms, record, section } from './report.ts';

function timeRuns(args: string[], env: Record<string, string>, runs: number): { min: number; median: number } {
  const times: number[] = [];
  for (let index = 0; index < runs; index++) {
    const started = performance.now();
    const ran = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    times.push(performance.now() - started);
    if (ran.status !== 0) throw new Error(`bench: cloud ${args.slice(1).join(' ')} exited ${ran.status}: ${String(ran.stderr)}`);
  }
  times.sort((a, b) => a - b);
  return { min: times[0]!, median: times[Math.floor(times.length / 2)]! };
}

export function cliSection(server: RunningServer, options: { quick: boolean }): void {
  section('cli (a command is a new process)');
  const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: path.join(repoRoot, 'client'), stdio: ['ignore', 'ignore', 'pipe'] });
  if (build.status !== 0) throw new Error(`bench: building the client package failed: ${String(build.stderr)}`);
  const built = path.join(repoRoot, 'client', 'dist', 'client', 'cli', 'run.js');
  const sources = path.join(repoRoot, 'client', 'cli', 'cloud.mjs');
  const env = { CLOUD_BASE_URL: server.api.base, CLOUD_API_KEY: server.api.key, CLOUD_ORG: server.api.orgId };
  const runs = options.quick ? 5 : 15;
  const cases: Array<[string, string[]]> = [
    ['cloud --help', ['--help']],
    ['cloud vm create --help', ['vm', 'create', '--help']],
    ['cloud __complete vm "" (a completion)', ['__complete', 'vm', '']],
    ['cloud region list (one API call)', ['region', 'list']],
    ['cloud vm get NAME (a name resolved, then a call)', ['vm', 'get', 'bench-cli']],
  ];
  const created = spawnSync(
    process.execPath,
    [
      built,
      'vm',
      'create',
      '--name',
      'bench-cli',
      '--image',
      'ubuntu-24.04',
      '--region',
      'fra1',
      '--vcpus',
      '1',
      '--memory-mb',
      '1024',
      '--disk-gb',
      '20',
      '--storage-pool',
      'fra1-ssd',
      '--network-profile',
      'fra1-standard',
      '--wait',
    ],
    { env: { ...process.env, ...env }, stdio: 'ignore' },
  );
  if (created.status !== 0) throw new Error('bench: could not create the instance bench-cli');
  for (const [figure, args] of cases) {
    const fast = timeRuns([built, ...args], env, runs);
    record({ figure: `${figure}, built (min / median of ${runs})`, real: `${ms(fast.min)} / ${ms(fast.median)}`, goal: '< 300 ms' });
  }
  const slow = timeRuns([sources, 'region', 'list'], env, Math.min(runs, 5));
  record({
    figure: 'cloud region list from the TypeScript sources (npm run cli), min / median',
    real: `${ms(slow.min)} / ${ms(slow.median)}`,
  });
}
