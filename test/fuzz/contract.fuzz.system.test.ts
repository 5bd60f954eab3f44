// The contract fuzzer in CI: every operation of the contract, valid and mutated requests sent to
// the real server (authenticated as the organization's owner, aimed at real resources), with a
// fixed seed and a bounded number of cases. Every answer must be below 500, declared by the
// contract, a valid problem document or a valid success body, and never a 2xx for a request the
// contract makes invalid; after each operation's batch the server must still answer.
// A larger campaign: npm run fuzz -- --seed N --count M (scripts/fuzz.ts).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Campaign, fuzzingOrder } from '../support/fuzz/campaign.ts';
import type { FuzzTarget } from '../support/fuzz/draft.ts';
import { createFixtures } from '../support/fuzz/fixtures.ts';
import { formatBatch } from '../support/fuzz/report.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const SEED = 20261122;
/** Cases per operation: the whole file stays well under a minute on two cores. */
const CASES_PER_OPERATION = 40;

const campaign = new Campaign();
let server: TestServer;
let target: FuzzTarget;

beforeAll(async () => {
  server = await startTestServer();
  target = await createFixtures(campaign.contract, { baseUrl: server.url, orgId: server.org.orgId, ownerKey: server.org.ownerKey });
});
afterAll(() => server?.close());

for (const operation of fuzzingOrder(campaign.contract.operations)) {
  test(`${operation.operationId}: ${operation.method} ${operation.pathTemplate}`, async () => {
    const batch = await campaign.runBatch(target, operation, { seed: SEED }, 0, CASES_PER_OPERATION);
    expect(batch.failed.length === 0 && batch.unresponsive === undefined, formatBatch(batch, target.ownerKey)).toBe(true);
  });
}
