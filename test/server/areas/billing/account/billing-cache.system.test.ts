// GET /billing is answered from each process's cache of the organization's figures: a change must
// still be seen at once in every process sharing the database, whichever process made it through
// the API, and as soon as the database's notice arrives when it is made there directly (the
// metering run writes usage that way, and so would an operator).
import { describe, expect, test } from 'vitest';
import { eventually } from '../../../../support/eventually.ts';
import { call } from '../../../../support/server.ts';
import { answeredOnlyAfterResume, twoProcessesOnOneDatabase } from '../../../../support/shared-database.ts';

const shared = twoProcessesOnOneDatabase('Billing Cache Org');

type Server = typeof shared.first;

async function billing(server: Server) {
  const response = await call(server.url, 'GET', `/v1/orgs/${shared.orgId}/billing`, { key: shared.ownerKey });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** Both processes have read (and so cached) the figures, twice. */
async function readEverywhere(): Promise<void> {
  for (let read = 0; read < 2; read++) for (const server of [shared.first, shared.second]) await billing(server);
}

const setBudget = async (server: Server, cents: number | null) => {
  const response = await call(server.url, 'PUT', `/v1/orgs/${shared.orgId}/billing`, {
    key: shared.ownerKey,
    body: { spend_budget_cents: cents },
  });
  expect(response.status, response.text).toBe(200);
};

describe('the billing figures each process keeps', () => {
  test('a budget set through one process is what both answer at once', async () => {
    for (const [round, writer] of [shared.first, shared.second, shared.first].entries()) {
      await readEverywhere();
      await setBudget(writer, 1_000 + round);
      expect((await billing(shared.second)).spend_budget_cents).toBe(1_000 + round);
      expect((await billing(shared.first)).spend_budget_cents).toBe(1_000 + round);
    }
  });

  test('a budget change answers once every process has forgotten: one stopped for a moment holds the answer until it resumes', async () => {
    await readEverywhere();
    const heldUntilResumed = await answeredOnlyAfterResume(shared.second.child.pid!, 400, () => setBudget(shared.first, 2_500));
    expect(heldUntilResumed, 'the change answered while the other process could not have forgotten the old budget').toBe(true);
    expect((await billing(shared.second)).spend_budget_cents).toBe(2_500);
  });

  test('usage and an account state written in the database directly are answered by both processes as soon as the notice arrives', async () => {
    await setBudget(shared.first, null);
    await readEverywhere();
    expect((await billing(shared.first)).month_to_date.estimated_cents).toBe(0);
    const month = `${new Date().toISOString().slice(0, 7)}-01`;
    // 10 vCPU-hours at the default 6,000 µEUR are 6 cents.
    await shared.pool.query("INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', 10)", [
      shared.orgId,
      month,
    ]);
    await shared.pool.query("UPDATE billing_accounts SET state = 'suspended' WHERE org_id = $1", [shared.orgId]);
    // Nothing here waits for the notice (the API's change does): a second is far more than it takes.
    for (const server of [shared.first, shared.second]) {
      await eventually(
        async () => {
          const figures = await billing(server);
          return figures.month_to_date.estimated_cents === 6 && figures.state === 'suspended' ? true : undefined;
        },
        'the new usage and state',
        1_000,
      );
    }
    await shared.pool.query("UPDATE billing_accounts SET state = 'active' WHERE org_id = $1", [shared.orgId]);
    for (const server of [shared.first, shared.second]) {
      await eventually(async () => ((await billing(server)).state === 'active' ? true : undefined), 'the state back', 1_000);
    }
  });
});
