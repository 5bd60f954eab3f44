import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pool } from './db/pool.ts';
import { http } from './node-http.ts';

/**
 * The platform's Prometheus metrics: requests by operation and status with latency, both
 * connection pools, the operations queue, and the background loops. Instruments are fed by the
 * stages that see the events (request log, background runner); gauges of state are read from the
 * database when scraped, so they are never stale.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'cloud_http_requests_total',
    help: 'HTTP requests answered, by operation and status.',
    labelNames: ['operation', 'method', 'status'],
    registers: [this.registry],
  });
  private readonly requestSeconds = new Histogram({
    name: 'cloud_http_request_duration_seconds',
    help: 'Time to answer a request, by operation.',
    labelNames: ['operation', 'method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly backgroundRuns = new Counter({
    name: 'cloud_background_runs_total',
    help: 'Runs of background loops (reconcilers, scheduler, billing), by outcome.',
    labelNames: ['task', 'outcome'],
    registers: [this.registry],
  });
  private readonly backgroundSeconds = new Histogram({
    name: 'cloud_background_run_duration_seconds',
    help: 'Duration of background runs.',
    labelNames: ['task'],
    registers: [this.registry],
  });

  private readonly streamLimitCloses = new Counter({
    name: 'cloud_stream_limit_closes_total',
    help: 'Long-lived connections (console sessions) closed for a limit: input_flood (sent far past its rate) or output_not_read.',
    labelNames: ['stream', 'limit'],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'cloud_' });
  }

  /** A request was answered; `operation` is the contract's operationId, or `none` when no route matched. */
  requestAnswered(operation: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ operation, method, status: String(status) });
    this.requestSeconds.observe({ operation, method }, seconds);
  }

  backgroundRan(task: string, outcome: 'succeeded' | 'failed', seconds: number): void {
    this.backgroundRuns.inc({ task, outcome });
    this.backgroundSeconds.observe({ task }, seconds);
  }

  /** Connections of a pool: in use, idle, and requests waiting for one. */
  watchPool(name: string, pool: Pool): void {
    new Gauge({
      name: `cloud_db_pool_${name}_connections`,
      help: `Connections of the ${name} pool, by state (waiting: requests queued for a connection).`,
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
  }

  /** A long-lived connection (`stream`: console) was closed for a limit of core/flow-control.ts. */
  streamClosedForLimit(stream: string, limit: string): void {
    this.streamLimitCloses.inc({ stream, limit });
  }

  /** API requests received and not yet answered (or abandoned), read at scrape time. */
  watchRequestsInFlight(inFlight: () => number): void {
    this.gaugeReadAtScrape('cloud_http_requests_in_flight', 'API requests received and not yet answered.', inFlight);
  }

  /** Console sessions this process carries now. */
  watchConsoleSessions(open: () => number): void {
    this.gaugeReadAtScrape(
      'cloud_console_sessions_open',
      'Console sessions (WebSocket connections to an instance console) this process carries.',
      open,
    );
  }

  /** A gauge of one value, which `read` gives when the metrics are scraped. */
  private gaugeReadAtScrape(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  /** The operations queue, read at scrape time: queued and running by type, and the oldest queued age. */
  watchOperations(pool: Pool): void {
    const read = async () =>
      (
        await pool.query<{ type: string; state: string; count: number; oldest_seconds: number | null }>(
          `SELECT type, state, count(*)::int AS count, extract(epoch FROM now() - min(created_at))::float8 AS oldest_seconds
           FROM operations WHERE state IN ('queued', 'running') GROUP BY type, state`,
        )
      ).rows;
    let latest: Promise<Awaited<ReturnType<typeof read>>> | undefined;
    // One query per scrape, shared by both gauges.
    const rows = () => (latest ??= read().finally(() => setTimeout(() => (latest = undefined), 0)));
    new Gauge({
      name: 'cloud_operations',
      help: 'Operations queued or running, by type and state.',
      labelNames: ['type', 'state'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const row of await rows().catch(() => [])) this.set({ type: row.type, state: row.state }, row.count);
      },
    });
    new Gauge({
      name: 'cloud_operations_oldest_queued_seconds',
      help: 'Age of the oldest queued operation (0 when none waits).',
      registers: [this.registry],
      async collect() {
        const queued = (await rows().catch(() => [])).filter((row) => row.state === 'queued');
        this.set(Math.max(0, ...queued.map((row) => row.oldest_seconds ?? 0)));
      },
    });
  }

  /** Serves `GET /metrics` on a port of its own (nothing else; no API credential reaches it). */
  async serve(port: number, host: string): Promise<{ url: string; close(): Promise<void> }> {
    const server: Server = http.createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('metrics are at /metrics\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': this.registry.contentType }).end(text),
        () => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics could not be collected\n'),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    return {
      url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/metrics`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }
}
