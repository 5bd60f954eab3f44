// Section "metering": what one metering pass costs at about 1,200 instances and 100 public IPs
// in 20 organizations, a pass every 5 s of their time: with nothing changed since the last pass,
// and with 10 instances stopped and 10 started. A pass runs under the lock every server process's
// pass waits for, so its duration is how long the others queue behind it. The platform's own
// billing run and compute usage source, in the bench's process, on the database of a server that
// runs no background work of its own (its passes would interleave).
import { randomUUID } from 'node:crypto';
import { computeUsage } from '../../server/areas/compute/compute-metering.ts';
import { createBillingRun } from '../../server/areas/billing/metering/billing-run.ts';
import { loadPriceList } from '../../server/areas/billing/prices/price-list.ts';
import { loadConfig } from '../../server/config.ts';
import { createOrganizationClock } from '../../server/core/test-clocks.ts';
import { createPool } from '../../server/db/pool.ts';
import type { BillingProviderDriver } from '../../server/drivers/billing-provider.ts';
import { createLogger } from '../../server/logging.ts';
import { ms, record, section } from './report.ts';

const ORGANIZATIONS = 20;
const INSTANCES = 1_200;
const ADDRESSES = 100;
const INTERVAL_MS = 5_000;

export async function meteringSection(databaseUrl: string, settings: { passes: number }): Promise<void> {
  section(`metering (a pass at ${INSTANCES.toLocaleString('en-US')} instances and ${ADDRESSES} public IPs, every ${INTERVAL_MS / 1000} s)`);
  const pool = createPool(databaseUrl, 4);
  // Statements sent by the passes, counted on every connection the pool opens.
  let statements = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      statements++;
      return query(...args);
    }) as typeof client.query;
  });
  try {
    const orgIds = Array.from({ length: ORGANIZATIONS }, () => randomUUID());
    await pool.query(`INSERT INTO orgs (id, name) SELECT id, 'metering bench ' || n FROM unnest($1::uuid[]) WITH ORDINALITY AS o (id, n)`, [
      orgIds,
    ]);
    await pool.query(
      `INSERT INTO vms (id, org_id, name, region_id, disk_redundancy, storage_pool_id, network_profile_id, image_id, image_name,
         vcpus, memory_mb, disk_gb, state, desired_state, powered_since)
       SELECT gen_random_uuid(), ($1::uuid[])[1 + n % $2], 'metered-' || n, 'fra1', 'replicated', 'fra1-ssd', 'fra1-standard',
         'ubuntu-24.04', 'Ubuntu 24.04', 1 + n % 4, 1024 * (1 + n % 4), 20, 'running', 'running', now()
       FROM generate_series(1, $3) AS n`,
      [orgIds, ORGANIZATIONS, INSTANCES],
    );
    await pool.query(
      `INSERT INTO public_ips (id, org_id, region_id, address, state)
       SELECT gen_random_uuid(), ($1::uuid[])[1 + n % $2], 'fra1', '203.0.113.' || n, 'allocated' FROM generate_series(1, $3) AS n`,
      [orgIds, ORGANIZATIONS, ADDRESSES],
    );
    let now = Date.now();
    const meter = createBillingRun({
      pool,
      orgClock: createOrganizationClock({ now: () => new Date(now) }, false),
      provider: {} as BillingProviderDriver, // metering never calls the provider
      prices: loadPriceList(),
      invoicing: loadConfig({}).invoicing,
      sources: () => [computeUsage],
      links: () => Promise.reject(new Error('metering closes no month')),
      log: createLogger('silent'),
    }).meter;
    // The first pass sees every resource for the first time.
    await meter();

    const measure = async (figure: string, change: () => Promise<void>) => {
      const durations: number[] = [];
      let sent = 0;
      for (let pass = 0; pass < settings.passes; pass++) {
        await change();
        now += INTERVAL_MS;
        const before = statements;
        const started = performance.now();
        await meter();
        durations.push(performance.now() - started);
        sent += statements - before;
      }
      durations.sort((a, b) => a - b);
      record({
        figure,
        real: `median ${ms(durations[Math.floor(durations.length / 2)]!)}, max ${ms(durations[durations.length - 1]!)}; ${Math.round(sent / settings.passes)} statements`,
        goal: `≪ ${INTERVAL_MS / 1000} s, not growing with the instances`,
      });
    };
    await measure('pass, nothing changed', async () => {});
    // Ten stopped before each pass, and the ten stopped before the previous one started again.
    let stopped: string[] = [];
    const stopTen = async () => {
      const { rows } = await pool.query<{ id: string }>(
        `UPDATE vms SET powered_since = NULL
         WHERE id IN (SELECT id FROM vms WHERE name LIKE 'metered-%' AND powered_since IS NOT NULL ORDER BY random() LIMIT 10) RETURNING id`,
      );
      return rows.map((row) => row.id);
    };
    stopped = await stopTen();
    await measure('pass, 10 instances stopped and 10 started since the last', async () => {
      await pool.query('UPDATE vms SET powered_since = $2 WHERE id = ANY($1::uuid[])', [stopped, new Date(now)]);
      stopped = await stopTen();
    });
  } finally {
    await pool.end();
  }
}
