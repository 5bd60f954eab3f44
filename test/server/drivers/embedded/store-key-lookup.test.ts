// A write and a read look up their key in the bucket (`bucket_id = $1 AND key = $2`). Those
// lookups must read a few index pages whatever the bucket holds, also in a plan made while the
// bucket was empty: a connection keeps its plans, and a fresh store is planned before autovacuum
// has ever analyzed it. When keys compared in the database's collation, such a plan could take the
// listing index (whose key is "C") for the bucket alone and read every version in it, so that each
// small PUT slowed with every object stored before it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Pool } from '../../../../server/db/pool.ts';
import { storeDatabase } from './store-database.ts';

let pool: Pool;
beforeAll(async () => {
  pool = await storeDatabase();
  // The statistics stay those of an empty table for the whole test, as they are between a fresh
  // store's start and autovacuum's first pass.
  await pool.query('ALTER TABLE store_versions SET (autovacuum_enabled = false)');
}, 60_000);
afterAll(() => pool?.end());

const LOOKUPS = {
  'the unversioned version a PUT replaces': `SELECT * FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = 'null'`,
  'the latest version a GET answers': 'SELECT * FROM store_versions WHERE bucket_id = $1 AND key = $2 ORDER BY seq DESC LIMIT 1',
};

/** Shared buffers one execution of a plan read, summed over its nodes. */
function buffersRead(plan: Record<string, unknown>): number {
  const own = Number(plan['Shared Hit Blocks'] ?? 0) + Number(plan['Shared Read Blocks'] ?? 0);
  return own + ((plan['Plans'] as Record<string, unknown>[] | undefined) ?? []).reduce((sum, child) => sum + buffersRead(child), 0);
}

describe("a key's lookup in a bucket", () => {
  test.each(Object.entries(LOOKUPS))(
    '%s reads a few pages of a bucket of 5,000 objects, in a plan made while it was empty',
    async (_, sql) => {
      const org = randomUUID();
      const bucket = randomUUID();
      await pool.query('INSERT INTO store_orgs (org_id) VALUES ($1)', [org]);
      await pool.query(`INSERT INTO store_buckets (id, org_id, name, versioning) VALUES ($1, $2, 'lookups', false)`, [bucket, org]);
      const connection = await pool.connect();
      try {
        // One generic plan, as a PL/pgSQL function or a named statement keeps after a few runs.
        await connection.query('SET plan_cache_mode = force_generic_plan');
        await connection.query(`PREPARE lookup (uuid, text) AS ${sql}`);
        // EXECUTE takes no bind parameters: the bucket is a UUID made here, the keys are literals.
        await connection.query(`EXECUTE lookup('${bucket}', 'objects/1')`);
        await pool.query(
          `INSERT INTO store_versions (bucket_id, key, version_id, delete_marker, size_bytes)
         SELECT $1, 'objects/' || n, 'null', false, 4096 FROM generate_series(1, 5000) AS n`,
          [bucket],
        );
        const found = await connection.query(`EXECUTE lookup('${bucket}', 'objects/2500')`);
        expect(found.rows).toHaveLength(1);
        const { rows } = await connection.query<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>(
          `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, FORMAT JSON) EXECUTE lookup('${bucket}', 'objects/2500')`,
        );
        // A descent of the index and the row: a handful of pages, where a walk of the bucket reads
        // thousands.
        expect(buffersRead(rows[0]!['QUERY PLAN'][0].Plan)).toBeLessThan(20);
      } finally {
        await connection.query('DEALLOCATE ALL');
        connection.release();
      }
    },
  );
});
