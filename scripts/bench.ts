// `npm run bench`: request throughput, latency and memory of the real server, with response
// validation on (the default) and off. Prints figures; asserts nothing.
//   npm run bench [-- --requests 2000 --concurrency 16]
// Uses DATABASE_URL when set, else an embedded PostgreSQL in a temporary directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { withTransaction } from '../server/db/pool.ts';
import { createOrganization } from '../server/auth/organizations.ts';
import { loadConfig } from '../server/config.ts';
import { createLogger } from '../server/logging.ts';
import { startPlatform } from '../server/platform.ts';
import { benchS3OnRgw } from './bench/s3-rgw.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
  },
});
const totalRequests = Number(values.requests);
const concurrency = Number(values.concurrency);

interface Scenario {
  name: string;
  request: (base: string, key: string, index: number) => Promise<Response>;
}

const scenarios: Scenario[] = [
  { name: 'GET /billing', request: (base, key) => fetch(`${base}/billing`, { headers: { Authorization: `Bearer ${key}` } }) },
  {
    name: 'GET /api-tokens (list)',
    request: (base, key) => fetch(`${base}/api-tokens?limit=50`, { headers: { Authorization: `Bearer ${key}` } }),
  },
  {
    name: 'PUT /billing (write + audit)',
    request: (base, key, index) =>
      fetch(`${base}/billing`, {
        method: 'PUT',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: `{"spend_budget_cents": ${1000 + index}}`,
      }),
  },
];

async function measure(scenario: Scenario, base: string, key: string): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < totalRequests) {
        const index = next++;
        const t0 = performance.now();
        const response = await scenario.request(base, key, index);
        await response.arrayBuffer();
        latencies.push(performance.now() - t0);
        if (!response.ok) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  return { rps: totalRequests / elapsed, p50: percentile(50), p99: percentile(99), errors };
}

async function run(validateResponses: boolean): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-'));
  const config = loadConfig({
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'silent',
    RATE_LIMIT: '1000000',
    VALIDATE_RESPONSES: String(validateResponses),
  });
  const platform = await startPlatform(config, createLogger('silent'));
  try {
    const org = await withTransaction(platform.pool, (tx) => createOrganization(tx, { name: 'Bench', ownerSubject: 'bench' }));
    const base = `${platform.url}/v1/orgs/${org.orgId}`;
    console.log(`\nresponse validation ${validateResponses ? 'on' : 'off'} (${totalRequests} requests, ${concurrency} at a time)`);
    for (const scenario of scenarios) {
      await measure(scenario, base, org.apiKey); // warm-up
      const result = await measure(scenario, base, org.apiKey);
      console.log(
        `  ${scenario.name.padEnd(30)} ${result.rps.toFixed(0).padStart(6)} req/s   p50 ${result.p50.toFixed(1).padStart(6)} ms   p99 ${result.p99.toFixed(1).padStart(6)} ms${result.errors ? `   ${result.errors} errors` : ''}`,
      );
    }
    const memory = process.memoryUsage();
    console.log(`  memory: rss ${(memory.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(memory.heapUsed / 2 ** 20).toFixed(0)} MiB`);
  } finally {
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await run(true);
await run(false);

// Object storage on Ceph, when there is one (scripts/bench/s3-rgw.ts).
await benchS3OnRgw();
