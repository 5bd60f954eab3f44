// The engine reads each batch's instances by id (vm-rows.ts vmsByIds). On a fresh database the
// instances table starts empty and grows fast, and a connection keeps what it planned in its
// first calls: a batch's lookup must not become a scan of the whole table (it did while the
// statement was prepared, until autovacuum's first ANALYZE).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { vmsByIds } from '../../../../../server/areas/compute/vms/vm-rows.ts';
import { migrate } from '../../../../../server/db/migrate.ts';
import { createPool, type Pool } from '../../../../../server/db/pool.ts';
import { createTestDatabase } from '../../../../support/server.ts';

let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase({ migrated: true }), 2);
  await migrate(pool);
  // The statistics stay those of an empty table, as they are until autovacuum's first pass.
  await pool.query('ALTER TABLE vms SET (autovacuum_enabled = false)');
}, 60_000);
afterAll(() => pool?.end());

test("a batch's lookup by id reads the rows it names, not the table, on a connection that ran it while the table was empty", async () => {
  const org = randomUUID();
  await pool.query(`INSERT INTO orgs (id, name) VALUES ($1, 'Growing')`, [org]);
  const connection = await pool.connect();
  try {
    // The engine's first batches, on an empty table: enough of them for a plan to be kept.
    for (let batch = 0; batch < 10; batch++) expect((await vmsByIds(connection, [randomUUID(), randomUUID()])).size).toBe(0);
    const { rows: created } = await pool.query<{ id: string }>(
      `INSERT INTO vms (id, org_id, name, region_id, disk_redundancy, storage_pool_id, network_profile_id, image_id, image_name,
                        vcpus, memory_mb, disk_gb, state, desired_state)
       SELECT gen_random_uuid(), $1, 'vm-' || n, 'fra1', 'replicated', 'fra1-ssd', 'fra1-standard', 'ubuntu-24.04', 'Ubuntu 24.04',
              1, 1024, 20, 'running', 'running'
       FROM generate_series(1, 5000) AS n RETURNING id`,
      [org],
    );
    // The table's reads as this connection counted them (its counts not yet reported included):
    // before and after the lookup, in one transaction.
    const reads = async () =>
      (
        await connection.query<{ seq_scan: number; seq_tup_read: number }>(
          `SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables WHERE relname = 'vms'`,
        )
      ).rows[0]!;
    await connection.query('BEGIN');
    try {
      const before = await reads();
      const found = await vmsByIds(
        connection,
        created.slice(0, 5).map((row) => row.id),
      );
      expect(found.size).toBe(5);
      const after = await reads();
      expect({ scans: after.seq_scan - before.seq_scan, rowsRead: after.seq_tup_read - before.seq_tup_read }).toEqual({
        scans: 0,
        rowsRead: 0,
      });
    } finally {
      await connection.query('ROLLBACK');
    }
  } finally {
    connection.release();
  }
});
