// Group acceptance (server/core/write-groups.ts): creations that arrive together share one
// transaction, and each is still its own request: its answer, its audit event, its operation, its
// Idempotency-Key; one refused (a taken name, the spend budget) inside the group changes nothing
// and fails none of the others.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { monthOf } from '../../../server/areas/billing/metering/usage-ledger.ts';
import { MAX_LEADERS, runGrouped } from '../../../server/core/write-groups.ts';
import { eventually } from '../../support/eventually.ts';
import { startTestServer, type ApiResponse, type TestOrg, type TestServer } from '../../support/server.ts';
import { uniqueName, vmRequest } from '../areas/compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** An organization whose month-to-date spend is past its budget: it may create nothing billable. */
async function overBudget(): Promise<TestOrg> {
  const org = await server.createOrg('Over budget');
  expect((await org.call('PUT', '/billing', { body: { spend_budget_cents: 100 } })).status).toBe(200);
  await server.pool.query(`INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', 100000)`, [
    org.orgId,
    monthOf(new Date()),
  ]);
  return org;
}

/**
 * Runs `send` while the creations' transactions cannot write their audit events: the first ones
 * (as many as a group runs transactions at once) wait on the lock, and the requests sent meanwhile queue behind them, to go as one group once it
 * is released. `keys`: the Idempotency-Keys of the queued requests, claimed before they queue.
 */
async function whileAuditBlocked<T>(keys: string[], firstOnes: () => Promise<unknown>, send: () => Promise<T>): Promise<T> {
  const blocker = await server.pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE audit_events IN SHARE ROW EXCLUSIVE MODE');
    const first = firstOnes();
    await eventually(async () => {
      const { rows } = await server.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE 'INSERT INTO audit_events%'`,
      );
      return rows[0]!.n >= MAX_LEADERS ? true : undefined;
    }, 'the first transactions to wait on the lock');
    const sent = send();
    await eventually(async () => {
      const { rows } = await server.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ANY($1)`, [
        keys,
      ]);
      return rows[0]!.n === keys.length ? true : undefined;
    }, 'every queued request to claim its key');
    await blocker.query('ROLLBACK');
    await first;
    return await sent;
  } finally {
    blocker.release();
  }
}

describe('creations accepted together', () => {
  test('share a transaction, and each is answered, audited, queued and replayed as its own request', async () => {
    const org = await server.createOrg('Grouped');
    const broke = await overBudget();
    const duplicate = uniqueName('twice');
    const requests: Array<{ org: TestOrg; name: string; key: string }> = [
      ...Array.from({ length: 6 }, () => ({ org, name: uniqueName('grouped'), key: randomUUID() })),
      { org, name: duplicate, key: randomUUID() },
      { org: broke, name: uniqueName('refused'), key: randomUUID() },
      { org, name: duplicate, key: randomUUID() },
      { org: broke, name: uniqueName('refused'), key: randomUUID() },
    ];
    const create = (request: (typeof requests)[number]) =>
      request.org.call('POST', '/compute/vms', { body: vmRequest({ name: request.name }), headers: { 'Idempotency-Key': request.key } });
    const answers: ApiResponse[] = await whileAuditBlocked(
      requests.map((request) => request.key),
      () => Promise.all(Array.from({ length: MAX_LEADERS }, () => org.call('POST', '/compute/vms', { body: vmRequest() }))),
      () => Promise.all(requests.map(create)),
    );

    // Each its own answer: the refused ones refused, the others accepted.
    expect(answers.slice(0, 6).map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202, 202]);
    const twice = [answers[6]!, answers[8]!];
    expect(twice.map((answer) => answer.status).sort()).toEqual([202, 409]);
    expect(twice.find((answer) => answer.status === 409)!.body.code).toBe('vm_name_taken');
    for (const refused of [answers[7]!, answers[9]!]) {
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('spend_budget_exceeded');
    }
    const accepted = answers.filter((answer) => answer.status === 202);

    // They shared a transaction (its start time is every row's created_at): the test grouped them.
    const { rows: vms } = await server.pool.query<{ id: string; name: string; created_at: Date }>(
      'SELECT id, name, created_at FROM vms WHERE org_id = ANY($1::uuid[]) AND name = ANY($2::text[])',
      [[org.orgId, broke.orgId], requests.map((request) => request.name)],
    );
    expect(vms).toHaveLength(7);
    expect(new Set(vms.map((vm) => vm.created_at.getTime())).size).toBeLessThan(vms.length);
    // Nothing of the refused ones: no instance, the name taken once.
    expect(vms.filter((vm) => vm.name === duplicate)).toHaveLength(1);
    expect(vms.map((vm) => vm.id).sort()).toEqual(accepted.map((answer) => answer.body.vm.id).sort());

    // One audit event each, with its request's id and operation; the refused ones recorded as failed.
    for (const answer of answers) {
      const { rows } = await server.pool.query<{ result: string; resource_id: string | null; operation_id: string | null }>(
        'SELECT result, resource_id, operation_id FROM audit_events WHERE request_id = $1',
        [answer.headers.get('x-request-id')],
      );
      if (answer.status === 202) {
        expect(rows).toEqual([{ result: 'succeeded', resource_id: answer.body.vm.id, operation_id: answer.body.operation.id }]);
      } else {
        expect(rows.map((row) => row.result)).toEqual(['failed']);
      }
    }
    // One operation each, driven to its end.
    for (const answer of accepted) {
      const { rows } = await server.pool.query<{ id: string }>(`SELECT id FROM operations WHERE resource_id = $1`, [answer.body.vm.id]);
      expect(rows.map((row) => row.id)).toEqual([answer.body.operation.id]);
      expect((await server.waitForOperation(org, answer.body.operation.id)).state).toBe('succeeded');
    }

    // Each key replays its own answer.
    for (const [index, request] of requests.entries()) {
      const replay = await create(request);
      expect(replay.headers.get('idempotent-replayed'), `request ${index}`).toBe('true');
      expect(replay.status).toBe(answers[index]!.status);
      if (replay.status === 202) expect(replay.body).toEqual({ ...answers[index]!.body, operation: replay.body.operation });
      else expect(replay.body.code).toBe(answers[index]!.body.code);
    }
  });

  test('one whose final statement fails (its audit event refused) keeps nothing, and the next in the group runs again and is kept', async () => {
    const org = await server.createOrg('Refused audit');
    await server.pool.query(`CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.after->>'name' = 'audit-refused' THEN RAISE EXCEPTION 'audit refused by the test'; END IF;
        RETURN NEW;
      END $$`);
    await server.pool.query('CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()');
    try {
      const requests = ['before-refused', 'audit-refused', 'after-refused', 'last'].map((name) => ({
        name: `${name}-${uniqueName()}`,
        key: randomUUID(),
      }));
      requests[1]!.name = 'audit-refused';
      const answers = await whileAuditBlocked(
        requests.map((request) => request.key),
        () => Promise.all(Array.from({ length: MAX_LEADERS }, () => org.call('POST', '/compute/vms', { body: vmRequest() }))),
        () =>
          Promise.all(
            requests.map((request) =>
              org.call('POST', '/compute/vms', { body: vmRequest({ name: request.name }), headers: { 'Idempotency-Key': request.key } }),
            ),
          ),
      );
      expect(answers.map((answer) => answer.status)).toEqual([202, 500, 202, 202]);
      const { rows } = await server.pool.query<{ name: string; created_at: Date }>(
        'SELECT name, created_at FROM vms WHERE org_id = $1 AND name = ANY($2::text[]) ORDER BY name',
        [org.orgId, requests.map((request) => request.name)],
      );
      expect(rows.map((row) => row.name).sort()).toEqual([requests[0]!.name, requests[2]!.name, requests[3]!.name].sort());
      // Still one group, the refused one taken out of it.
      expect(new Set(rows.map((row) => row.created_at.getTime())).size).toBe(1);
    } finally {
      await server.pool.query('DROP TRIGGER refuse_audit ON audit_events');
      await server.pool.query('DROP FUNCTION refuse_audit()');
    }
  });

  test('under a burst, every creation is answered once, matches what was kept, and is carried out once', async () => {
    const org = await server.createOrg('Burst');
    const names = Array.from({ length: 60 }, (_, index) => (index % 10 === 9 ? `burst-taken-${index % 3}` : uniqueName('burst')));
    const answers = await Promise.all(names.map((name) => org.call('POST', '/compute/vms', { body: vmRequest({ name }) })));
    const accepted = answers.filter((answer) => answer.status === 202);
    expect(answers.every((answer) => answer.status === 202 || answer.body.code === 'vm_name_taken')).toBe(true);
    // Each of the three repeated names is taken once.
    expect(accepted).toHaveLength(54 + 3);
    const { rows } = await server.pool.query<{ vms: number; operations: number; audited: number }>(
      `SELECT (SELECT count(*)::int FROM vms WHERE org_id = $1) AS vms,
              (SELECT count(*)::int FROM operations WHERE org_id = $1) AS operations,
              (SELECT count(*)::int FROM audit_events WHERE org_id = $1 AND action = 'vm.create' AND result = 'succeeded') AS audited`,
      [org.orgId],
    );
    expect(rows[0]).toEqual({ vms: accepted.length, operations: accepted.length, audited: accepted.length });
    // Driven, each has a server of its own with addresses of its own (the simulated hypervisor
    // makes the servers of attempts started together in one statement).
    for (const answer of accepted) expect((await server.waitForOperation(org, answer.body.operation.id)).state).toBe('succeeded');
    const { rows: servers } = await server.pool.query<{ servers: number; addresses: number }>(
      `SELECT count(*)::int AS servers, count(DISTINCT private_ipv4)::int AS addresses FROM sim_servers
       WHERE server_id IN (SELECT id FROM vms WHERE org_id = $1)`,
      [org.orgId],
    );
    expect(servers[0]).toEqual({ servers: accepted.length, addresses: accepted.length });
  });
});

describe('a change that collides with another group', () => {
  test('is run again alone, as it would have run ungrouped; any other failure is its own answer, as thrown', async () => {
    let attempts = 0;
    const collided = await runGrouped(server.pool, {
      work: async (tx) => {
        attempts++;
        // What PostgreSQL answers two groups creating one name in opposite orders.
        if (attempts === 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
        return (await tx.query<{ answer: number }>('SELECT 42 AS answer')).rows[0]!.answer;
      },
      finalStatements: () => [],
    });
    expect(collided).toBe(42);
    expect(attempts).toBe(2);

    const taken = Object.assign(new Error('duplicate key value'), { code: '23505' });
    const refused = runGrouped(server.pool, {
      work: () => Promise.reject(taken),
      finalStatements: () => [],
    });
    await expect(refused).rejects.toBe(taken);
  });
});
