// A first start copies its embedded PostgreSQL's cluster from a template made once (by `npm
// install`, or by the first start that finds none) instead of running initdb: each copy is a
// cluster of its own, with its own password, and a template that cannot be copied costs only the
// time initdb takes. Every start here is given a templates folder of its own.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { prepareClusterTemplate, startEmbeddedDatabase, type EmbeddedDatabase } from '../../../server/db/embedded.ts';
import { eventually } from '../../support/eventually.ts';

const running: EmbeddedDatabase[] = [];
afterAll(async () => {
  await Promise.all(running.map((database) => database.stop()));
});

/**
 * A spare is made below the server's CPU priority: on a machine others load (CI beside busy
 * processes), that can take a while. A limit, not a figure the test measures.
 */
const SPARE_WAIT_MS = 120_000;

const folder = (name: string) => mkdtempSync(path.join(tmpdir(), `cloud-platform-${name}-`));

/** Started on `dataDir` with `clusterTemplates`, its log lines kept. */
async function start(
  dataDir: string,
  clusterTemplates: string,
): Promise<{ database: EmbeddedDatabase; logged: string[]; dataDir: string }> {
  const logged: string[] = [];
  const database = await startEmbeddedDatabase(dataDir, (line) => logged.push(line), { clusterTemplates });
  running.push(database);
  return { database, logged, dataDir };
}

/** The password the start chose for `dataDir`'s cluster, kept where the admin command reads it. */
const passwordOf = (dataDir: string) =>
  (JSON.parse(readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as { password: string }).password;

/** initdb's system identifier, the first field of the cluster's pg_control: copies share their template's. */
const systemIdentifier = (clusterDir: string) => readFileSync(path.join(clusterDir, 'global', 'pg_control')).readBigUInt64LE(0);

async function queryAs<T extends pg.QueryResultRow>(connectionString: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe.runIf(process.platform === 'linux')('the embedded PostgreSQL cluster of a first start', () => {
  test('two first starts at once with no template make one between them; both, and every later one, are copies of it, each with a password of its own', async () => {
    const templates = folder('templates');
    const [first, second] = await Promise.all([start(folder('first'), templates), start(folder('second'), templates)]);
    const made = readdirSync(templates);
    expect(made).toHaveLength(1); // no draft left beside it, and no spare made before the starts serve
    const template = path.join(templates, made[0]!);
    const later = await start(folder('later'), templates);

    const starts = [first, second, later];
    for (const { database, dataDir } of starts) {
      const { connectionString } = database;
      expect(systemIdentifier(path.join(dataDir, 'postgres'))).toBe(systemIdentifier(template));
      const [row] = await queryAs<{ database: string; verifier: string }>(
        connectionString,
        'SELECT current_database() AS database, rolpassword AS verifier FROM pg_authid WHERE rolname = current_user',
      );
      expect(row!.database).toBe('cloud_platform');
      expect(row!.verifier).toMatch(/^SCRAM-SHA-256\$4096:/);
    }
    // One cluster's password does not open another's.
    const [a, b] = [first.dataDir, second.dataDir].map(passwordOf);
    expect(a).not.toBe(b);
    const withOthersPassword = second.database.connectionString.replace(encodeURIComponent(b!), encodeURIComponent(a!));
    await expect(queryAs(withOthersPassword, 'SELECT 1')).rejects.toMatchObject({ code: '28P01' });
    expect(first.logged.join('\n')).not.toContain('initdb makes it instead');
  });

  test(
    'a first start takes the copy made ahead (a rename, no copy); once it serves, it makes the next one, which a stop leaves to finish',
    async () => {
      const templates = folder('spare-templates');
      const template = (await prepareClusterTemplate({ templates, withSpare: true }))!;
      const spare = `${template}.spare`;
      const spareFolder = statSync(spare).ino;

      const taker = await start(folder('taker'), templates);
      const clusterDir = path.join(taker.dataDir, 'postgres');
      expect(statSync(clusterDir).ino).toBe(spareFolder);
      expect(existsSync(spare)).toBe(false);
      expect(systemIdentifier(clusterDir)).toBe(systemIdentifier(template));
      expect(await queryAs<{ ok: number }>(taker.database.connectionString, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);

      taker.database.tidyUp();
      await eventually(() => (existsSync(spare) ? true : undefined), 'the next spare', SPARE_WAIT_MS);
      expect(statSync(spare).ino).not.toBe(spareFolder);

      // The next start takes it; stopped at once, it leaves the next spare to be finished, and no draft.
      const next = await start(folder('next'), templates);
      expect(existsSync(spare)).toBe(false);
      next.database.tidyUp();
      await next.database.stop();
      await eventually(() => (existsSync(spare) ? true : undefined), 'the spare begun before the stop', SPARE_WAIT_MS);
      expect(readdirSync(templates).filter((name) => name.includes('draft'))).toEqual([]);
      const finishedAfterTheStop = statSync(spare).ino;
      const after = await start(folder('after-the-stop'), templates);
      expect(statSync(path.join(after.dataDir, 'postgres')).ino).toBe(finishedAfterTheStop);
      expect(existsSync(spare)).toBe(false);
    },
    4 * SPARE_WAIT_MS,
  );

  test('a template that cannot be copied: the start says why, initdb makes the cluster, and it serves', async () => {
    const templates = folder('broken-templates');
    const template = (await prepareClusterTemplate({ templates }))!;
    // A template whose control file went missing: PostgreSQL cannot open the copy.
    rmSync(path.join(template, 'global', 'pg_control'));
    const dataDir = folder('beside-a-broken-template');
    const { database, logged } = await start(dataDir, templates);

    expect(logged.join('\n')).toMatch(/could not be copied from .* \(initdb makes it instead\)/);
    expect(await queryAs<{ database: string }>(database.connectionString, 'SELECT current_database() AS database')).toEqual([
      { database: 'cloud_platform' },
    ]);
    expect(readdirSync(dataDir).filter((name) => name.includes('initialising'))).toEqual([]);
    // No password in what was said about it.
    expect(logged.join('\n')).not.toContain(passwordOf(dataDir));
  });
});
