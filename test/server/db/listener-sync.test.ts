// A process that committed a change waits until every listener on the database has read its
// announcement (DatabaseListener.sync), so that no cache anywhere serves what it held before once
// the change is answered. Every listener answers, whatever it caches: a sync that waited for the
// caches of one kind only waited out its timeout for each listener that kept none (a billing
// change answered after a full second while the S3 thread's listener was counted).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AnnouncedCache } from '../../../server/db/announced-cache.ts';
import { DatabaseListener } from '../../../server/db/listener.ts';
import { createPool, type Pool } from '../../../server/db/pool.ts';
import { createTestDatabase } from '../../support/server.ts';

const quiet = { info: () => {}, warn: () => {} };
/** Longer than the test's own timeout: a sync that ended only on its timeout fails the test. */
const NEVER_MS = 600_000;

let pool: Pool;
let withCache: DatabaseListener;
let without: DatabaseListener;
let cache: AnnouncedCache<string>;

beforeAll(async () => {
  pool = createPool(await createTestDatabase(), 2);
  withCache = new DatabaseListener(pool.options, quiet);
  cache = new AnnouncedCache<string>(withCache, 'test_changed', (payload) => [payload]);
  // A listener whose process keeps no cache of this kind (as the S3 thread keeps no billing figures).
  without = new DatabaseListener(pool.options, quiet);
  await Promise.all([withCache.start(), without.start()]);
});
afterAll(async () => {
  await withCache?.stop();
  await without?.stop();
  await pool?.end();
});

describe('a sync of the listeners', () => {
  test('ends once every listener has answered, those that keep no cache of the kind included', async () => {
    // From either side: each counts both listeners and needs both answers.
    await without.sync(NEVER_MS);
    await withCache.sync(NEVER_MS);
  });

  test('is answered by each listener only after it read what was announced before it', async () => {
    for (let round = 0; round < 5; round++) {
      cache.store(cache.ticket(), 'entry', 'as read', undefined, ['thing']);
      expect(cache.lookup('entry')).toBe('as read');
      // Another session commits a change and its announcement, as a trigger does.
      await pool.query(`SELECT pg_notify('test_changed', 'thing')`);
      await without.sync(NEVER_MS);
      expect(cache.lookup('entry'), 'the cache still served the entry once the sync ended').toBeUndefined();
    }
  });

  test('a change made here forgets its own entries at once, and waits for the other listeners', async () => {
    cache.store(cache.ticket(), 'entry', 'as read', undefined, ['thing']);
    const changed = cache.changed(['thing']);
    expect(cache.lookup('entry')).toBeUndefined();
    await changed;
  });

  test('a sync of a listener that is not listening ends at once', async () => {
    const stopped = new DatabaseListener(pool.options, quiet);
    await stopped.sync(NEVER_MS);
  });
});
