// The client against the Prism mock over HTTP: typed calls return the contract's examples, errors
// become ProblemErrors, POSTs carry an Idempotency-Key, and the helpers work end to end.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { OperationFailedError, OperationTimeoutError, ProblemError, type Operation } from '../../client/index.ts';
import { loadBundle } from '../support/contract.ts';
import { clientFor, recordingFetch, startMockTarget, type ApiTarget } from './support.ts';

const examples = (loadBundle().components as unknown as { examples: Record<string, { value: unknown }> }).examples;
const example = (name: string) => examples[name]!.value;
const vm_id = 'b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20';
const operation_id = 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51';
const createVmBody = {
  name: 'web-1',
  image: 'ubuntu-24.04',
  region: 'fra1',
  vcpus: 2,
  memory_mb: 4096,
  disk_gb: 40,
  storage_pool: 'fra1-ssd',
  network_profile: 'fra1-standard',
  ssh_keys: ['alice-laptop'],
  labels: { env: 'production', team: 'web' },
};

let target: ApiTarget;
beforeAll(async () => {
  target = await startMockTarget();
});
afterAll(() => target?.stop());

describe('typed calls', () => {
  test('return the example body of the contract', async () => {
    const client = clientFor(target);
    expect(await client.call('getBilling')).toEqual(example('billing'));
    expect(await client.call('getVm', { path: { vm_id } })).toEqual(example('vm_web1_running'));
    expect(await client.call('listRegions')).toEqual(example('regions_page'));
  });

  test('fill the org path parameter and send query parameters', async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { fetch });
    await client.call('listImages', { query: { region: 'fra1', limit: 20 } });
    expect(sent[0]!.url.pathname).toBe(`/v1/orgs/${target.org}/compute/images`);
    expect(Object.fromEntries(sent[0]!.url.searchParams)).toEqual({ region: 'fra1', limit: '20' });
  });

  test('send the bearer credential and an X-Request-Id on every request', async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { fetch });
    await client.call('getBilling');
    await client.call('getBilling', { headers: { 'X-Request-Id': 'req_mine' } });
    expect(sent[0]!.headers.get('authorization')).toBe(`Bearer ${target.credential}`);
    expect(sent[0]!.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{20}$/);
    expect(sent[1]!.headers.get('x-request-id')).toBe('req_mine');
  });

  test('callWithResponse gives the response headers, such as Idempotent-Replayed', async () => {
    const client = clientFor(target);
    const { data, response } = await client.callWithResponse('cancelOperation', {
      path: { operation_id },
      headers: { Prefer: 'example=op_cancelled' },
    });
    // The mock answers as the operation cancelled (web-1's creation), in the example's state.
    expect(data).toMatchObject({ id: operation_id, type: 'vm.create', resource_id: vm_id, state: 'cancelled' });
    expect(response.status).toBe(200);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
  });

  test('a 204 resolves with undefined', async () => {
    const client = clientFor(target);
    await expect(client.call('deleteSshKey', { path: { ssh_key_id: '9a1c3e5f-7b9d-4f1b-b3d5-7f9b1d3e5a06' } })).resolves.toBeUndefined();
  });

  test('the raw openapi-fetch client is there for anything else', async () => {
    const client = clientFor(target);
    const { data, response } = await client.raw.GET('/v1/orgs/{org}/billing', { params: { path: { org: client.org! } } });
    expect(response.status).toBe(200);
    expect(data).toEqual(example('billing'));
  });
});

describe('errors', () => {
  test('a missing credential is a ProblemError 401 with the request id', async () => {
    const { fetch, sent } = recordingFetch();
    // A token source with nothing to give (an empty credential string is refused when the client is made).
    const client = clientFor(target, { credential: () => '', fetch });
    const error = await client.call('getBilling').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProblemError);
    const requestId = sent[0]!.headers.get('x-request-id');
    expect(error).toMatchObject({ status: 401, code: 'unauthenticated', requestId, fieldErrors: [] });
    expect((error as ProblemError).response.status).toBe(401);
    expect((error as ProblemError).problem.title).toBe('Authentication required');
  });

  test('Prefer: code=409 is a ProblemError with the code to branch on', async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { headers: { Prefer: 'code=409' }, fetch });
    const error = await client.call('cancelOperation', { path: { operation_id } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProblemError);
    // The request id the client sent, which the mock's problem names as the server's does.
    const requestId = sent[0]!.headers.get('x-request-id')!;
    expect(error).toMatchObject({ status: 409, code: 'operation_not_cancellable', title: 'Operation cannot be cancelled', requestId });
    expect((error as Error).message).toMatch(new RegExp(`^409 operation_not_cancellable: .* \\(request ${requestId}\\)$`));
  });

  test('a validation failure carries one fieldError per failing field', async () => {
    const client = clientFor(target);
    const body = { ...createVmBody, name: 'Not A Valid Name!' };
    const error = await client.call('createVm', { body }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 400, code: 'validation_failed' });
    expect((error as ProblemError).fieldErrors).toEqual([expect.objectContaining({ pointer: '/name' })]);
  });
});

describe('idempotency', () => {
  test('every POST carries an automatic Idempotency-Key, a fresh one per call', async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { fetch });
    const accepted = await client.call('createVm', { body: createVmBody });
    await client.call('createVm', { body: createVmBody });
    expect(accepted).toEqual(example('vm_created'));
    const keys = sent.map((request) => request.headers.get('idempotency-key'));
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(keys[1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).not.toBe(keys[0]);
  });

  test("a caller's Idempotency-Key wins; GETs carry none", async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { fetch });
    await client.call('createVm', { body: createVmBody, headers: { 'Idempotency-Key': 'deploy-2026-11-20-web-1' } });
    await client.call('getBilling');
    expect(sent[0]!.headers.get('idempotency-key')).toBe('deploy-2026-11-20-web-1');
    expect(sent[1]!.headers.has('idempotency-key')).toBe(false);
  });
});

describe('waitForOperation', () => {
  test('resolves with the operation once it has succeeded', async () => {
    const client = clientFor(target, { headers: { Prefer: 'example=op_create_succeeded' } });
    const seen: Operation[] = [];
    const operation = await client.waitForOperation(operation_id, { onProgress: (op) => seen.push(op) });
    expect(operation).toEqual(example('op_create_succeeded'));
    expect(seen).toEqual([operation]);
  });

  test('rejects with OperationFailedError when it failed', async () => {
    const client = clientFor(target, { headers: { Prefer: 'example=op_failed' } });
    const error = await client.waitForOperation(operation_id).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OperationFailedError);
    // The operation waited on (web-1's creation) failed, not the example's bucket creation.
    expect(error).toMatchObject({
      state: 'failed',
      errorClass: 'backend_unavailable',
      operation: { id: operation_id, type: 'vm.create', resource_type: 'vm', resource_id: vm_id, state: 'failed' },
    });
    expect((error as OperationFailedError).errorDetail).toBe('The compute backend was unavailable after 5 attempts. [vm.create]');
  });

  test('rejects with OperationTimeoutError when it is still queued after timeoutMs', async () => {
    const client = clientFor(target, { headers: { Prefer: 'example=op_create_queued' } });
    const seen: Operation[] = [];
    const started = Date.now();
    const error = await client
      .waitForOperation(operation_id, { timeoutMs: 1_000, initialIntervalMs: 100, onProgress: (op) => seen.push(op) })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OperationTimeoutError);
    expect(error).toMatchObject({ operationId: operation_id, timeoutMs: 1_000, operation: { state: 'queued' } });
    // Not before timeoutMs. How many polls fit in it depends on how fast the mock answers on this
    // machine; each one was reported, still queued.
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.every((op) => op.state === 'queued')).toBe(true);
  });

  test('the story completes with no special header: create an instance, wait for its operation, read it running', async () => {
    const client = clientFor(target);
    const accepted = await client.call('createVm', { body: createVmBody });
    expect(accepted.operation.state).toBe('queued');
    const operation = await client.waitForOperation(accepted.operation, { timeoutMs: 5_000, initialIntervalMs: 100 });
    expect(operation).toMatchObject({ type: 'vm.create', state: 'succeeded', resource_id: accepted.vm.id });
    expect(await client.call('getVm', { path: { vm_id: accepted.vm.id } })).toMatchObject({ id: accepted.vm.id, state: 'running' });
  });
});

describe('paginate', () => {
  test('yields every item of a list that ends on its first page', async () => {
    const client = clientFor(target);
    const regions = [];
    for await (const region of client.paginate('listRegions')) regions.push(region.id);
    expect(regions).toEqual(['ams1', 'fra1', 'nbg-sc1']);
  });

  test('follows next_cursor (the mock serves the same page forever, so stop after two pages)', async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { fetch });
    const ids: string[] = [];
    for await (const invoice of client.paginate('listInvoices', { query: { limit: 3 } })) {
      ids.push(invoice.id);
      if (ids.length === 6) break;
    }
    const page = example('invoices_page') as { items: { id: string }[]; next_cursor: string };
    expect(ids).toEqual([...page.items, ...page.items].map((item) => item.id));
    expect(sent.map((request) => request.url.searchParams.get('cursor'))).toEqual([null, page.next_cursor]);
    expect(sent.every((request) => request.url.searchParams.get('limit') === '3')).toBe(true);
  });
});

describe('big integers', () => {
  test('a bigint budget is sent as its exact digits, and the mock accepts it', async () => {
    const { fetch, sent } = recordingFetch();
    const client = clientFor(target, { fetch });
    const billing = await client.call('setBillingBudget', { body: { spend_budget_cents: 9223372036854775807n } });
    expect(sent[0]!.body).toBe('{"spend_budget_cents":9223372036854775807}');
    expect(sent[0]!.headers.get('content-type')).toBe('application/json');
    expect(billing).toEqual(example('billing'));
  });
});
