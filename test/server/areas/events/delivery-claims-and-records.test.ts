// Webhook attempts recorded in batches (server/areas/events/deliveries/delivery-records.ts): the
// attempts of one batch are taken in the order they were made, so an endpoint's `failing_since`
// is what recording them one by one would leave; and only the deliverer holding a delivery's
// lease records on it. And claims (delivery-leases.ts): every endpoint with deliveries due is
// served, each within its concurrency, however busy another is; and every organization, each
// within its share, however many deliveries another has waiting.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { EventsConfig } from '../../../../server/config.ts';
import { claimStatement, deliveryLeases, type DeliveryLeases } from '../../../../server/areas/events/deliveries/delivery-leases.ts';
import { recordAttempts, type MadeAttempt } from '../../../../server/areas/events/deliveries/delivery-records.ts';
import { createPool, withTransaction, type Pool } from '../../../../server/db/pool.ts';
import { migrate } from '../../../../server/db/migrate.ts';
import { createTestDatabase } from '../../../support/server.ts';

const config: EventsConfig = {
  recording: true,
  retentionDays: 30,
  allowInsecureUrls: false,
  retryScheduleMs: [60_000, 120_000],
  timeoutMs: 1_000,
  keepAliveMs: 4_000,
  endpointConcurrency: 4,
  orgConcurrency: 8,
  maxInFlight: 16,
  dispatchIntervalMs: 1_000,
};

let pool: Pool;
const orgId = randomUUID();
beforeAll(async () => {
  pool = createPool(await createTestDatabase({ migrated: true }), 4);
  await migrate(pool);
  await pool.query(`INSERT INTO orgs (id, name) VALUES ($1, 'Recorded')`, [orgId]);
});
afterAll(() => pool?.end());

/** An endpoint of the organization for these event types (failing since `failingSince`, if given); its id. */
async function insertEndpoint(
  db: Pool,
  org: string,
  eventTypes: string[],
  { id = randomUUID(), failingSince = null }: { id?: string; failingSince?: string | null } = {},
): Promise<string> {
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, event_types, secret_sealed, failing_since)
     VALUES ($1, $2, 'https://hooks.example.com/', $3, 'sealed', $4)`,
    [id, org, eventTypes, failingSince],
  );
  return id;
}

/** `count` events of `type`: the fan-out trigger makes each a delivery to the organization's endpoints that want it. */
async function writeEvents(db: Pool, org: string, type: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++)
    await db.query(`INSERT INTO events (id, org_id, type, resource_type, resource_id, data) VALUES ($1, $2, $3, 'api_token', $4, '{}')`, [
      `evt_${randomUUID().replaceAll('-', '')}`,
      org,
      type,
      randomUUID(),
    ]);
}

/** A database of its own, migrated: a claim looks at every delivery due, so the other tests' must not be there. */
async function inDatabaseOfItsOwn(run: (db: Pool) => Promise<void>): Promise<void> {
  const db = createPool(await createTestDatabase({ migrated: true }), 2);
  try {
    await migrate(db);
    await run(db);
  } finally {
    await db.end();
  }
}

/** A claim as the deliverer makes one (its transaction begins with the claims' lock): the endpoints of what it claimed. */
const claimer = (db: Pool, leases: DeliveryLeases) => () =>
  withTransaction(db, async (tx) => {
    await leases.lock(tx);
    return (await leases.claim(tx, randomUUID(), false)).map((claimed) => claimed.endpoint.id);
  });

/** An endpoint (failing since `failingSince`, if given) with `count` deliveries, leased to `token`. */
async function leasedDeliveries(token: string, count: number, failingSince: string | null = null) {
  const endpointId = await insertEndpoint(pool, orgId, ['api_key.created'], { failingSince });
  await writeEvents(pool, orgId, 'api_key.created', count);
  const { rows } = await pool.query<{ id: string }>(
    `UPDATE webhook_deliveries SET in_flight = true, next_attempt_at = NULL, lease_token = $2, lease_expires_at = now() + interval '1 minute'
     WHERE endpoint_id = $1 RETURNING id`,
    [endpointId, token],
  );
  return { endpointId, deliveryIds: rows.map((row) => row.id) };
}

const attempt = (deliveryId: string, endpointId: string, at: string, succeeded: boolean): MadeAttempt => ({
  deliveryId,
  endpointId,
  attempt: succeeded
    ? { attempted_at: at, status_code: 200, latency_ms: 3, outcome: 'succeeded' }
    : { attempted_at: at, status_code: 503, latency_ms: 3, outcome: 'http_error' },
});

const record = (token: string, made: MadeAttempt[]) => withTransaction(pool, (tx) => recordAttempts(tx, config, token, made));

const failingSince = async (endpointId: string) =>
  (await pool.query<{ failing_since: Date | null }>('SELECT failing_since FROM webhook_endpoints WHERE id = $1', [endpointId])).rows[0]!
    .failing_since;

const deliveries = async (ids: string[]) =>
  (
    await pool.query<{ id: string; status: string; attempt_count: number; in_flight: boolean; next_attempt_at: Date | null }>(
      'SELECT id, status, attempt_count, in_flight, next_attempt_at FROM webhook_deliveries WHERE id = ANY($1)',
      [ids],
    )
  ).rows.sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id));

test('a failure then a success, recorded together, leave the endpoint answering', async () => {
  const token = randomUUID();
  const { endpointId, deliveryIds } = await leasedDeliveries(token, 2);
  // Listed, and stored, in another order than they were made: the success came last.
  await record(token, [
    attempt(deliveryIds[0]!, endpointId, '2026-11-27T10:00:02.000Z', true),
    attempt(deliveryIds[1]!, endpointId, '2026-11-27T10:00:01.000Z', false),
  ]);
  expect(await failingSince(endpointId)).toBeNull();
  const [succeeded, failed] = await deliveries(deliveryIds);
  expect(failed).toMatchObject({ status: 'pending', attempt_count: 1, in_flight: false });
  expect(failed!.next_attempt_at).not.toBeNull();
  expect(succeeded).toMatchObject({ status: 'succeeded', attempt_count: 1, in_flight: false, next_attempt_at: null });
});

test('a success then failures, recorded together, leave the endpoint failing since the first failure after it', async () => {
  const token = randomUUID();
  const { endpointId, deliveryIds } = await leasedDeliveries(token, 3, '2026-11-27T09:00:00.000Z');
  await record(token, [
    attempt(deliveryIds[0]!, endpointId, '2026-11-27T10:00:03.000Z', false),
    attempt(deliveryIds[1]!, endpointId, '2026-11-27T10:00:02.000Z', false),
    attempt(deliveryIds[2]!, endpointId, '2026-11-27T10:00:01.000Z', true),
  ]);
  expect(await failingSince(endpointId)).toEqual(new Date('2026-11-27T10:00:02.000Z'));
});

test('an endpoint already failing keeps the time it began failing', async () => {
  const token = randomUUID();
  const { endpointId, deliveryIds } = await leasedDeliveries(token, 1, '2026-11-27T09:00:00.000Z');
  await record(token, [attempt(deliveryIds[0]!, endpointId, '2026-11-27T10:00:01.000Z', false)]);
  expect(await failingSince(endpointId)).toEqual(new Date('2026-11-27T09:00:00.000Z'));
});

test('only the deliverer holding the lease records: another one changes nothing', async () => {
  const holder = randomUUID();
  const { endpointId, deliveryIds } = await leasedDeliveries(holder, 1);
  await record(randomUUID(), [attempt(deliveryIds[0]!, endpointId, '2026-11-27T10:00:01.000Z', false)]);
  expect(await deliveries(deliveryIds)).toMatchObject([{ status: 'pending', attempt_count: 0, in_flight: true }]);
  expect(await failingSince(endpointId)).toBeNull();
  await record(holder, [attempt(deliveryIds[0]!, endpointId, '2026-11-27T10:00:02.000Z', true)]);
  expect(await deliveries(deliveryIds)).toMatchObject([{ status: 'succeeded', attempt_count: 1, in_flight: false }]);
});

test('a claim serves every endpoint with deliveries due, each within its concurrency, however busy another is', () =>
  inDatabaseOfItsOwn(async (db) => {
    const org = randomUUID();
    await db.query(`INSERT INTO orgs (id, name) VALUES ($1, 'Claimed')`, [org]);
    // The busy endpoint sorts first: a claim that looked no further than it would serve no one.
    const busy = '00000000-0000-4000-8000-000000000001';
    const quiet = 'ffffffff-ffff-4fff-bfff-ffffffffffff';
    await insertEndpoint(db, org, ['api_key.created'], { id: busy });
    await insertEndpoint(db, org, ['api_key.revoked'], { id: quiet });
    await writeEvents(db, org, 'api_key.created', 8);
    await writeEvents(db, org, 'api_key.revoked', 1);
    // Another deliverer has the busy endpoint's four slots.
    const other = randomUUID();
    const { rows: held } = await db.query<{ id: string }>(
      `UPDATE webhook_deliveries SET in_flight = true, next_attempt_at = NULL, lease_token = $2, lease_expires_at = now() + interval '1 minute'
     WHERE id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 LIMIT 4) RETURNING id`,
      [busy, other],
    );
    const claim = claimer(db, deliveryLeases(db, config, 60_000));
    expect(await claim()).toEqual([quiet]);
    // Two of the busy endpoint's slots free up: two of its four waiting deliveries are claimed.
    await db.query(`UPDATE webhook_deliveries SET in_flight = false, status = 'succeeded' WHERE id = ANY($1)`, [
      held.slice(0, 2).map((row) => row.id),
    ]);
    expect(await claim()).toEqual([busy, busy]);
    expect(await claim()).toEqual([]);
  }));

test('a claim keeps an organization within its share: the slow receivers of one never hold every slot', () =>
  inDatabaseOfItsOwn(async (db) => {
    const [crowded, modest] = [randomUUID(), randomUUID()];
    await db.query(`INSERT INTO orgs (id, name) VALUES ($1, 'Crowded'), ($2, 'Modest')`, [crowded, modest]);
    const endpoint = (org: string) => insertEndpoint(db, org, ['*']);
    // Three endpoints of one organization, four events each: twelve deliveries due, four per
    // endpoint, all older than the other organization's two.
    const crowdedEndpoints: string[] = [await endpoint(crowded), await endpoint(crowded), await endpoint(crowded)];
    await writeEvents(db, crowded, 'api_key.created', 4);
    const modestEndpoint = await endpoint(modest);
    await writeEvents(db, modest, 'api_key.created', 2);
    await db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 minute' WHERE org_id = $1`, [crowded]);

    const claim = claimer(db, deliveryLeases(db, { ...config, endpointConcurrency: 4, orgConcurrency: 6, maxInFlight: 16 }, 60_000));
    const claimed = await claim();
    // Six of the crowded organization's twelve, its share, and both of the other's.
    expect(claimed.filter((id) => crowdedEndpoints.includes(id))).toHaveLength(6);
    expect(claimed.filter((id) => id === modestEndpoint)).toHaveLength(2);
    expect(await claim()).toEqual([]);
    // Two of its attempts end: two more of its deliveries are claimed, no more.
    const { rows: ended } = await db.query<{ id: string }>(
      `UPDATE webhook_deliveries SET in_flight = false, status = 'succeeded'
     WHERE id IN (SELECT id FROM webhook_deliveries WHERE org_id = $1 AND in_flight LIMIT 2) RETURNING id`,
      [crowded],
    );
    expect(ended).toHaveLength(2);
    const again = await claim();
    expect(again).toHaveLength(2);
    expect(again.every((id) => crowdedEndpoints.includes(id))).toBe(true);
  }));

test('a claim reads the deliveries it claims, not the table of every past one', () =>
  inDatabaseOfItsOwn(async (db) => {
    const org = randomUUID();
    await db.query(`INSERT INTO orgs (id, name) VALUES ($1, 'Busy')`, [org]);
    await insertEndpoint(db, org, ['*']);
    // 8,000 deliveries, analyzed while they were due (a backlog), then made (the table keeps
    // them, for GET /deliveries) and vacuumed; then four due. The statistics still see a backlog,
    // as they do between two ANALYZEs of a busy endpoint.
    await db.query(
      `INSERT INTO events (id, org_id, type, resource_type, resource_id, data)
       SELECT 'evt_' || md5(n::text), $1, 'api_key.created', 'api_token', gen_random_uuid(), '{}' FROM generate_series(1, 8000) AS n`,
      [org],
    );
    await db.query('ANALYZE webhook_deliveries');
    await db.query(`UPDATE webhook_deliveries SET next_attempt_at = NULL, status = 'succeeded'`);
    await db.query('VACUUM webhook_deliveries');
    await writeEvents(db, org, 'api_key.created', 4);
    const buffers = await withTransaction(db, async (tx) => {
      await deliveryLeases(db, config, 60_000).lock(tx);
      // The claim is prepared: after a few runs PostgreSQL keeps one generic plan, which is the
      // one that must not read the table.
      await tx.query(`PREPARE claim_under_test AS ${claimStatement({ ...config, leaseMs: 60_000 }).text}`);
      await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_under_test('${randomUUID()}')`,
      );
      const plan = rows[0]!['QUERY PLAN'][0].Plan;
      return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
    });
    // The four, their event and endpoint, and the indexes' pages: a few dozen pages. Joined to
    // the claimed, the update read the whole table: over 500.
    expect(buffers).toBeLessThan(200);
  }));

test('a claim is planned once per connection, and again only after its tables change, however often they are analyzed', async () => {
  const db = createPool(await createTestDatabase({ migrated: true }), 1);
  try {
    await migrate(db);
    const org = randomUUID();
    await db.query(`INSERT INTO orgs (id, name) VALUES ($1, 'Analyzed')`, [org]);
    await insertEndpoint(db, org, ['*']);
    const claim = claimer(db, deliveryLeases(db, config, 60_000));
    // Deliveries come and the table is analyzed between claims, as autovacuum does every few
    // seconds under load: left to choose, PostgreSQL planned every claim after the first ANALYZE.
    for (let round = 0; round < 8; round++) {
      await writeEvents(db, org, 'api_key.created', 20);
      if (round >= 2) await db.query('ANALYZE webhook_deliveries');
      expect(await claim()).toHaveLength(config.endpointConcurrency);
      await db.query(`UPDATE webhook_deliveries SET in_flight = false, status = 'succeeded' WHERE in_flight`);
    }
    const { rows } = await db.query<{ generic_plans: number; custom_plans: number }>(
      `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'webhook_deliveries_claim%'`,
    );
    expect(rows).toEqual([{ generic_plans: 8, custom_plans: 0 }]);
  } finally {
    await db.end();
  }
});
