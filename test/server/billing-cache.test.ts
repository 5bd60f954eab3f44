// GET /billing is answered from each process's cache of the organization's figures: a change must
// still be seen at once in every process sharing the database, whichever process made it through
// the API, and as soon as the database's notice arrives when it is made there directly (the
// metering run writes usage that way, and so would an operator).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOrganization } from '../../server/auth/organizations.ts';
import { withTransaction } from '../../server/db/pool.ts';
import { eventually } from '../support/eventually.ts';
import { call, createTestDatabase, startServerProcess } from '../support/server.ts';

let pool: pg.Pool;
let first: Awaited<ReturnType<typeof startServerProcess>>;
let second: Awaited<ReturnType<typeof startServerProcess>>;
let orgId: string;
let ownerKey: string;

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  first = await startServerProcess(databaseUrl);
  second = await startServerProcess(databaseUrl);
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const org = await withTransaction(pool, (tx) => createOrganization(tx, { name: 'Billing Cache Org', ownerSubject: 'billing-owner' }));
  orgId = org.orgId;
  ownerKey = org.apiKey;
}, 120_000);
afterAll(async () => {
  await first?.stop();
  await second?.stop();
  await pool?.end();
});

type Server = typeof first;

async function billing(server: Server) {
  const response = await call(server.url, 'GET', `/v1/orgs/${orgId}/billing`, { key: ownerKey });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** Both processes have read (and so cached) the figures, twice. */
async function readEverywhere(): Promise<void> {
  for (let read = 0; read < 2; read++) for (const server of [first, second]) await billing(server);
}

const setBudget = async (server: Server, cents: number | null) => {
  const response = await call(server.url, 'PUT', `/v1/orgs/${orgId}/billing`, { key: ownerKey, body: { spend_budget_cents: cents } });
  expect(response.status, response.text).toBe(200);
};

describe('the billing figures each process keeps', () => {
  test('a budget set through one process is what both answer at once', async () => {
    for (const [round, writer] of [first, second, first].entries()) {
      await readEverywhere();
      await setBudget(writer, 1_000 + round);
      expect((await billing(second)).spend_budget_cents).toBe(1_000 + round);
      expect((await billing(first)).spend_budget_cents).toBe(1_000 + round);
    }
  });

  test('a budget change answers once every process has forgotten: one stopped for a moment holds the answer until it resumes', async () => {
    await readEverywhere();
    const secondPid = second.child.pid!;
    process.kill(secondPid, 'SIGSTOP');
    let resumed = false;
    const resume = setTimeout(() => {
      resumed = true;
      process.kill(secondPid, 'SIGCONT');
    }, 400);
    try {
      await setBudget(first, 2_500);
      expect(resumed, 'the change answered while the other process could not have forgotten the old budget').toBe(true);
    } finally {
      clearTimeout(resume);
      process.kill(secondPid, 'SIGCONT');
    }
    expect((await billing(second)).spend_budget_cents).toBe(2_500);
  });

  test('usage and an account state written in the database directly are answered by both processes as soon as the notice arrives', async () => {
    await setBudget(first, null);
    await readEverywhere();
    expect((await billing(first)).month_to_date.estimated_cents).toBe(0);
    const month = `${new Date().toISOString().slice(0, 7)}-01`;
    // 10 vCPU-hours at the default 6,000 µEUR are 6 cents.
    await pool.query("INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', 10)", [orgId, month]);
    await pool.query("UPDATE billing_accounts SET state = 'suspended' WHERE org_id = $1", [orgId]);
    // Nothing here waits for the notice (the API's change does): a second is far more than it takes.
    for (const server of [first, second]) {
      await eventually(
        async () => {
          const figures = await billing(server);
          return figures.month_to_date.estimated_cents === 6 && figures.state === 'suspended' ? true : undefined;
        },
        'the new usage and state',
        1_000,
      );
    }
    await pool.query("UPDATE billing_accounts SET state = 'active' WHERE org_id = $1", [orgId]);
    for (const server of [first, second]) {
      await eventually(async () => ((await billing(server)).state === 'active' ? true : undefined), 'the state back', 1_000);
    }
  });
});
