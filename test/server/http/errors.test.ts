// Every error path answers an RFC 9457 problem document with a stable code and the request id.
import { createRateLimits } from '../../../server/http/rate-limit.ts';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../../../server/app.ts';
import { IdentityResolver } from '../../../server/areas/identity/credentials/identity-resolver.ts';
import { PermanentBackendError, TransientBackendError } from '../../../server/drivers/errors.ts';
import { createLogger } from '../../../server/logging.ts';
import { call, startTestServer, type ApiResponse, type TestServer } from '../../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT: '100000' });
});
afterAll(() => server?.close());

function expectProblem(response: ApiResponse, status: number, code: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.body).toMatchObject({ status, code, type: `https://docs.cloudplatform.dev/errors/${code}` });
  expect(response.body.title).toEqual(expect.any(String));
  expect(response.body.detail).toEqual(expect.any(String));
  expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(response.headers.get(header)).toMatch(/^\d+$/);
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
}

describe('problem documents', () => {
  test('an unknown route is 404 not_found', async () => {
    expectProblem(await server.org.call('GET', '/no-such-thing'), 404, 'not_found');
    expectProblem(await call(server.url, 'GET', '/v2/anything'), 404, 'not_found');
  });

  test('a method the path does not allow is 405 with Allow', async () => {
    const response = await server.org.call('PATCH', '/billing', { body: {} });
    expectProblem(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toBe('GET, PUT');
  });

  test('a missing or invalid credential is 401 with WWW-Authenticate', async () => {
    const missing = await server.org.call('GET', '/billing', { key: null });
    expectProblem(missing, 401, 'unauthenticated');
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expectProblem(await server.org.call('GET', '/billing', { key: 'cpk_' + 'x'.repeat(43) }), 401, 'unauthenticated');
    expectProblem(await server.org.call('GET', '/billing', { key: 'not-a-key' }), 401, 'unauthenticated');
    expectProblem(
      await server.org.call('GET', '/billing', { headers: { Authorization: 'Basic dXNlcjpwYXNz' }, key: null }),
      401,
      'unauthenticated',
    );
  });

  test('malformed JSON is 400 malformed_json, and says where', async () => {
    const response = await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 100' });
    expectProblem(response, 400, 'malformed_json');
    expect(response.body.detail).toMatch(/position|end/i);
    expectProblem(
      await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 1, "spend_budget_cents": 2}' }),
      400,
      'malformed_json',
    );
  });

  test('a body that is not JSON is 415', async () => {
    const response = await server.org.call('PUT', '/billing', {
      rawBody: 'spend_budget_cents=100',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectProblem(response, 415, 'unsupported_media_type');
  });

  test('a body over 1 MiB is 413', async () => {
    const response = await server.org.call('POST', '/api-tokens', { rawBody: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }) });
    expectProblem(response, 413, 'payload_too_large');
  });

  test('validation failures name every failing field with a JSON Pointer', async () => {
    const body = await server.org.call('POST', '/api-tokens', { body: { name: '', scopes: ['admin'], color: 'red' } });
    expectProblem(body, 400, 'validation_failed');
    const pointers = body.body.errors.map((error: { pointer: string }) => error.pointer);
    expect(pointers).toEqual(expect.arrayContaining(['/name', '/scopes/0']));
    expect(body.body.errors.some((error: { detail: string }) => /additional|unknown/i.test(error.detail))).toBe(true);

    const query = await server.org.call('GET', '/invoices?limit=0');
    expectProblem(query, 400, 'validation_failed');
    expect(query.body.errors).toEqual([expect.objectContaining({ pointer: '/query/limit' })]);

    const unknownQuery = await server.org.call('GET', '/invoices?colour=red');
    expectProblem(unknownQuery, 400, 'validation_failed');
    expect(unknownQuery.body.errors[0].pointer).toBe('/query/colour');

    const path = await server.org.call('GET', '/operations/not-a-uuid');
    expectProblem(path, 400, 'validation_failed');
    expect(path.body.errors[0].pointer).toBe('/path/operation_id');

    const header = await server.org.call('POST', '/api-tokens', { body: { name: 'k' }, headers: { 'Idempotency-Key': 'has spaces' } });
    expectProblem(header, 400, 'validation_failed');
    expect(header.body.errors[0].pointer.toLowerCase()).toBe('/header/idempotency-key');
  });

  test("every request of an operation is checked against the contract, not only the operation's first", async () => {
    // The server keeps the validator's lookup of an operation from its first request (validation.ts):
    // what changes from one request to the next (path parameters, query) must still be checked.
    for (const [accepted, status, refused, pointer] of [
      ['/operations/00000000-0000-4000-8000-000000000000', 404, '/operations/not-a-uuid', '/path/operation_id'],
      ['/invoices?limit=5', 200, '/invoices?limit=0', '/query/limit'],
    ] as const) {
      expect((await server.org.call('GET', accepted)).status).toBe(status);
      const refusal = await server.org.call('GET', refused);
      expectProblem(refusal, 400, 'validation_failed');
      expect(refusal.body.errors[0].pointer).toBe(pointer);
      // And a valid request after a refused one is served as before.
      expect((await server.org.call('GET', accepted)).status).toBe(status);
    }
  });

  test('a cursor the list did not issue is 400 invalid_cursor', async () => {
    expectProblem(await server.org.call('GET', '/invoices?cursor=bm90LWEtY3Vyc29y'), 400, 'invalid_cursor');
    const apiTokens = await server.org.call('GET', '/api-tokens?limit=1');
    const otherList = (await server.org.call('GET', '/invoices?limit=1')).body.next_cursor;
    expectProblem(await server.org.call('GET', `/api-tokens?cursor=${otherList}`), 400, 'invalid_cursor');
    expect(apiTokens.status).toBe(200);
  });

  test("the request id is the caller's when well-formed, else one of ours", async () => {
    const mine = await server.org.call('GET', '/billing', { headers: { 'X-Request-Id': 'trace-123.abc_DEF' } });
    expect(mine.headers.get('x-request-id')).toBe('trace-123.abc_DEF');
    const ours = await server.org.call('GET', '/billing', { headers: { 'X-Request-Id': 'not ok!' } });
    expect(ours.headers.get('x-request-id')).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
  });

  test('a CORS preflight is answered without a credential', async () => {
    const response = await fetch(`${server.url}/v1/orgs/${server.org.orgId}/billing`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'PUT',
        'Access-Control-Request-Headers': 'authorization, content-type',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
  });
});

/**
 * The real pipeline on the test database, with every operation answered by `handler`: for
 * failures the real handlers never produce.
 */
async function withScriptedApp(handler: () => Promise<unknown>, use: (url: string) => Promise<void>): Promise<void> {
  const app = createApp({
    config: { validateResponses: true, publicBaseUrl: undefined },
    rateLimits: createRateLimits({ limit: 1000, anonymousLimit: 1000, windowSeconds: 60 }),
    pool: server.pool,
    log: createLogger('silent'),
    identity: new IdentityResolver(server.pool, undefined),
    handlers: new Proxy({}, { get: () => handler }) as never,
    auditNames: {},
    keyHolder: { instance: 1 },
  });
  const listener = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => listener.once('listening', resolve));
  try {
    await use(`http://127.0.0.1:${(listener.address() as AddressInfo).port}`);
  } finally {
    listener.close();
  }
}

describe('an unexpected exception', () => {
  test('is a 500 internal_error with a fixed phrase and nothing internal', async () => {
    const failing = async () => {
      throw new Error('secret internals: password=hunter2 at db.example:5432');
    };
    await withScriptedApp(failing, async (url) => {
      const response = await call(url, 'GET', `/v1/orgs/${server.org.orgId}/billing`, { defaultKey: server.org.ownerKey });
      expectProblem(response, 500, 'internal_error');
      expect(response.body.detail).toBe('An unexpected error occurred. Quote the request id to support.');
      expect(response.text).not.toMatch(/hunter2|internals|5432|stack/i);
    });
  });

  test('a response that breaks the contract is a 500, not the broken body', async () => {
    const leaking = async () => ({ status: 200, body: { state: 'active', leaked_secret: 'cpk_should_never_leave' } });
    await withScriptedApp(leaking, async (url) => {
      const response = await call(url, 'GET', `/v1/orgs/${server.org.orgId}/billing`, { defaultKey: server.org.ownerKey });
      expectProblem(response, 500, 'internal_error');
      expect(response.text).not.toContain('cpk_should_never_leave');
    });
  });
});

describe('the response check', () => {
  test("applies to every response of an operation, not only the operation's first", async () => {
    const answers = [
      { status: 200, body: { state: 'active', leaked_secret: 'cpk_first' } },
      { status: 200, body: { state: 'active', leaked_secret: 'cpk_second' } },
    ];
    let served = 0;
    await withScriptedApp(
      async () => answers[served++],
      async (url) => {
        for (const secret of ['cpk_first', 'cpk_second']) {
          const response = await call(url, 'GET', `/v1/orgs/${server.org.orgId}/billing`, { defaultKey: server.org.ownerKey });
          expectProblem(response, 500, 'internal_error');
          expect(response.text).not.toContain(secret);
        }
      },
    );
  });
});

describe('a backend the request needs fails', () => {
  test('is 503 service_unavailable with Retry-After, and says nothing of the backend', async () => {
    for (const error of [
      new TransientBackendError('object store', 'connection reset by vault-7.internal'),
      new PermanentBackendError('object store', 'HTTP 500 from vault'),
    ]) {
      await withScriptedApp(
        async () => {
          throw error;
        },
        async (url) => {
          const response = await call(url, 'POST', `/v1/orgs/${server.org.orgId}/s3/access-keys`, { defaultKey: server.org.ownerKey });
          expectProblem(response, 503, 'service_unavailable');
          expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(response.text).not.toMatch(/vault|reset|HTTP 500/);
        },
      );
    }
  });
});

describe('security headers', () => {
  const expected = {
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
  };

  test('are on every answer: success, secrets shown once, errors, preflights', async () => {
    const answers = [
      await server.org.call('GET', '/billing'),
      await server.org.call('POST', '/api-tokens', { body: { name: 'shown-once' } }),
      await server.org.call('GET', '/no-such-thing'),
      await server.org.call('GET', '/billing', { key: null }),
      await call(server.url, 'OPTIONS', `/v1/orgs/${server.org.orgId}/billing`, {
        headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'PUT' },
      }),
    ];
    expect(answers[1]!.body.secret).toMatch(/^cpk_/);
    for (const answer of answers) {
      for (const [name, value] of Object.entries(expected)) expect(answer.headers.get(name), `${name} on a ${answer.status}`).toBe(value);
      expect(answer.headers.get('strict-transport-security')).toBeNull();
    }
  });
});
