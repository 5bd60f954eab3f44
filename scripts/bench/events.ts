// Section "events": what the event log and webhooks add to a write's cost (issue 33, goal 7: at
// most 10%). The same write, POST /api-tokens (its audit event, its Idempotency-Key, and now its
// api_key.created event), against three servers, in short rounds taken in turn: the log off
// (EVENT_LOG=false, the baseline), the log on with no endpoint, and the log on with an endpoint
// subscribed to every event at a receiver on this machine (every write then also becomes a
// signed delivery, made by the server while the load runs). Printed: requests per second, and CPU per request (Node and
// PostgreSQL) with its ratio to the baseline, the cost the goal is about; and each server's CPU
// over the whole run, every delivery made, per request. With BENCH_BASELINE, that checkout's
// server with an endpoint takes its turn too, and the cost of a write with its delivery is
// compared with it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { call } from './api.ts';
import { load, loadGenerator, type LoadSettings } from './load.ts';
import { cpuOf, cpuPer } from './processes.ts';
import { cpuMs, perSecond, ratio, record, section } from './report.ts';
import type { RunningServer } from './servers.ts';

type Start = (name: string, env: Record<string, string>, root?: string) => Promise<RunningServer>;

const postgresDirOf = (server: RunningServer) => path.join(server.dataDir, 'postgres');

interface Cost {
  rps: number;
  cpuPerRequest: number;
  node: number;
  postgres: number;
}

export async function eventsSection(
  start: Start,
  stop: (server: RunningServer) => Promise<void>,
  settings: LoadSettings,
  /** Another checkout (BENCH_BASELINE): its server with an endpoint is measured in the same rounds. */
  baselineRoot?: string,
): Promise<void> {
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
    // The servers run side by side and are loaded in turn, a short round each, several
    // times: a burst of other work on the machine then weighs on each alike, and the ratio printed
    // is the median of the rounds' ratios (as the requests section does against the floor).
    const variants: Array<{ name: string; env: Record<string, string>; withEndpoint: boolean; root?: string }> = [
      { name: 'events-off', env: { EVENT_LOG: 'false' }, withEndpoint: false },
      { name: 'events-log', env: {}, withEndpoint: false },
      { name: 'events-webhooks', env: {}, withEndpoint: true },
      ...(baselineRoot ? [{ name: 'baseline-events-webhooks', env: {}, withEndpoint: true, root: baselineRoot }] : []),
    ];
    const servers: RunningServer[] = [];
    try {
      for (const variant of variants) {
        const server = await start(variant.name, { WEBHOOK_ALLOW_INSECURE: 'true', ...variant.env }, variant.root);
        servers.push(server);
        if (variant.withEndpoint) {
          const created = await call(server.api, 'POST', '/webhook-endpoints', { url: receiverUrl });
          if (created.status !== 201) throw new Error(`createWebhookEndpoint: ${created.status} ${created.text}`);
        }
      }
      const requestOf = (server: RunningServer) => ({
        method: 'POST' as const,
        url: `${server.api.base}/v1/orgs/${server.api.orgId}/api-tokens`,
        headers: { authorization: `Bearer ${server.api.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench', scopes: ['read'] }),
        freshIdempotencyKey: true,
      });
      for (const server of servers)
        await load(requestOf(server), { ...settings, seconds: settings.warmupSeconds, warmupSeconds: 0 }, loadGenerator());
      const rounds = settings.seconds >= 6 ? 5 : 1;
      const round: LoadSettings = { ...settings, seconds: Math.max(1, Math.round(settings.seconds / rounds)), warmupSeconds: 0 };
      const measured: Cost[][] = variants.map(() => []);
      // Each server's CPU is also taken over the whole run, from before its first round until every
      // delivery is made (made meanwhile too, during the other servers' rounds), per request of its
      // rounds: what a write with its delivery costs in all. Taken alike for the three, since a
      // window that long holds background work a round's seldom does (autovacuum of what the
      // rounds wrote, the checkpointer): only the same window compares. The warm-up's deliveries
      // are made first.
      const hookedDbs = servers
        .filter((_server, index) => variants[index]!.withEndpoint)
        .map((server) => new pg.Client({ connectionString: server.databaseUrl }));
      for (const db of hookedDbs) await db.connect();
      let pending = 0;
      const pendingNow = async () => {
        pending = 0;
        for (const db of hookedDbs)
          pending += Number(
            (await db.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`)).rows[0]!.n,
          );
        return pending;
      };
      const drained = async () => {
        const deadline = Date.now() + 180_000;
        while ((await pendingNow()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
        return pending;
      };
      await drained();
      const wholeRunBefore = servers.map((server) => cpuOf(server.child.pid, postgresDirOf(server)));
      const requestsOf = servers.map(() => 0);
      delivered = 0;
      for (let turn = 0; turn < rounds; turn++) {
        for (const [index, server] of servers.entries()) {
          const { result, perUnit } = await cpuPer(
            { pid: server.child.pid, postgresDir: postgresDirOf(server) },
            () => load(requestOf(server), round, loadGenerator()),
            (run) => run.sent,
          );
          requestsOf[index] = requestsOf[index]! + result.sent;
          measured[index]!.push({
            rps: result.rps,
            cpuPerRequest: perUnit!.node + perUnit!.postgres,
            node: perUnit!.node,
            postgres: perUnit!.postgres,
          });
        }
      }
      const undelivered = await drained();
      const wholeRun = servers.map((server, index) => {
        const after = cpuOf(server.child.pid, postgresDirOf(server));
        const before = wholeRunBefore[index]!;
        const requests = requestsOf[index]!;
        return { node: (after.node - before.node) / requests, postgres: (after.postgres - before.postgres) / requests };
      });
      const total = (cost: { node: number; postgres: number }) => cost.node + cost.postgres;
      for (const db of hookedDbs) await db.end();
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      const mean = (costs: Cost[], field: keyof Cost) => costs.reduce((sum, cost) => sum + cost[field], 0) / costs.length;
      const line = (figure: string, index: number, goal?: string) => {
        const costs = measured[index]!;
        const costRatios = costs.map((cost, turn) => cost.cpuPerRequest / measured[0]![turn]!.cpuPerRequest);
        const rpsRatios = costs.map((cost, turn) => cost.rps / measured[0]![turn]!.rps);
        record({
          figure,
          real: `${perSecond(mean(costs, 'rps'))}, CPU per request ${cpuMs(mean(costs, 'cpuPerRequest'))} (Node ${cpuMs(mean(costs, 'node'))}, PostgreSQL ${cpuMs(mean(costs, 'postgres'))})`,
          ratio: `cost ${ratio(median(costRatios))}, throughput ${ratio(median(rpsRatios))}${rounds > 1 ? ` (cost by round ${costRatios.map((value) => value.toFixed(2)).join(', ')})` : ''}`,
          ...(goal && { goal }),
        });
      };
      line('write without the event log (EVENT_LOG=false)', 0);
      line('write with the event log (no endpoint)', 1, 'cost ≤ 1.10×');
      line(
        `write with the event log and a webhook endpoint (${delivered.toLocaleString('en-US')} deliveries during the rounds${baselineRoot ? ", the baseline's too" : ''})`,
        2,
        'cost ≤ 1.10×',
      );
      if (baselineRoot) {
        line('the baseline: write with the event log and a webhook endpoint', 3);
        const againstBaseline = measured[2]!.map((cost, turn) => cost.cpuPerRequest / measured[3]![turn]!.cpuPerRequest);
        record({
          figure: "write with the event log and a webhook endpoint, against the baseline's",
          real: `CPU per request ${cpuMs(mean(measured[2]!, 'cpuPerRequest'))} against ${cpuMs(mean(measured[3]!, 'cpuPerRequest'))}; over the whole run ${cpuMs(total(wholeRun[2]!))} against ${cpuMs(total(wholeRun[3]!))}`,
          ratio: `cost ${ratio(median(againstBaseline))} (by round ${againstBaseline.map((value) => value.toFixed(2)).join(', ')}), over the whole run ${ratio(total(wholeRun[2]!) / total(wholeRun[3]!))}`,
        });
      }
      const whole = ['the log off', 'the log', 'the log and a webhook endpoint, every delivery made', 'the baseline, every delivery made'];
      wholeRun.forEach((cost, index) =>
        record({
          figure: `over the whole run, ${whole[index]}${index === 2 && undelivered > 0 ? ` (${undelivered} still pending after 3 min, counting the baseline's)` : ''}`,
          real: `CPU per request ${cpuMs(total(cost))} (Node ${cpuMs(cost.node)}, PostgreSQL ${cpuMs(cost.postgres)})`,
          ratio: `cost ${ratio(total(cost) / total(wholeRun[0]!))}`,
          ...(index > 0 && { goal: 'cost ≤ 1.10×' }),
        }),
      );
    } finally {
      for (const server of servers) await stop(server);
    }
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}
