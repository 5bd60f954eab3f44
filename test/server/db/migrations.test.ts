// Versioned migrations run at start under an advisory lock: several processes starting at once
// apply each migration once. The simulated backends' tables come with the simulators only.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { expect, test } from 'vitest';
import { migrate, pendingMigrations } from '../../../server/db/migrate.ts';
import { createPool } from '../../../server/db/pool.ts';
import { driverMigrations } from '../../../server/drivers/selection.ts';
import { repoRoot } from '../../../scripts/lib/run.ts';
import { createTestDatabase } from '../../support/server.ts';

const sqlFiles = (...segments: string[]) => readdirSync(path.join(repoRoot, ...segments)).filter((name) => name.endsWith('.sql'));
const platformFiles = sqlFiles('server', 'db', 'migrations');
const simulatorFiles = sqlFiles('server', 'drivers', 'simulators', 'migrations');
const simulators = driverMigrations({ compute: 'simulator', objectStore: 'simulator', billing: 'simulator' });

test('concurrent starts apply every migration exactly once, and a restart applies none', async () => {
  const databaseUrl = await createTestDatabase();
  const pools = Array.from({ length: 4 }, () => createPool(databaseUrl, 2));
  try {
    const applied = await Promise.all(pools.map((pool) => migrate(pool, simulators)));
    const files = [...platformFiles, ...simulatorFiles].sort();
    expect(applied.flat().sort()).toEqual(files);
    const { rows } = await pools[0]!.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((row) => row.version)).toEqual(files);
    expect(await migrate(pools[0]!, simulators)).toEqual([]);
    expect(await pendingMigrations(pools[0]!, simulators)).toEqual([]);
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
  }
});

test("without a simulator chosen, none of the simulators' tables exist; choosing one later adds them", async () => {
  const pool = createPool(await createTestDatabase(), 2);
  try {
    expect((await migrate(pool)).sort()).toEqual([...platformFiles].sort());
    const simulatorTables = async () =>
      (
        await pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE 'sim\\_%'",
        )
      ).rows[0]!.n;
    expect(await simulatorTables()).toBe(0);
    expect((await pendingMigrations(pool, simulators)).sort()).toEqual([...simulatorFiles].sort());
    expect((await migrate(pool, simulators)).sort()).toEqual([...simulatorFiles].sort());
    expect(await simulatorTables()).toBeGreaterThan(0);
  } finally {
    await pool.end();
  }
});

test("the simulators' migrations and the platform's share no name (a name is what a database records)", () => {
  expect(simulatorFiles.length).toBeGreaterThan(0);
  expect(simulatorFiles.filter((name) => platformFiles.includes(name))).toEqual([]);
});

test('a database owner who is not a superuser can apply every migration (an operator-provided DATABASE_URL)', async () => {
  const adminUrl = await createTestDatabase();
  const owner = `owner_${randomBytes(4).toString('hex')}`;
  const database = `d_${owner}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${owner} LOGIN PASSWORD 'owner-password' NOSUPERUSER`);
    await admin.query(`CREATE DATABASE ${database} OWNER ${owner}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.username = owner;
  url.password = 'owner-password';
  url.pathname = `/${database}`;
  const pool = createPool(url.toString(), 2);
  try {
    expect(await migrate(pool, simulators)).toEqual([...platformFiles, ...simulatorFiles].sort());
  } finally {
    await pool.end();
  }
});

test('a migration that fails is named, nothing of it is kept, and those before it are applied; mended, it is applied', async () => {
  const databaseUrl = await createTestDatabase();
  const pool = createPool(databaseUrl, 2);
  const folder = mkdtempSync(path.join(tmpdir(), 'migrations-'));
  try {
    // Applied together with the platform's (a new database), after them by name.
    writeFileSync(path.join(folder, '9990_first.sql'), 'CREATE TABLE first_extra (id integer);\n-- a last line that is a comment');
    writeFileSync(path.join(folder, '9991_broken.sql'), 'CREATE TABLE broken_extra (id integer);\nSELECT no_such_column FROM first_extra;');
    writeFileSync(path.join(folder, '9992_after.sql'), 'CREATE TABLE after_extra (id integer)');
    await expect(migrate(pool, [folder])).rejects.toThrow(/migration 9991_broken\.sql failed: column "no_such_column" does not exist/);
    const { rows } = await pool.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 2');
    expect(rows.map((row) => row.version)).toEqual(['9990_first.sql', platformFiles.sort().at(-1)]);
    const { rows: tables } = await pool.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class WHERE relname IN ('first_extra', 'broken_extra', 'after_extra') ORDER BY relname`,
    );
    expect(tables.map((table) => table.name)).toEqual(['first_extra']);

    // Mended, it is applied with the one after it (whose last line is a comment), together.
    writeFileSync(path.join(folder, '9991_broken.sql'), 'CREATE TABLE broken_extra (id integer)');
    writeFileSync(path.join(folder, '9992_after.sql'), 'CREATE TABLE after_extra (id integer);\n-- the end');
    expect(await migrate(pool, [folder])).toEqual(['9991_broken.sql', '9992_after.sql']);
    expect(await pendingMigrations(pool, [folder])).toEqual([]);
  } finally {
    await pool.end();
    rmSync(folder, { recursive: true, force: true });
  }
});
