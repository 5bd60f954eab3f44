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
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-test-pg-'));
  // As root, PostgreSQL runs as its own OS user, which must be able to enter the directory.
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
    rmSync(dataDir, { recursive: true, force: true });
  };
}
