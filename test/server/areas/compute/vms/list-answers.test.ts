// A list of instances, and a read of one, read each row's version and keep the answers of unchanged
// instances (areas/compute/vm-answers.ts): whatever changed an instance, the next read shows it.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { VmAnswers } from '../../../../../server/areas/compute/vms/vm-answers.ts';
import { listVms } from '../../../../../server/areas/compute/vms/vm-rows.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';
import { act, runningVm, type VmOut } from '../fixtures.ts';

let server: TestServer;
let org: TestOrg;
let vms: VmOut[];
beforeAll(async () => {
  // No reconciler pass while the tests run: each pass records a fresh observation of every
  // instance, a new row version, and one landing between a list and its read of the rows makes
  // that read newer than the list (a loaded CI run found it: the lists below then read again).
  server = await startTestServer({ RECONCILE_INTERVAL_MS: '3600000' });
  org = await server.createOrg('Listing Co');
  vms = [];
  for (let index = 0; index < 3; index++) vms.push(await runningVm(server, org));
});
afterAll(() => server?.close());

async function listed(query = ''): Promise<VmOut[]> {
  const response = await org.call('GET', `/compute/vms?limit=10${query}`);
  expect(response.status, response.text).toBe(200);
  return response.body.items;
}

/** An answer without what the reconciler refreshes on its own (observed_at), which may move between two reads. */
const settled = ({ observed_at: _observedAt, ...vm }: VmOut) => vm;

describe('a list of instances', () => {
  test('shows at once a change made in the database directly, as an operator would', async () => {
    await listed();
    await listed();
    await server.pool.query(`UPDATE vms SET labels = '{"tier": "changed"}', name = 'renamed-in-sql' WHERE id = $1`, [vms[1]!.id]);
    const items = await listed();
    expect(items.map((vm) => vm.id)).toEqual(vms.map((vm) => vm.id));
    expect(items[1]).toMatchObject({ name: 'renamed-in-sql', labels: { tier: 'changed' } });
    expect(settled(items[0]!)).toEqual(settled(vms[0]!));
  });

  test("shows an action's effects, and leaves out an instance deleted meanwhile", async () => {
    await listed();
    await act(server, org, 'POST', `/compute/vms/${vms[0]!.id}/stop`);
    const stopped = await listed();
    expect(stopped[0]).toMatchObject({ id: vms[0]!.id, state: 'stopped' });
    expect(settled(stopped[0]!)).toEqual(settled((await org.call('GET', `/compute/vms/${vms[0]!.id}`)).body));

    await server.pool.query('UPDATE vms SET deleted_at = now() WHERE id = $1', [vms[2]!.id]);
    expect((await listed()).map((vm) => vm.id)).toEqual([vms[0]!.id, vms[1]!.id]);
  });

  test('pages and filters as before: each page the instances its cursor names, in order', async () => {
    const all = (await listed()).map(settled);
    const first = await org.call('GET', '/compute/vms?limit=1');
    expect(first.body.items.map(settled)).toEqual([all[0]]);
    const second = await org.call('GET', `/compute/vms?limit=1&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.items.map(settled)).toEqual([all[1]]);
    expect(second.body.next_cursor).toBeNull();
    expect((await listed('&state=stopped')).map(settled)).toEqual([all[0]]);
  });

  test('a read of one instance shows at once a change made in the database directly, and a deleted one is gone', async () => {
    const vm = vms[1]!;
    const read = async () => org.call('GET', `/compute/vms/${vm.id}`);
    expect((await read()).status).toBe(200);
    await server.pool.query(`UPDATE vms SET labels = '{"tier": "read-one"}' WHERE id = $1`, [vm.id]);
    const changed = await read();
    expect(changed.body.labels).toEqual({ tier: 'read-one' });
    expect(settled(changed.body)).toEqual(settled((await listed()).find((item) => item.id === vm.id)!));
    await server.pool.query('UPDATE vms SET deleted_at = now() WHERE id = $1', [vm.id]);
    const gone = await read();
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('not_found');
  });
});

describe('lists that miss the same answers at once', () => {
  /** The pool, with the reads of answers counted as they are asked for, and their answers held while `holding`. */
  function heldReads() {
    const held: Array<() => void> = [];
    const state = { reads: 0, holding: true };
    const db = {
      query: (async (config: pg.QueryConfig, values?: unknown[]) => {
        if (config.name === 'vm_answers_by_id') state.reads++;
        const result = await server.pool.query(config, values);
        if (config.name === 'vm_answers_by_id' && state.holding) await new Promise<void>((resolve) => held.push(resolve));
        return result;
      }) as pg.Pool['query'],
    };
    const release = () => held.splice(0).forEach((resume) => resume());
    return { db, state, release, held };
  }
  const page = async () => (await listVms(server.pool, org.orgId, { labels: [] }, { limit: 10 })).items;

  test('share one read of the rows; one that listed a change made meanwhile reads it itself and shows it', async () => {
    const answers = new VmAnswers();
    const { db, state, release, held } = heldReads();
    const listedBefore = await page();
    const first = answers.of(db, org.orgId, listedBefore);
    // Another list of the same page, unchanged: it waits for the read under way rather than asking for its own.
    const second = answers.of(db, org.orgId, listedBefore);
    expect(state.reads).toBe(1);
    // A change committed after the first read was made, listed by a third: the first read's row is
    // older than what the third listed.
    await vi.waitFor(() => expect(held.length).toBe(1));
    await server.pool.query(`UPDATE vms SET name = 'renamed-meanwhile' WHERE id = $1`, [listedBefore[0]!.id]);
    const listedAfter = await page();
    const third = answers.of(db, org.orgId, listedAfter);
    state.holding = false;
    release();
    const [firstPage, secondPage, thirdPage] = await Promise.all([first, second, third]);
    expect(secondPage).toEqual(firstPage);
    expect(firstPage[0]!.name).not.toBe('renamed-meanwhile');
    expect(thirdPage.map((vm) => vm.id)).toEqual(listedAfter.map((vm) => vm.id));
    expect(thirdPage[0]!.name).toBe('renamed-meanwhile');
    // One read for the first two lists, and one more for the instance the third saw changed.
    expect(state.reads).toBe(2);
  });
});
