// `npm run fuzz`: a fuzz campaign over every operation of the contract, larger than the one in
// `npm test` (test/fuzz/contract.fuzz.system.test.ts). Prints a summary of failures grouped by kind,
// each with one exact reproduction, and exits 1 when anything failed.
//
//   npm run fuzz -- [--seed N] [--count M] [--operation ID]…         against a server it starts
//   npm run fuzz -- --seed N --operation ID --case I                  one case, shown in full
//   npm run fuzz -- --url http://127.0.0.1:8080 [--org ID --key KEY]  against a running server
//
// The server it starts is `npm start` on a temporary DATA_DIR (embedded PostgreSQL, simulated
// backends, RATE_LIMIT and RATE_LIMIT_ANONYMOUS at 100000), on a free port. Against --url, the
// organization and its owner's key come from --org/--key, else PLATFORM_ORG_ID/PLATFORM_API_KEY,
// else data/bootstrap.json; the fuzzer creates resources in that organization (an instance, a
// bucket, keys, …).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Campaign, fuzzingOrder, type BatchResult } from '../test/support/fuzz/campaign.ts';
import { createFixtures } from '../test/support/fuzz/fixtures.ts';
import { formatFailure, formatRequest, formatSummary } from '../test/support/fuzz/report.ts';
import { readBootstrap } from './lib/bootstrap-file.ts';
import { startAsNpmStart } from './lib/npm-start.ts';
import { freePort, stopStartedOnSignals, waitForHttp, type Started } from './lib/processes.ts';
import { repoRoot } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    count: { type: 'string', default: '200' },
    operation: { type: 'string', multiple: true },
    case: { type: 'string' },
    url: { type: 'string' },
    org: { type: 'string' },
    key: { type: 'string' },
    timeout: { type: 'string', default: '10000' },
    'server-log': { type: 'string' },
  },
});

const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const count = Number(values.count);
const timeoutMs = Number(values.timeout);
const caseIndex = values.case === undefined ? undefined : Number(values.case);
if (![seed, count, timeoutMs].every(Number.isSafeInteger) || (caseIndex !== undefined && !Number.isSafeInteger(caseIndex))) {
  console.error('--seed, --count, --case and --timeout take integers');
  process.exit(2);
}

/** Cases per liveness check: a server that stops answering is caught close to what stopped it. */
const BATCH = 50;

const campaign = new Campaign();
const known = new Set(campaign.contract.operations.map((operation) => operation.operationId));
for (const name of values.operation ?? []) {
  if (!known.has(name)) {
    console.error(`no operation ${name}; the contract has ${[...known].join(', ')}`);
    process.exit(2);
  }
}
const operations = fuzzingOrder(campaign.contract.operations).filter(
  (operation) => !values.operation || values.operation.includes(operation.operationId),
);

const server = values.url ? await runningServer(values.url) : await startServer();
let failed = false;
try {
  console.log(`seed ${seed}; fuzzing ${server.baseUrl}; creating fixtures…`);
  const target = await createFixtures(campaign.contract, server);
  if (caseIndex !== undefined) {
    for (const operation of operations) {
      const fuzzCase = campaign.generator(target).generate(seed, operation, caseIndex);
      const result = await campaign.runCase(target, fuzzCase, { seed, timeoutMs });
      failed ||= result.failures.length > 0;
      console.log(
        result.failures.length > 0
          ? formatFailure(result, target.ownerKey)
          : `passes: ${fuzzCase.mutation.kind}: ${fuzzCase.mutation.description}\n${formatRequest(fuzzCase.request, target.ownerKey)}`,
      );
      if ('answer' in result.outcome)
        console.log(`→ ${result.outcome.answer.status} ${result.outcome.answer.body.toString('utf8').slice(0, 2000)}`);
    }
  } else {
    const batches: BatchResult[] = [];
    for (const operation of operations) {
      const started = performance.now();
      let failures = 0;
      const validStatuses = new Map<number, number>();
      for (let from = 0; from < count; from += BATCH) {
        const batch = await campaign.runBatch(target, operation, { seed, timeoutMs }, from, Math.min(count, from + BATCH));
        batches.push(batch);
        failures += batch.failed.length;
        for (const [status, times] of batch.statuses.get('valid') ?? [])
          validStatuses.set(status, (validStatuses.get(status) ?? 0) + times);
        if (batch.unresponsive) console.log(`  ${operation.operationId}: the server stopped answering: ${batch.unresponsive}`);
      }
      // What the unchanged requests got: they should mostly succeed, or the mutations never reach a handler.
      const valid = [...validStatuses]
        .sort(([left], [right]) => left - right)
        .map(([status, times]) => `${status}×${times}`)
        .join(' ');
      console.log(
        `  ${operation.operationId.padEnd(24)} ${count} cases, ${String(failures).padStart(4)} failed  (${((performance.now() - started) / 1000).toFixed(1)} s)  valid requests: ${valid}`,
      );
    }
    const summary = formatSummary(batches, target.ownerKey, seed);
    failed = batches.some((batch) => batch.failed.length > 0 || batch.unresponsive);
    console.log(`\n${summary}`);
  }
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);

interface Server {
  baseUrl: string;
  orgId: string;
  ownerKey: string;
  stop(): Promise<void>;
}

async function runningServer(url: string): Promise<Server> {
  const bootstrapFile = path.join(repoRoot, 'data', 'bootstrap.json');
  const bootstrap = existsSync(bootstrapFile)
    ? (JSON.parse(readFileSync(bootstrapFile, 'utf8')) as { org_id?: string; api_key?: string })
    : {};
  const orgId = values.org ?? process.env.PLATFORM_ORG_ID ?? bootstrap.org_id;
  const ownerKey = values.key ?? process.env.PLATFORM_API_KEY ?? bootstrap.api_key;
  if (!orgId || !ownerKey) {
    console.error(
      '--url needs the organization and its owner key: --org and --key, PLATFORM_ORG_ID and PLATFORM_API_KEY, or data/bootstrap.json',
    );
    process.exit(2);
  }
  return { baseUrl: url.replace(/\/$/, ''), orgId, ownerKey, stop: async () => {} };
}

/** `npm start` on a temporary data directory; its bootstrap organization is the fuzzer's. */
async function startServer(): Promise<Server> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-fuzz-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  // As `npm start` runs it: Node itself, no tsx wrapper. tsx relays a signal to its child and,
  // when the child has not said within 30 ms that it got it (a busy machine), kills it outright:
  // a stop without its graceful shutdown.
  const started: Started = startAsNpmStart({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    // Both budgets: every request counts against its address until its credential is verified,
    // and the cases without a valid credential stay there (the anonymous budget, 100 a minute).
    RATE_LIMIT: '100000',
    RATE_LIMIT_ANONYMOUS: '100000',
    LOG_LEVEL: values['server-log'] ? 'error' : 'silent',
    SIM_LATENCY_MS: '5-20',
    WORKER_POLL_MS: '50',
  });
  const cleanUp = () => {
    if (values['server-log']) writeFileSync(values['server-log'], started.output());
    rmSync(dataDir, { recursive: true, force: true });
  };
  const stop = async () => {
    await started.stop();
    cleanUp();
  };
  // A Ctrl-C or a kill of the fuzzer stops the server before the fuzzer goes.
  stopStartedOnSignals(cleanUp);
  try {
    await waitForHttp(`${baseUrl}/v1/orgs/00000000-0000-0000-0000-000000000000`, started);
    const bootstrap = await readBootstrap(dataDir, started);
    return { baseUrl, orgId: bootstrap.org_id, ownerKey: bootstrap.api_key, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
