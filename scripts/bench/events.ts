// Section "events": what the event log and webhooks add to a write's cost (issue 33, goal 7: at
// most 10%). The same write, POST /api-tokens (its audit event, its Idempotency-Key, and now its
// api_key.created event), against three servers in turn: the log off (EVENT_LOG=false, the
// baseline), the log on with no endpoint, and the log on with an endpoint subscribed to every
// event at a receiver on this machine (every write then also becomes a signed delivery, made by
// the server while the load runs). Printed: requests per second, and CPU per request (Node and
// PostgreSQL) with its ratio to the baseline, the cost the goal is about.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { call } from './api.ts';
import { load, loadGenerator, type LoadSettings } from './load.ts';
import { cpuPer } from './processes.ts';
import { cpuMs, perSecond, ratio, record, section } from './report.ts';
import type { RunningServer } from './servers.ts';

type Start = (name: string, env: Record<string, string>) => Promise<RunningServer>;

interface Cost {
  rps: number;
  cpuPerRequest: number;
  node: number;
  postgres: number;
}

export async function eventsSection(start: Start, stop: (server: RunningServer) => Promise<void>, settings: LoadSettings): Promise<void> {
  section(
    `events (POST /api-tokens, ${settings.connections} connections, ${settings.seconds} s after ${settings.warmupSeconds} s warm-up)`,
  );
  // A receiver that acknowledges at once, counting what it gets.
  let delivered = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  try {
    const measure = async (name: string, env: Record<string, string>, withEndpoint: boolean): Promise<Cost> => {
      const server = await start(name, { WEBHOOK_ALLOW_INSECURE: 'true', ...env });
      try {
        if (withEndpoint) {
          const created = await call(server.api, 'POST', '/webhook-endpoints', { url: receiverUrl });
          if (created.status !== 201) throw new Error(`createWebhookEndpoint: ${created.status} ${created.text}`);
        }
        const request = {
          method: 'POST' as const,
          url: `${server.api.base}/v1/orgs/${server.api.orgId}/api-tokens`,
          headers: { authorization: `Bearer ${server.api.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'bench', scopes: ['read'] }),
          freshIdempotencyKey: true,
        };
        await load(request, { ...settings, seconds: settings.warmupSeconds, warmupSeconds: 0 }, loadGenerator());
        const measured = await cpuPer(
          { pid: server.child.pid, postgresDir: path.join(server.dataDir, 'postgres') },
          () => load(request, { ...settings, warmupSeconds: 0 }, loadGenerator()),
          (run) => run.sent,
        );
        const { node, postgres } = measured.perUnit!;
        return { rps: measured.result.rps, cpuPerRequest: node + postgres, node, postgres };
      } finally {
        await stop(server);
      }
    };
    const baseline = await measure('events-off', { EVENT_LOG: 'false' }, false);
    const logged = await measure('events-log', {}, false);
    delivered = 0;
    const hooked = await measure('events-webhooks', {}, true);
    const line = (figure: string, cost: Cost, goal?: string) =>
      record({
        figure,
        real: `${perSecond(cost.rps)}, CPU per request ${cpuMs(cost.cpuPerRequest)} (Node ${cpuMs(cost.node)}, PostgreSQL ${cpuMs(cost.postgres)})`,
        ratio: `cost ${ratio(cost.cpuPerRequest / baseline.cpuPerRequest)}, throughput ${ratio(cost.rps / baseline.rps)}`,
        ...(goal && { goal }),
      });
    line('write without the event log (EVENT_LOG=false)', baseline);
    line('write with the event log (no endpoint)', logged, 'cost ≤ 1.10×');
    line(
      `write with the event log and a webhook endpoint (${delivered.toLocaleString('en-US')} deliveries during the run)`,
      hooked,
      'cost ≤ 1.10×',
    );
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}
