// Versioned migrations run at start under an advisory lock: several processes starting at once
// apply each migration once.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { migrate } from '../../server/db/migrate.ts';
import { createPool } from '../../server/db/pool.ts';
import { repoRoot } from '../../scripts/lib/run.ts';
import { createTestDatabase } from '../support/server.ts';

test('concurrent starts apply every migration exactly once, and a restart applies none', async () => {
  const databaseUrl = await createTestDatabase();
  const pools = Array.from({ length: 4 }, () => createPool(databaseUrl, 2));
  try {
    const applied = await Promise.all(pools.map((pool) => migrate(pool)));
    const files = readdirSync(path.join(repoRoot, 'server', 'db', 'migrations')).filter((name) => name.endsWith('.sql')).sort();
    expect(applied.flat().sort()).toEqual(files);
    const { rows } = await pools[0]!.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((row) => row.version)).toEqual(files);
    expect(await migrate(pools[0]!)).toEqual([]);
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
  }
});
