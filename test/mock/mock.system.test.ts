// The Prism mock that front-end teams work against: `npm run mock` serves the contract's
// examples, lets a caller choose them with `Prefer`, and refuses invalid requests (as the server
// does, request for request: parity.system.test.ts).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadBundle } from '../support/contract.ts';
import { createServer } from 'node:net';
import { eventually } from '../support/eventually.ts';
import {
  commandLineOf,
  descendantsOf,
  freePort,
  isRunning,
  npmScriptCommand,
  startMock,
  startProcess,
  waitForHttp,
  type Started,
} from '../support/processes.ts';

const org = '3f6c1a2e-9b4d-4c7a-8e21-5d0b7f9a1c34';
const auth = { Authorization: 'Bearer cpk_3Ol_Svxj8s6AJH9dF10S5Aq_qj3r9CwRP2hDPHeY4P8' };
const examples = (loadBundle().components as unknown as { examples: Record<string, { value: unknown }> }).examples;

let mock: Started;
let base: string;

beforeAll(async () => {
  const started = await startMock(`/v1/orgs/${org}`);
  mock = started.mock;
  base = `${started.baseUrl}/v1/orgs/${org}`;
});

afterAll(() => mock?.stop());

describe('the mock', () => {
  test('answers a read with the example of the contract', async () => {
    const response = await fetch(`${base}/billing`, { headers: auth });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(await response.json()).toEqual(examples.billing!.value);
  });

  test('serves the example a caller names with Prefer: example=', async () => {
    const response = await fetch(`${base}/billing`, {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json', Prefer: 'example=billing_no_budget' },
      body: '{"spend_budget_cents": null}',
    });
    expect(response.status).toBe(200);
    expect((await response.json()).spend_budget_cents).toBeNull();
  });

  test('serves an error example with Prefer: code=', async () => {
    const response = await fetch(`${base}/operations/c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51/cancel`, {
      method: 'POST',
      headers: { ...auth, Prefer: 'code=409' },
    });
    expect(response.status).toBe(409);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({ status: 409, code: 'operation_not_cancellable' });
  });

  test('serves lists with their cursor', async () => {
    const response = await fetch(`${base}/invoices?limit=3`, { headers: auth });
    expect(response.status).toBe(200);
    const page = await response.json();
    expect(page.items).toHaveLength(3);
    expect(page.next_cursor).toEqual(expect.any(String));
  });

  test("follows a list's next_cursor to its last page, and refuses a cursor another list handed out, as the server does", async () => {
    const { next_cursor } = examples.invoices_page!.value as { next_cursor: string };
    const nextPage = await fetch(`${base}/invoices?cursor=${next_cursor}`, { headers: auth });
    expect(nextPage.status).toBe(200);
    // It is the last page: a client paging to the end gets there.
    expect(((await nextPage.json()) as { next_cursor: unknown }).next_cursor).toBeNull();
    const otherList = await fetch(`${base}/operations?cursor=${next_cursor}`, { headers: auth });
    expect(otherList.status).toBe(400);
    expect(await otherList.json()).toMatchObject({ code: 'invalid_cursor', errors: [{ pointer: '/query/cursor' }] });
  });

  test('gives every answer a fresh request id, in X-Request-Id and in a problem', async () => {
    const reads = await Promise.all([1, 2, 3].map(() => fetch(`${base}/billing`, { headers: auth })));
    const ids = reads.map((read) => read.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
    expect(new Set(ids).size).toBe(3);

    // An example problem Prism serves names this request, not the example's.
    const refused = await fetch(`${base}/operations/c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51/cancel`, {
      method: 'POST',
      headers: { ...auth, Prefer: 'code=409' },
    });
    const problem = await refused.json();
    expect(problem.request_id).toBe(refused.headers.get('x-request-id'));
    expect(ids).not.toContain(problem.request_id);
  });

  test('ends every JSON answer with a newline, counted in Content-Length', async () => {
    const answers = [
      await fetch(`${base}/billing`, { headers: auth }),
      await fetch(`${base}/compute/vms/b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20`, {
        method: 'DELETE',
        headers: { ...auth, Prefer: 'code=409' },
      }),
      await fetch(`${base}/compute/volumes`, { headers: auth }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 409, 404]);
    for (const answer of answers) {
      const text = await answer.text();
      expect(text).toMatch(/}\n$/);
      expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    }
  });

  test('refuses a request without a credential', async () => {
    const response = await fetch(`${base}/billing`);
    expect(response.status).toBe(401);
    expect((await response.json()).code).toBe('unauthenticated');
  });

  test('refuses a body that breaks the contract, with a problem document', async () => {
    const response = await fetch(`${base}/billing`, {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: '{"spend_budget_cents": "100"}',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = await response.json();
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors).toEqual([expect.objectContaining({ pointer: '/spend_budget_cents' })]);
  });

  test('answers an invalid POST with 400 validation_failed naming the field, as the server does', async () => {
    const response = await fetch(`${base}/api-tokens`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(101) }),
    });
    expect(response.status).toBe(400);
    const problem = await response.json();
    expect(problem.code).toBe('validation_failed');
    expect(new Set(problem.errors.map((error: { pointer: string }) => error.pointer))).toEqual(new Set(['/name']));
  });

  test('still serves a declared 422 when asked for it', async () => {
    const response = await fetch(`${base}/compute/vms`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json', Prefer: 'code=422, example=user_data_unsupported' },
      body: JSON.stringify({
        name: 'web-2',
        image: 'ubuntu-24.04',
        region: 'fra1',
        vcpus: 2,
        memory_mb: 4096,
        disk_gb: 40,
        storage_pool: 'fra1-ssd',
        network_profile: 'fra1-standard',
        user_data: '',
      }),
    });
    expect(response.status).toBe(422);
    expect((await response.json()).code).toBe('user_data_unsupported');
  });

  test('refuses an unknown field and a path parameter that is not a uuid', async () => {
    const unknownField = await fetch(`${base}/billing`, {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: '{"spend_budget_cents": 100, "currency": "eur"}',
    });
    expect(unknownField.status).toBe(400);
    const badId = await fetch(`${base}/operations/not-a-uuid`, { headers: auth });
    expect(badId.status).toBe(400);
  });

  test('accepts the largest budget, 9223372036854775807, as the real server does', async () => {
    const response = await fetch(`${base}/billing`, {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: '{"spend_budget_cents": 9223372036854775807}',
    });
    expect(response.status).toBe(200);
  });
});

describe('Prefer: example= as docs/mock.md says', () => {
  test('an error example alone is served with its own status', async () => {
    const response = await fetch(`${base}/compute/vms/b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20`, {
      method: 'DELETE',
      headers: { ...auth, Prefer: 'example=vm_protected' },
    });
    expect(response.status).toBe(409);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    // The example, naming this answer's request rather than the example's.
    const requestId = response.headers.get('x-request-id');
    expect(await response.json()).toEqual({ ...(examples.vm_protected!.value as object), request_id: requestId });
    expect(requestId).not.toBe((examples.vm_protected!.value as { request_id: string }).request_id);
  });

  test('a name the operation does not have is 400 at /header/Prefer, listing the names it has', async () => {
    const response = await fetch(`${base}/billing`, { headers: { ...auth, Prefer: 'example=vm_protected' } });
    expect(response.status).toBe(400);
    const problem = await response.json();
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors).toEqual([
      {
        pointer: '/header/Prefer',
        detail: expect.stringMatching(/^getBilling has no example named "vm_protected"; its named examples: billing \(200\)/),
      },
    ]);
  });

  test('an operation example is served as the operation asked for, in the state the example names', async () => {
    // op_failed is a bucket creation; asked about web-1's creation, the mock answers with that one, failed.
    const operationId = 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51';
    const response = await fetch(`${base}/operations/${operationId}`, { headers: { ...auth, Prefer: 'example=op_failed' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      ...(examples.op_failed!.value as object),
      id: operationId,
      type: 'vm.create',
      resource_type: 'vm',
      resource_id: 'b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20',
      created_at: '2026-11-20T09:15:00Z',
      // The example's 4 min 10 s, from web-1's creation.
      finished_at: '2026-11-20T09:19:10Z',
      error_detail: 'The compute backend was unavailable after 5 attempts. [vm.create]',
    });
  });

  test("with no Prefer, polling a bucket's creation finds that creation finished", async () => {
    const created = await fetch(`${base}/s3/buckets`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'acme-backups' }),
    });
    expect(created.status).toBe(202);
    const { operation } = await created.json();
    const polled = await (await fetch(`${base}/operations/${operation.id}`, { headers: auth })).json();
    expect(polled).toMatchObject({ id: operation.id, type: 'bucket.create', resource_id: operation.resource_id, state: 'succeeded' });
  });

  test('with no Prefer, polling an operation finds it finished, so a client waiting on it completes', async () => {
    const created = await fetch(`${base}/compute/vms`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        name: 'web-1',
        image: 'ubuntu-24.04',
        region: 'fra1',
        vcpus: 2,
        memory_mb: 4096,
        disk_gb: 40,
        storage_pool: 'fra1-ssd',
        network_profile: 'fra1-standard',
      }),
    });
    expect(created.status).toBe(202);
    const { operation } = await created.json();
    const polled = await (await fetch(`${base}/operations/${operation.id}`, { headers: auth })).json();
    expect(polled).toMatchObject({ id: operation.id, state: 'succeeded', finished_at: expect.any(String) });
  });
});

describe('npm run mock on a busy machine', () => {
  test('starts when the port after its own is taken, and prints only its own address', async () => {
    // Prism once listened on the port after the mock's: a user with something there could not start the mock at all.
    const port = await freePort();
    const neighbour = createServer();
    await new Promise<void>((resolve, reject) => {
      neighbour.once('error', reject);
      neighbour.listen(port + 1, '127.0.0.1', resolve);
    });
    const started = startProcess(...npmScriptCommand('mock', ['--port', String(port)]));
    try {
      await waitForHttp(`http://127.0.0.1:${port}/v1/orgs/${org}/billing`, started);
      const answer = await fetch(`http://127.0.0.1:${port}/v1/orgs/${org}/billing`, { headers: auth });
      expect(answer.status).toBe(200);
      const addresses = new Set(started.output().match(/127\.0\.0\.1:\d+/g));
      expect([...addresses]).toEqual([`127.0.0.1:${port}`]);
    } finally {
      await started.stop();
      neighbour.close();
    }
  });
});

describe('npm run mock ends with what it started', () => {
  /** The Prism process under a started mock. */
  const prismUnder = (mock: Started): number | undefined =>
    descendantsOf(mock.child.pid!).find((pid) => commandLineOf(pid).some((part) => part.endsWith('prism')));

  test.runIf(process.platform === 'linux')('a hang-up of its terminal ends Prism too', async () => {
    const { mock } = await startMock(`/v1/orgs/${org}`);
    try {
      const prism = prismUnder(mock);
      expect(prism, 'Prism under the mock').toBeDefined();
      process.kill(mock.child.pid!, 'SIGHUP');
      await eventually(() => (isRunning(prism!) ? undefined : true), 'Prism to end');
    } finally {
      await mock.stop();
    }
  });

  test.runIf(process.platform === 'linux')('its output closed under it, it ends, and Prism with it', async () => {
    const { mock, baseUrl } = await startMock(`/v1/orgs/${org}`);
    try {
      const prism = prismUnder(mock);
      expect(prism, 'Prism under the mock').toBeDefined();
      // As when the terminal or the program reading it goes: Prism logs the next request, which
      // the mock cannot write.
      mock.child.stdout!.destroy();
      mock.child.stderr!.destroy();
      await eventually(async () => {
        await fetch(`${baseUrl}/v1/orgs/${org}/billing`, { headers: auth }).catch(() => undefined);
        return isRunning(prism!) ? undefined : true;
      }, 'Prism to end');
    } finally {
      await mock.stop();
    }
  });
});
