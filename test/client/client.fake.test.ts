// The client against scripted fake fetches: the failures a server cannot be asked for (network
// errors, 503, 429), retries and their bounds, cancellation, multi-page lists, big integers.
import { describe, expect, test, vi } from 'vitest';
import {
  createPlatformClient,
  OperationFailedError,
  parseJson,
  PlatformNetworkError,
  ProblemError,
  type PlatformClientOptions,
  stringifyJson,
} from '../../client/index.ts';
import { exampleOrg, jsonResponse, networkError, problemResponse, scriptedFetch, type Step } from './support.ts';

const fast = { baseDelayMs: 1, maxDelayMs: 5 };

/**
 * Whether `promise` settles once everything already on its way has run (real time, with the
 * client's timers faked and not moved on), and how.
 */
async function settledWithoutTimers(promise: Promise<unknown>): Promise<{ settled: boolean; error?: unknown }> {
  let outcome: { settled: boolean; error?: unknown } = { settled: false };
  void promise.then(
    () => (outcome = { settled: true }),
    (error: unknown) => (outcome = { settled: true, error }),
  );
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
  return outcome;
}
const vm_id = 'b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20';

function fakeClient(steps: Step[], options: Partial<PlatformClientOptions> = {}) {
  const { fetch, sent } = scriptedFetch(...steps);
  const client = createPlatformClient({
    baseUrl: 'http://api.test',
    org: exampleOrg,
    credential: 'cpk_test',
    fetch,
    retry: fast,
    ...options,
  });
  return { client, sent };
}

const operation = (state: string, finished = false) => ({
  id: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51',
  type: 'vm.create',
  resource_type: 'vm',
  resource_id: vm_id,
  state,
  attempt: state === 'queued' ? 0 : 1,
  max_attempts: 5,
  created_at: '2026-11-20T09:15:00Z',
  finished_at: finished ? '2026-11-20T09:15:42Z' : null,
  error_class: state === 'failed' ? 'backend_rejected' : null,
  error_detail: state === 'failed' ? 'The compute backend refused the request. [vm.create]' : null,
});
const accepted = { vm: { id: vm_id }, operation: operation('queued') };
const createBody = {
  name: 'web-1',
  image: 'ubuntu-24.04',
  region: 'fra1',
  vcpus: 2,
  memory_mb: 4096,
  disk_gb: 40,
  storage_pool: 'fra1-ssd',
  network_profile: 'fra1-standard',
};

describe('retries', () => {
  test('a POST is retried after network errors with the same Idempotency-Key and X-Request-Id', async () => {
    const { client, sent } = fakeClient([networkError(), networkError(), jsonResponse(accepted, 202)]);
    await expect(client.call('createVm', { body: createBody })).resolves.toEqual(accepted);
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((request) => request.headers.get('idempotency-key'))).size).toBe(1);
    expect(new Set(sent.map((request) => request.headers.get('x-request-id'))).size).toBe(1);
    expect(sent.every((request) => request.method === 'POST' && request.body === JSON.stringify(createBody))).toBe(true);
  });

  test("a caller's Idempotency-Key is the one sent on every attempt", async () => {
    const { client, sent } = fakeClient([problemResponse(503, 'internal_error'), jsonResponse(accepted, 202)]);
    await client.call('createVm', { body: createBody, headers: { 'Idempotency-Key': 'my-key' } });
    expect(sent.map((request) => request.headers.get('idempotency-key'))).toEqual(['my-key', 'my-key']);
  });

  test('502, 503 and 504 are retried', async () => {
    const { client, sent } = fakeClient([
      new Response('bad gateway', { status: 502 }),
      problemResponse(503, 'internal_error'),
      new Response(null, { status: 504 }),
      jsonResponse({ id: vm_id }),
    ]);
    await expect(client.call('getVm', { path: { vm_id } })).resolves.toEqual({ id: vm_id });
    expect(sent).toHaveLength(4);
  });

  test('429 waits the Retry-After seconds', async () => {
    const { client, sent } = fakeClient([
      problemResponse(429, 'rate_limited', { 'Retry-After': '1' }),
      jsonResponse({ items: [], next_cursor: null }),
    ]);
    const started = Date.now();
    await client.call('listVms');
    expect(sent).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
  });

  test('400, 409 and 500 are not retried', async () => {
    for (const [status, code] of [
      [400, 'validation_failed'],
      [409, 'idempotency_key_in_use'],
      [500, 'internal_error'],
    ] as const) {
      const { client, sent } = fakeClient([problemResponse(status, code), jsonResponse(accepted, 202)]);
      await expect(client.call('createVm', { body: createBody })).rejects.toMatchObject({ status, code });
      expect(sent).toHaveLength(1);
    }
  });

  test('gives up after maxAttempts (default 4) with the last answer', async () => {
    const { client, sent } = fakeClient([problemResponse(503, 'internal_error')]);
    const error = await client.call('getVm', { path: { vm_id } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ status: 503, requestId: 'req_fromProblem' });
    expect(sent).toHaveLength(4);
  });

  test('network errors left after the last attempt are a PlatformNetworkError with the cause', async () => {
    const { client, sent } = fakeClient([networkError()], { retry: { ...fast, maxAttempts: 3 } });
    const error = await client.call('getBilling').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect(error).toMatchObject({ attempts: 3, method: 'GET', requestId: sent[0]!.headers.get('x-request-id') });
    expect((error as PlatformNetworkError).url).toBe(`http://api.test/v1/orgs/${exampleOrg}/billing`);
    expect((error as PlatformNetworkError).cause).toBeInstanceOf(TypeError);
    expect(sent).toHaveLength(3);
  });

  // The client's pauses are fake timers in these two: no pause can end unless the test moves time
  // on, and none does, so an answer that came at all came without waiting out the Retry-After.
  test('gives up when the next pause would go past maxElapsedMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { client, sent } = fakeClient([problemResponse(429, 'rate_limited', { 'Retry-After': '60' }), jsonResponse({})]);
      const outcome = await settledWithoutTimers(client.call('getBilling'));
      expect(outcome).toEqual({ settled: true, error: expect.objectContaining({ status: 429, code: 'rate_limited' }) });
      expect(sent).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  test('an AbortSignal cancels a pending backoff at once, with its reason', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { client, sent } = fakeClient([problemResponse(429, 'rate_limited', { 'Retry-After': '10' }), jsonResponse({})]);
      const controller = new AbortController();
      const reason = new Error('the user gave up');
      const call = client.call('getBilling', { signal: controller.signal });
      // The 429 is answered; the client now pauses for its Retry-After.
      expect(await settledWithoutTimers(call)).toEqual({ settled: false });
      expect(sent).toHaveLength(1);
      controller.abort(reason);
      expect(await settledWithoutTimers(call)).toEqual({ settled: true, error: reason });
      expect(sent).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  test('an aborted signal is not retried as a network error', async () => {
    const controller = new AbortController();
    controller.abort();
    const { client, sent } = fakeClient([jsonResponse({})]);
    await expect(client.call('getBilling', { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(sent.length).toBeLessThanOrEqual(1);
  });
});

describe('errors', () => {
  test('the request id comes from the problem, else the response header, else the one sent', async () => {
    const withHeader = fakeClient([
      new Response(
        JSON.stringify({ type: 'about:blank', title: 'Not found', status: 404, detail: 'No such instance', code: 'not_found' }),
        {
          status: 404,
          headers: { 'Content-Type': 'application/problem+json', 'X-Request-Id': 'req_fromHeader' },
        },
      ),
    ]);
    await expect(withHeader.client.call('getVm', { path: { vm_id } })).rejects.toMatchObject({
      code: 'not_found',
      requestId: 'req_fromHeader',
    });

    const bare = fakeClient([new Response(null, { status: 404 })]);
    const error = (await bare.client.call('getVm', { path: { vm_id } }).catch((caught: unknown) => caught)) as ProblemError;
    expect(error.requestId).toBe(bare.sent[0]!.headers.get('x-request-id'));
    expect(error.requestId).toMatch(/^req_/);
  });

  test('a body that is not a problem document is a ProblemError unexpected_response with the raw response', async () => {
    const { client } = fakeClient(
      [new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway', headers: { 'Content-Type': 'text/html' } })],
      {
        retry: { maxAttempts: 1 },
      },
    );
    const error = (await client.call('getBilling').catch((caught: unknown) => caught)) as ProblemError;
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ status: 502, code: 'unexpected_response', title: 'Bad Gateway', fieldErrors: [] });
    expect(error.detail).toContain('<html>Bad Gateway</html>');
    expect(error.response.status).toBe(502);
    expect(error.response.headers.get('content-type')).toBe('text/html');
  });

  test('a success body that is not JSON is a ProblemError unexpected_response', async () => {
    const { client } = fakeClient([new Response('not json', { status: 200 })]);
    await expect(client.call('getBilling')).rejects.toMatchObject({ status: 200, code: 'unexpected_response' });
  });

  test('field errors of a validation failure', async () => {
    const problem = {
      type: 'https://docs.cloudplatform.dev/errors/validation_failed',
      title: 'Request validation failed',
      status: 400,
      detail: 'The request has 1 invalid field; see errors.',
      code: 'validation_failed',
      request_id: 'req_1',
      errors: [{ pointer: '/spend_budget_cents', detail: 'must be an integer between 1 and 9223372036854775807, or null' }],
    };
    const { client } = fakeClient([jsonResponse(problem, 400)]);
    await expect(client.call('setBillingBudget', { body: { spend_budget_cents: 0 } })).rejects.toMatchObject({
      fieldErrors: problem.errors,
      problem,
    });
  });
});

describe('credentials', () => {
  test('a credential function is asked once per call', async () => {
    let calls = 0;
    const { client, sent } = fakeClient([problemResponse(503, 'internal_error'), jsonResponse({})], {
      credential: async () => `token-${++calls}`,
    });
    await client.call('getBilling');
    expect(sent.map((request) => request.headers.get('authorization'))).toEqual(['Bearer token-1', 'Bearer token-1']);
  });
});

describe('paginate', () => {
  test('follows next_cursor through three pages and stops at null', async () => {
    const pages: Record<string, unknown> = {
      first: { items: [{ id: 'a' }, { id: 'b' }], next_cursor: 'c1' },
      c1: { items: [{ id: 'c' }], next_cursor: 'c2' },
      c2: { items: [{ id: 'd' }], next_cursor: null },
    };
    const { fetch, sent } = scriptedFetch((request) => jsonResponse(pages[new URL(request.url).searchParams.get('cursor') ?? 'first']));
    const client = createPlatformClient({ baseUrl: 'http://api.test', org: exampleOrg, credential: 'cpk_test', fetch });
    const ids: string[] = [];
    for await (const vm of client.paginate('listVms', { query: { state: 'running', limit: 2 } })) ids.push(vm.id);
    expect(ids).toEqual(['a', 'b', 'c', 'd']);
    expect(sent.map((request) => request.url.search)).toEqual([
      '?state=running&limit=2',
      '?state=running&limit=2&cursor=c1',
      '?state=running&limit=2&cursor=c2',
    ]);
  });

  test('an error on a later page rejects the iteration', async () => {
    const { client } = fakeClient([jsonResponse({ items: [{ id: 'a' }], next_cursor: 'bogus' }), problemResponse(400, 'invalid_cursor')]);
    const ids: string[] = [];
    const iterate = async () => {
      for await (const vm of client.paginate('listVms')) ids.push(vm.id);
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'invalid_cursor' });
    expect(ids).toEqual(['a']);
  });
});

describe('waitForOperation', () => {
  test('polls with backoff until finished, calling onProgress on every poll', async () => {
    const { client, sent } = fakeClient([
      jsonResponse(operation('queued')),
      jsonResponse(operation('running')),
      jsonResponse(operation('succeeded', true)),
    ]);
    const states: string[] = [];
    const result = await client.waitForOperation(accepted.operation as never, {
      initialIntervalMs: 10,
      onProgress: (op) => states.push(op.state),
    });
    expect(result.state).toBe('succeeded');
    expect(states).toEqual(['queued', 'running', 'succeeded']);
    expect(sent.every((request) => request.url.pathname.endsWith(`/operations/${accepted.operation.id}`))).toBe(true);
  });

  test('a cancelled operation rejects with OperationFailedError', async () => {
    const { client } = fakeClient([jsonResponse({ ...operation('cancelled', true) })]);
    await expect(client.waitForOperation('c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51')).rejects.toBeInstanceOf(OperationFailedError);
  });

  test('an AbortSignal stops the waiting', async () => {
    const { client } = fakeClient([jsonResponse(operation('running'))]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await expect(client.waitForOperation('c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e51', { signal: controller.signal })).rejects.toThrow('stop');
  });
});

describe('big integers', () => {
  test('integers beyond 2^53-1 are parsed as exact bigints, everything else as numbers', async () => {
    const body = '{"state":"active","spend_budget_cents": 9223372036854775807, "month_to_date": {"estimated_cents": 4215}, "rate": 0.25}';
    const { client } = fakeClient([jsonResponse(body)]);
    const billing = await client.call('getBilling');
    expect(billing.spend_budget_cents).toBe(9223372036854775807n);
    expect(billing.month_to_date.estimated_cents).toBe(4215);
    expect((billing as unknown as { rate: number }).rate).toBe(0.25);
  });

  test('parseJson draws the line at ±(2^53-1)', () => {
    expect(parseJson('[9007199254740991, 9007199254740992, -9007199254740991, -9223372036854775808, 1e3, 1.5, 0]')).toEqual([
      9007199254740991,
      9007199254740992n,
      -9007199254740991,
      -9223372036854775808n,
      1000,
      1.5,
      0,
    ]);
  });

  test('a PUT with a bigint sends its exact digits', async () => {
    const { client, sent } = fakeClient([jsonResponse('{"spend_budget_cents":9223372036854775807}')]);
    const billing = await client.call('setBillingBudget', { body: { spend_budget_cents: 9223372036854775807n } });
    expect(sent[0]!.body).toBe('{"spend_budget_cents":9223372036854775807}');
    expect(billing.spend_budget_cents).toBe(9223372036854775807n);
    expect(stringifyJson({ a: -9223372036854775808n, b: null })).toBe('{"a":-9223372036854775808,"b":null}');
  });
});
