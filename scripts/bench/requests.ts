// Section "requests": the same requests against the real server, the stack floor (serving the
// real server's recorded answers) and the Prism mock, one after the other in one run.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { call, inParallel, vmRequest, type Api } from './api.ts';
import type { RecordedAnswer } from './floor-server.ts';
import { load, loadGenerator, type LoadFigures, type LoadRequest, type LoadSettings } from './load.ts';
import { cpuPer, startFloor, startPrism, type Child } from './processes.ts';
import { cpuMs, ms, perSecond, ratio, record, section } from './report.ts';

export interface RequestsOptions {
  api: Api;
  /** Where the floor's recorded answers are written. */
  workDir: string;
  settings: LoadSettings;
  /** Instances in the listed page (100 by default). */
  listSize: number;
  /** The real server's process and its PostgreSQL's directory: CPU time per request is printed for writes. */
  server?: { pid: number; postgresDir: string };
  /**
   * Another checkout's server (BENCH_BASELINE), seeded alike and loaded in turn with this one:
   * a change to a figure is read as a ratio to it, taken under the same load.
   */
  baseline?: Api;
}

interface Figure {
  name: string;
  goal?: string;
  method: LoadRequest['method'];
  orgPath: string;
  body?: unknown;
  freshIdempotencyKey?: boolean;
}

export async function requestsSection({ api, workDir, settings, listSize, server, baseline }: RequestsOptions): Promise<void> {
  const generator = loadGenerator();
  section(
    `requests (${generator}${generator === 'wrk' ? ', 1 thread' : ''}, ${settings.connections} connections, ${settings.seconds} s each after ${settings.warmupSeconds} s warm-up${baseline ? ', the baseline in turn' : ''})`,
  );
  const figures = figuresFor(await seededInstance(api, listSize), listSize);
  const baselineFigures = baseline ? figuresFor(await seededInstance(baseline, listSize), listSize) : undefined;

  // The floor serves exactly what the real server answered.
  const recorded: RecordedAnswer[] = [];
  for (const figure of figures) {
    const answer = await call(
      api,
      figure.method,
      figure.orgPath,
      figure.body,
      figure.freshIdempotencyKey ? { 'Idempotency-Key': crypto.randomUUID() } : {},
    );
    if (answer.status >= 300) throw new Error(`${figure.name}: the real server answered ${answer.status} ${answer.text}`);
    recorded.push({
      method: figure.method.toLowerCase() as RecordedAnswer['method'],
      path: `/v1/orgs/${api.orgId}${figure.orgPath.split('?')[0]}`,
      status: answer.status,
      body: answer.text,
    });
  }
  const routesFile = path.join(workDir, 'floor-routes.json');
  writeFileSync(routesFile, JSON.stringify(recorded));
  const floor = await startFloor(routesFile);
  let prism: Child | undefined;
  try {
    prism = await startPrism().catch((error: unknown) => {
      console.log(`  (Prism did not start: ${String(error).split('\n')[0]})`);
      return undefined;
    });
    const floorApi: Api = { ...api, base: floor.url };
    for (const [index, figure] of figures.entries()) {
      const against = (target: Api, loadSettings: LoadSettings, asked = figure) =>
        load(
          {
            method: asked.method,
            url: `${target.base}/v1/orgs/${target.orgId}${asked.orgPath}`,
            headers: { authorization: `Bearer ${target.key}` },
            body: asked.body === undefined ? undefined : JSON.stringify(asked.body),
            freshIdempotencyKey: asked.freshIdempotencyKey,
          },
          loadSettings,
          generator,
        );
      const baselineTurn =
        baseline && baselineFigures ? (loadSettings: LoadSettings) => against(baseline, loadSettings, baselineFigures[index]) : undefined;
      // The real server and the floor take turns in short rounds, and the ratio is the median of
      // the rounds' ratios: a burst of other work on the machine then weighs on both sides alike
      // instead of on whichever happened to run during it.
      const rounds = settings.seconds >= 6 ? 3 : 1;
      const round: LoadSettings = { ...settings, seconds: settings.seconds / rounds, warmupSeconds: 0 };
      const warmUp: LoadSettings = { ...settings, seconds: settings.warmupSeconds, warmupSeconds: 0 };
      await against(api, warmUp);
      await against(floorApi, warmUp);
      await baselineTurn?.(warmUp);
      const real: LoadFigures[] = [];
      const floorRounds: LoadFigures[] = [];
      const baselineRounds: LoadFigures[] = [];
      // CPU of the real server (Node and PostgreSQL apart) over its rounds, for the writes.
      const cpu = { node: 0, postgres: 0, requests: 0 };
      for (let turn = 0; turn < rounds; turn++) {
        const measured = await cpuPer(
          figure.method === 'GET' ? undefined : server,
          () => against(api, round),
          (run) => run.sent,
        );
        real.push(measured.result);
        if (measured.perUnit) {
          cpu.node += measured.perUnit.node * measured.result.sent;
          cpu.postgres += measured.perUnit.postgres * measured.result.sent;
          cpu.requests += measured.result.sent;
        }
        floorRounds.push(await against(floorApi, round));
        if (baselineTurn) baselineRounds.push(await baselineTurn(round));
      }
      const perUnit = cpu.requests > 0 ? { node: cpu.node / cpu.requests, postgres: cpu.postgres / cpu.requests } : undefined;
      const prismFigures = prism ? await against({ ...api, base: prism.url }, settings) : undefined;
      const realFigures = combined(real);
      const floorFigures = combined(floorRounds);
      const ratios = real.map((figures, turn) => figures.rps / floorRounds[turn]!.rps).sort((a, b) => a - b);
      const failures = (count: number) => (count > 0 ? ` (${count} failed)` : '');
      record({
        figure: figure.name,
        real: `${perSecond(realFigures.rps)}, p50 ${ms(realFigures.p50)}${failures(realFigures.failures)}`,
        floor: `${perSecond(floorFigures.rps)}, p50 ${ms(floorFigures.p50)}${failures(floorFigures.failures)}`,
        ratio: `${ratio(ratios[Math.floor(ratios.length / 2)]!)}${rounds > 1 ? ` (rounds ${ratios.map((value) => value.toFixed(2)).join(', ')})` : ''}`,
        prism: prismFigures ? `${perSecond(prismFigures.rps)}${failures(prismFigures.failures)}` : '—',
        goal: figure.goal,
      });
      // Tails: the worst round's p99 and p99.9 on each side (issue 33, goal 3: p99 at most 2× the floor's).
      const tailRatios = real.map((figures, turn) => figures.p99 / floorRounds[turn]!.p99).sort((a, b) => a - b);
      record({
        figure: `${figure.name}: tails`,
        real: `p99 ${ms(realFigures.p99)}, p99.9 ${ms(realFigures.p999)}`,
        floor: `p99 ${ms(floorFigures.p99)}, p99.9 ${ms(floorFigures.p999)}`,
        ratio: `p99 ${ratio(tailRatios[Math.floor(tailRatios.length / 2)]!)} of the floor's`,
        goal: figure.method === 'GET' ? 'p99 ≤ 2× floor' : undefined,
      });
      if (baselineRounds.length > 0) {
        const theirs = combined(baselineRounds);
        const againstBaseline = real.map((figures, turn) => figures.rps / baselineRounds[turn]!.rps).sort((a, b) => a - b);
        record({
          figure: `${figure.name}: against the baseline`,
          real: `${perSecond(realFigures.rps)}, p99 ${ms(realFigures.p99)}; the baseline ${perSecond(theirs.rps)}, p99 ${ms(theirs.p99)}`,
          ratio: `${ratio(againstBaseline[Math.floor(againstBaseline.length / 2)]!)} of the baseline${rounds > 1 ? ` (rounds ${againstBaseline.map((value) => value.toFixed(2)).join(', ')})` : ''}`,
        });
      }
      if (perUnit) {
        record({
          figure: `${figure.name}: CPU per request`,
          real: `Node ${cpuMs(perUnit.node)}, PostgreSQL ${cpuMs(perUnit.postgres)}`,
          goal: 'what 1,000/s needs: well under 2 ms in all on 2 cores',
        });
      }
    }
  } finally {
    await floor.stop();
    await prism?.stop();
  }
}

/** The section's requests, `vmId` the instance GET one asks for. */
function figuresFor(vmId: string, listSize: number): Figure[] {
  return [
    { name: 'GET one instance', goal: '≥ 0.8× floor', method: 'GET', orgPath: `/compute/vms/${vmId}` },
    { name: `GET list of ${listSize} instances`, goal: '≥ 0.8× floor', method: 'GET', orgPath: `/compute/vms?limit=${listSize}` },
    { name: 'GET /billing', goal: '≥ 0.8× floor', method: 'GET', orgPath: '/billing' },
    {
      name: 'POST /api-tokens (Idempotency-Key, write + audit)',
      goal: '≥ 1,000/s',
      method: 'POST',
      orgPath: '/api-tokens',
      body: { name: 'bench', scopes: ['read'] },
      freshIdempotencyKey: true,
    },
  ];
}

/** Seeds `count` instances and answers the id of the first one listed. */
async function seededInstance(api: Api, count: number): Promise<string> {
  await seedInstances(api, count);
  const vmList = JSON.parse((await call(api, 'GET', `/compute/vms?limit=${count}`)).text) as { items: Array<{ id: string }> };
  return vmList.items[0]!.id;
}

/** `count` instances created through the API, and their creations finished. */
async function seedInstances(api: Api, count: number): Promise<void> {
  await inParallel(count, 8, async (index) => {
    const created = await call(api, 'POST', '/compute/vms', vmRequest(`bench-${index}`));
    if (created.status !== 202) throw new Error(`createVm: ${created.status} ${created.text}`);
  });
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const queued = JSON.parse((await call(api, 'GET', '/operations?state=queued&limit=1')).text) as { items: unknown[] };
    const running = JSON.parse((await call(api, 'GET', '/operations?state=running&limit=1')).text) as { items: unknown[] };
    if (queued.items.length === 0 && running.items.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the seeded instances were not created within 2 minutes');
}

/** Rounds of one load as one figure: mean throughput, median of the rounds' p50, the worst round's p99 and p99.9, failures summed. */
function combined(rounds: LoadFigures[]): LoadFigures {
  const p50s = rounds.map((figures) => figures.p50).sort((a, b) => a - b);
  return {
    rps: rounds.reduce((sum, figures) => sum + figures.rps, 0) / rounds.length,
    p50: p50s[Math.floor(p50s.length / 2)]!,
    p99: Math.max(...rounds.map((figures) => figures.p99)),
    p999: Math.max(...rounds.map((figures) => figures.p999)),
    failures: rounds.reduce((sum, figures) => sum + figures.failures, 0),
    sent: rounds.reduce((sum, figures) => sum + figures.sent, 0),
  };
}
