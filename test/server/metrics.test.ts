// Prometheus metrics, scraped as Prometheus does: requests by operation and status with latency,
// the pools, the operations queue and the background loops, on a port of their own.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { vmRequest } from './areas/compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ SIM_LATENCY_MS: '400-500' });
});
afterAll(() => server?.close());

async function scrape(): Promise<string> {
  const response = await fetch(server.metricsUrl!);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The value of one sample, by its full name with labels as Prometheus prints them. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  test('requests are counted by operation and status, with a latency histogram', async () => {
    for (let i = 0; i < 3; i++) await server.org.call('GET', '/billing');
    await server.org.call('GET', '/compute/vms/not-a-uuid');
    const text = await scrape();
    expect(sample(text, 'cloud_http_requests_total{operation="getBilling",method="GET",status="200"}')).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'cloud_http_requests_total{operation="getVm",method="GET",status="400"}')).toBe(1);
    expect(sample(text, 'cloud_http_request_duration_seconds_count{operation="getBilling",method="GET"}')).toBeGreaterThanOrEqual(3);
  });

  test('pools and the operations queue are read when scraped', async () => {
    const created = await server.org.call('POST', '/compute/vms', { body: vmRequest() });
    expect(created.status, created.text).toBe(202);
    const text = await scrape();
    expect(sample(text, 'cloud_db_pool_api_connections{state="total"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'cloud_db_pool_backends_connections{state="waiting"}')).toBeGreaterThanOrEqual(0);
    // The simulator takes 400 ms or more: the instance's creation is still queued or running.
    const inFlight = ['queued', 'running'].map((state) => sample(text, `cloud_operations{type="vm.create",state="${state}"}`) ?? 0);
    expect(inFlight[0]! + inFlight[1]!).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'cloud_operations_oldest_queued_seconds')).toBeGreaterThanOrEqual(0);
    await server.waitForOperation(server.org, created.body.operation.id);
    const after = await scrape();
    expect(sample(after, 'cloud_operations{type="vm.create",state="running"}') ?? 0).toBe(0);
  });

  test('background loops are counted by outcome', async () => {
    const runs = await eventually(
      async () => sample(await scrape(), 'cloud_background_runs_total{task="compute-reconciler",outcome="succeeded"}'),
      'the reconciler to run',
    );
    expect(runs).toBeGreaterThanOrEqual(1);
  });

  test('the metrics port serves metrics only', async () => {
    const other = await fetch(server.metricsUrl!.replace('/metrics', '/v1/orgs'));
    expect(other.status).toBe(404);
    expect(new URL(server.metricsUrl!).port).not.toBe(new URL(server.url).port);
  });
});
