// The real server with an embedded PostgreSQL in a DATA_DIR of the benchmark's, and what the
// benchmark needs to reach it: its bootstrap credentials and its database's address.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Api } from './api.ts';
import { readBootstrap } from '../lib/bootstrap-file.ts';
import { repoRoot } from '../lib/run.ts';
import { cpuOf, startRealServer, type Child } from './processes.ts';

/**
 * What every real server of the benchmark runs with: `npm start`'s defaults, unthrottled, and its
 * S3 endpoint on a free port (two servers of one run, or another server on the machine, would
 * otherwise both want 9000).
 */
export const SERVER_ENV = { RATE_LIMIT: '1000000', RATE_LIMIT_ANONYMOUS: '1000000', S3_PORT: '0' };

export interface RunningServer {
  child: Child;
  api: Api;
  /** The embedded PostgreSQL of DATA_DIR. */
  databaseUrl: string;
  dataDir: string;
  /** From spawning to the first answer. */
  startMs: number;
  /** The CPU time the server's Node process had used by then (a figure the machine's load changes less). */
  startCpuMs: number;
  /** The checkout it runs from: the project's, or a baseline's (BENCH_BASELINE). */
  root: string;
}

export async function startWithDataDir(dataDir: string, env: Record<string, string> = {}, root = repoRoot): Promise<RunningServer> {
  const started = performance.now();
  const child = await startRealServer({ ...SERVER_ENV, ...env, DATA_DIR: dataDir }, root);
  const startMs = performance.now() - started;
  const startCpuMs = cpuOf(child.pid).node;
  const bootstrap = await readBootstrap(dataDir, child).catch(async (error: unknown) => {
    await child.stop();
    throw error;
  });
  return {
    child,
    api: { base: child.url, orgId: bootstrap.org_id, key: bootstrap.api_key },
    databaseUrl: embeddedDatabaseUrl(dataDir),
    dataDir,
    startMs,
    startCpuMs,
    root,
  };
}

export function embeddedDatabaseUrl(dataDir: string): string {
  const settings = JSON.parse(readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as { port: number; password: string };
  return `postgres://postgres:${encodeURIComponent(settings.password)}@127.0.0.1:${settings.port}/cloud_platform`;
}
