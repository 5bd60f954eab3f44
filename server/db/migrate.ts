import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { fileURLToPath } from 'node:url';
import { withTransaction, type Pool, type Queryable } from './pool.ts';

/** The platform's own tables; the chosen drivers may bring folders of their own (drivers/index.ts). */
const PLATFORM_MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Any constant works; several processes starting at once take turns on it. */
const MIGRATION_LOCK = 7_361_204_118;

/**
 * Applies the versioned SQL files this database has not seen (the platform's, and those of
 * `driverFolders`, such as the simulators' tables), in name order across the folders, all in one
 * transaction (or, should one fail, each in its own, up to the one that fails), under an advisory
 * lock so that concurrent starts apply each once. Names are
 * unique across folders, and a name is what `schema_migrations` records.
 */
export async function migrate(pool: Pool, driverFolders: readonly string[] = []): Promise<string[]> {
  // A connection of its own, without the pool's statement and query timeouts: a migration of a
  // large table, or the wait for another process's migrations, may rightly take longer.
  const client = new pg.Client({
    ...pool.options,
    statement_timeout: undefined,
    query_timeout: undefined,
    idle_in_transaction_session_timeout: undefined,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = new Set(
      (await client.query<{ version: string }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version),
    );
    const known = knownMigrations(driverFolders);
    const pending = [...known.keys()].filter((name) => !applied.has(name));
    if (await appliedTogether(client, pending, known)) return pending;
    // One of them failed: applied one at a time, the failure names its migration.
    for (const name of pending) {
      const sql = readFileSync(known.get(name)!, 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(error as Error).message}`, { cause: error });
      }
    }
    return pending;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    await client.end().catch(() => {});
  }
}

/**
 * Applies the pending migrations in one transaction sent as one query: on a new database (every
 * migration pending), one round trip and one WAL flush instead of one of each per migration,
 * most of their cost. False, with nothing applied, if any of them failed.
 */
async function appliedTogether(client: pg.Client, pending: string[], known: Map<string, string>): Promise<boolean> {
  if (pending.length === 0) return true;
  // Each file ends on a line of its own (a last line may be a comment) and a semicolon (it may lack one).
  const script = pending
    .map(
      (name) =>
        `${readFileSync(known.get(name)!, 'utf8')}\n;\nINSERT INTO schema_migrations (version) VALUES (${client.escapeLiteral(name)});`,
    )
    .join('\n');
  try {
    await client.query(`BEGIN;\n${script}\nCOMMIT;`);
    return true;
  } catch {
    await client.query('ROLLBACK');
    return false;
  }
}

/** The migrations this server needs that the database has not applied (empty when up to date). */
export async function pendingMigrations(db: Queryable, driverFolders: readonly string[] = []): Promise<string[]> {
  const { rows } = await db.query<{ version: string }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((row) => row.version));
  return [...knownMigrations(driverFolders).keys()].filter((name) => !applied.has(name));
}

/** Name → file of every migration of the set, in name order. */
function knownMigrations(driverFolders: readonly string[]): Map<string, string> {
  const folders = [PLATFORM_MIGRATIONS, ...driverFolders];
  const files = folders.flatMap((folder) =>
    readdirSync(folder)
      .filter((name) => name.endsWith('.sql'))
      .map((name) => [name, path.join(folder, name)] as const),
  );
  return new Map(files.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export { withTransaction };
