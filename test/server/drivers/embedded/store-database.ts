// A database of its own, with the platform's migrations and the embedded store's: for the tests
// of the store's SQL (its functions and its plans), which need no server.
import { migrate } from '../../../../server/db/migrate.ts';
import { createPool, type Pool } from '../../../../server/db/pool.ts';
import { driverMigrations } from '../../../../server/drivers/selection.ts';
import { createTestDatabase } from '../../../support/server.ts';

export async function storeDatabase(): Promise<Pool> {
  const pool = createPool(await createTestDatabase({ migrated: true }), 2);
  await migrate(pool, driverMigrations({ compute: 'simulator', objectStore: 'embedded', billing: 'simulator' }));
  return pool;
}
