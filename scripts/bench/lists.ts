// Section "lists at scale": 100,000 instances, operations and audit events of one organization
// (written with SQL: seeding that many through the API would take longer than the benchmark),
// then every documented filter of their lists, and a deep page, against the unfiltered first page.
import pg from 'pg';
import type { Api } from './api.ts';
import type { LoadSettings } from './load.ts';
import { ms, ratio, record, section } from './report.ts';

export interface ListsOptions {
  api: Api;
  databaseUrl: string;
  rows: number;
  settings: LoadSettings;
}

export async function listsSection({ api, databaseUrl, rows, settings }: ListsOptions): Promise<void> {
  section(`lists at ${rows.toLocaleString('en-US')} rows per table (p50 of one client, ${settings.seconds} s each)`);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  let samples: { vmId: string; until: string };
  try {
    samples = await seed(db, api.orgId, rows);
  } finally {
    await db.end();
  }
  const lists: Array<{ list: string; first: string; filters: Array<[string, string]> }> = [
    {
      list: 'instances',
      first: '/compute/vms',
      filters: [
        ['label team:team-7 (1%)', '/compute/vms?label=team:team-7'],
        ['label env:prod (33%)', '/compute/vms?label=env:prod'],
        ['state stopped (20%)', '/compute/vms?state=stopped'],
        ['region nbg-sc1 (5%)', '/compute/vms?region=nbg-sc1'],
      ],
    },
    {
      list: 'operations',
      first: '/operations',
      filters: [
        ['resource bucket (4%)', '/operations?resource=bucket'],
        ['state failed (5%)', '/operations?state=failed'],
      ],
    },
    {
      list: 'audit events',
      first: '/audit-events',
      filters: [
        ['resource_type bucket (4%)', '/audit-events?resource_type=bucket'],
        ['resource_id (one instance)', `/audit-events?resource_id=${samples.vmId}`],
        ['action vm.delete (5%)', '/audit-events?action=vm.delete'],
        ['until (the older half)', `/audit-events?until=${encodeURIComponent(samples.until)}`],
        ['since (the newer half)', `/audit-events?since=${encodeURIComponent(samples.until)}`],
      ],
    },
  ];
  for (const { list, first, filters } of lists) {
    const p50 = (orgPath: string) => medianLatency(`${api.base}/v1/orgs/${api.orgId}${orgPath}`, api.key, settings);
    const unfiltered = await p50(first);
    record({ figure: `${list}: first page, unfiltered`, real: `p50 ${ms(unfiltered)}` });
    for (const [name, orgPath] of filters) {
      const filtered = await p50(orgPath);
      record({
        figure: `${list}: ${name}`,
        real: `p50 ${ms(filtered)}`,
        ratio: `${ratio(filtered / unfiltered)} unfiltered`,
        goal: '≤ 2×',
      });
    }
    const deep = await deepPage(api, first, Math.floor(rows / 2));
    const deepP50 = await p50(deep.orgPath);
    record({
      figure: `${list}: page at row ${deep.position.toLocaleString('en-US')}`,
      real: `p50 ${ms(deepP50)}`,
      ratio: `${ratio(deepP50 / unfiltered)} first page`,
      goal: '≈ 1×',
    });
  }
}

/**
 * The median time of one request when nothing else is asked meanwhile (one client, requests one
 * after the other for `seconds`, after a warm-up), measured to the microsecond.
 */
async function medianLatency(url: string, key: string, settings: LoadSettings): Promise<number> {
  const once = async () => {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    return performance.now() - started;
  };
  for (const warmUpUntil = performance.now() + settings.warmupSeconds * 1000; performance.now() < warmUpUntil;) await once();
  const times: number[] = [];
  for (const until = performance.now() + settings.seconds * 1000; performance.now() < until && times.length < 5_000;)
    times.push(await once());
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** The path of a page `depth` rows into a list, reached by following cursors 200 at a time. */
async function deepPage(api: Api, first: string, depth: number): Promise<{ orgPath: string; position: number }> {
  let cursor: string | null = null;
  let position = 0;
  while (position < depth) {
    const response = await fetch(`${api.base}/v1/orgs/${api.orgId}${first}?limit=200${cursor ? `&cursor=${cursor}` : ''}`, {
      headers: { authorization: `Bearer ${api.key}` },
    });
    const page = (await response.json()) as { items: unknown[]; next_cursor: string | null };
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
    position += page.items.length;
  }
  return { orgPath: cursor ? `${first}?cursor=${cursor}` : first, position };
}

/** `rows` instances, operations and audit events, with the spread the filters above expect. */
async function seed(db: pg.Client, orgId: string, rows: number): Promise<{ vmId: string; until: string }> {
  await db.query(
    `INSERT INTO vms (id, org_id, name, region_id, disk_redundancy, storage_pool_id, network_profile_id, image_id, image_name,
                      vcpus, memory_mb, disk_gb, state, desired_state, labels, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'seed-' || i, r.region, r.redundancy, r.pool, r.profile, 'debian-12', 'Debian 12',
            1, 1024, 20, s.state, s.state,
            jsonb_build_object('env', (ARRAY['prod', 'staging', 'dev'])[1 + i % 3], 'team', 'team-' || (i % 100)),
            now() - interval '2 days' + i * interval '1 millisecond', now() - interval '2 days'
     FROM generate_series(1, $2::int) i,
     LATERAL (SELECT CASE WHEN i % 20 = 0 THEN 'nbg-sc1' WHEN i % 2 = 0 THEN 'fra1' ELSE 'ams1' END AS region) g,
     LATERAL (SELECT g.region,
                     CASE g.region WHEN 'nbg-sc1' THEN 'single_copy' ELSE 'replicated' END AS redundancy,
                     CASE g.region WHEN 'nbg-sc1' THEN 'nbg-sc1-local' ELSE g.region || '-ssd' END AS pool,
                     g.region || '-standard' AS profile) r,
     LATERAL (SELECT CASE WHEN i % 10 IN (7, 8) THEN 'stopped' ELSE 'running' END AS state) s`,
    [orgId, rows],
  );
  await db.query(
    `INSERT INTO operations (id, org_id, type, resource_type, resource_id, state, attempt, max_attempts, created_at, started_at,
                             finished_at, error_class, error_detail)
     SELECT gen_random_uuid(), $1, k.type, k.resource_type, gen_random_uuid()::text, st.state, 1, 5, t.at, t.at, t.at + interval '1 second',
            CASE st.state WHEN 'failed' THEN 'backend_unavailable' END,
            CASE st.state WHEN 'failed' THEN 'The compute backend was unavailable after 5 attempts. [' || k.type || ']' END
     FROM generate_series(1, $2::int) i,
     LATERAL (SELECT now() - interval '2 days' + i * interval '1 millisecond' AS at) t,
     LATERAL (SELECT CASE WHEN i % 100 < 85 THEN 'vm' WHEN i % 100 < 95 THEN 'public_ip' WHEN i % 100 < 99 THEN 'bucket' ELSE 'access_key' END AS resource_type) r,
     LATERAL (SELECT r.resource_type,
                     CASE r.resource_type WHEN 'vm' THEN 'vm.start' WHEN 'public_ip' THEN 'ip.allocate' WHEN 'bucket' THEN 'bucket.create'
                     ELSE 'access_key.create' END AS type) k,
     LATERAL (SELECT CASE WHEN i % 20 = 3 THEN 'failed' WHEN i % 100 = 7 THEN 'cancelled' ELSE 'succeeded' END AS state) st`,
    [orgId, rows],
  );
  const { rows: sample } = await db.query<{ id: string }>(`SELECT id FROM vms WHERE org_id = $1 AND name = 'seed-1'`, [orgId]);
  const vmId = sample[0]!.id;
  await db.query(
    `INSERT INTO audit_events (id, org_id, ts, action, resource_type, resource_id, result, actor_sub, actor_realm, request_id)
     SELECT gen_random_uuid(), $1, now() - interval '2 days' + i * interval '1 millisecond', a.action, a.resource_type,
            CASE WHEN i % 10000 = 0 THEN $3 ELSE gen_random_uuid()::text END, 'succeeded', 'bench', 'api_key', 'req_bench'
     FROM generate_series(1, $2::int) i,
     LATERAL (SELECT CASE WHEN i % 100 < 4 THEN 'bucket' ELSE 'vm' END AS resource_type,
                     CASE WHEN i % 100 < 4 THEN 'bucket.create' WHEN i % 20 = 5 THEN 'vm.delete' ELSE 'vm.start' END AS action) a`,
    [orgId, rows, vmId],
  );
  const { rows: middle } = await db.query<{ until: string }>(
    `SELECT to_char((now() - interval '2 days' + ($1::int / 2) * interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS until`,
    [rows],
  );
  await db.query('ANALYZE vms, operations, audit_events');
  return { vmId, until: middle[0]!.until };
}
