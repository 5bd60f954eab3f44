// Hostile input: whatever a client sends, the answer is a 4xx problem document that conforms to the
// contract's Problem schema, says nothing internal, and leaves the server answering.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { problemSchemaErrors } from '../../support/problem-schema.ts';
import { rawExchange, rawRequest } from '../../support/raw-http.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { runningVm } from '../areas/compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

function expectProblem(
  response: { status: number; text: string; headers: { get?(name: string): string | null } | Record<string, unknown> },
  status: number,
  code: string,
): any {
  expect(response.status, response.text).toBe(status);
  const body = JSON.parse(response.text);
  expect(body.code, response.text).toBe(code);
  expect(problemSchemaErrors(body), response.text.slice(0, 2000)).toEqual([]);
  expect(response.text).not.toMatch(/stack|Maximum call|TypeError|URIError|SyntaxError|at [\w.]+ \(/);
  return body;
}

const auth = () => ({ Authorization: `Bearer ${server.org.ownerKey}` });
const orgPath = (path: string) => `/v1/orgs/${server.org.orgId}${path}`;

describe('paths', () => {
  test('broken percent-encoding in a path segment is 400 validation_failed naming the parameter, before authentication', async () => {
    const org = expectProblem(await rawRequest(server.url, 'GET', '/v1/orgs/%ZZ'), 400, 'validation_failed');
    expect(org.errors).toEqual([{ pointer: '/path/org', detail: 'is not valid percent-encoded UTF-8' }]);
    const vm = expectProblem(await rawRequest(server.url, 'GET', orgPath('/compute/vms/%E0%A4%A'), auth()), 400, 'validation_failed');
    expect(vm.errors[0].pointer).toBe('/path/vm_id');
    // Percent-encoding that decodes to invalid UTF-8 is refused the same way.
    expectProblem(await rawRequest(server.url, 'DELETE', orgPath('/api-tokens/%C0%AF'), auth()), 400, 'validation_failed');
  });
});

describe('JSON bodies', () => {
  const nested = (depth: number) => `{"name": "deep", "scopes": ${'['.repeat(depth)}${']'.repeat(depth)}}`;

  test(`nesting deeper than 32 levels is 400 malformed_json naming the limit, at any depth`, async () => {
    for (const depth of [33, 2_000, 7_000, 100_000]) {
      const body = expectProblem(await server.org.call('POST', '/api-tokens', { rawBody: nested(depth) }), 400, 'malformed_json');
      expect(body.detail).toMatch(/32 levels/);
    }
  });

  test('nesting up to the limit is parsed and validated as usual', async () => {
    // Depth 32 (the object counts as one level): a schema error, not a parse error.
    const body = expectProblem(await server.org.call('POST', '/api-tokens', { rawBody: nested(31) }), 400, 'validation_failed');
    expect(body.errors.some((error: { pointer: string }) => error.pointer.startsWith('/scopes'))).toBe(true);
  });

  test('brackets inside strings do not count as nesting', async () => {
    const response = await server.org.call('POST', '/api-tokens', {
      rawBody: JSON.stringify({ name: `[{${'['.repeat(90)}`, scopes: ['read'] }),
    });
    expect(response.status, response.text).toBe(201);
  });

  test('deep bodies do not grow the memory of the server', async () => {
    const before = process.memoryUsage().rss;
    await Promise.all(Array.from({ length: 20 }, () => server.org.call('POST', '/api-tokens', { rawBody: nested(1_900) })));
    // The server runs in this process: 20 such bodies used to add ~155 MB.
    expect(process.memoryUsage().rss - before).toBeLessThan(60 * 1024 * 1024);
  });

  test('a body that is not UTF-8 is 400 malformed_json', async () => {
    const bytes = Buffer.concat([Buffer.from('{"name": "'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const body = expectProblem(
      await rawRequest(server.url, 'POST', orgPath('/api-tokens'), { ...auth(), 'Content-Type': 'application/json' }, bytes),
      400,
      'malformed_json',
    );
    expect(body.detail).toMatch(/UTF-8/);
  });

  test('a number that is not an exact integer is refused where an integer is due, never rounded', async () => {
    const vm = await runningVm(server, server.org);
    for (const literal of ['1e-400', '0.99999999999999999999', '1.0000000000000000001', '-1e-330']) {
      const response = await server.org.call('POST', `/compute/vms/${vm.id}/scheduled-actions`, {
        rawBody: `{"kind": "weekly", "day_of_week": ${literal}, "time_of_day": "03:00"}`,
      });
      const body = expectProblem(response, 400, 'validation_failed');
      expect(body.errors[0].pointer, literal).toBe('/day_of_week');
    }
    expectProblem(await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 0.5}' }), 400, 'validation_failed');
    const huge = expectProblem(
      await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 1e400}' }),
      400,
      'validation_failed',
    );
    expect(huge.errors).toEqual([{ pointer: '/spend_budget_cents', detail: 'must be at most 9223372036854775807' }]);
  });

  test('an integer written with a fraction or an exponent is that integer (JSON Schema reads 1.0 as an integer)', async () => {
    const set = await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 25e2}' });
    expect(set.status, set.text).toBe(200);
    expect(set.body.spend_budget_cents).toBe(2500);
    const exact = await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 9223372036854775807.000}' });
    expect(exact.body.spend_budget_cents).toBe(9223372036854775807n);
  });

  test('a PUT or POST whose body is required but missing is 400 validation_failed on the whole body, not 415', async () => {
    for (const [method, path] of [
      ['PUT', '/billing'],
      ['POST', '/api-tokens'],
      ['PUT', '/s3/quota'],
    ] as const) {
      const body = expectProblem(await rawRequest(server.url, method, orgPath(path), auth()), 400, 'validation_failed');
      expect(body.errors).toEqual([{ pointer: '', detail: 'a JSON body is required' }]);
    }
    // An empty body with a JSON content type is missing too.
    expectProblem(
      await rawRequest(server.url, 'PUT', orgPath('/billing'), { ...auth(), 'Content-Type': 'application/json' }, ''),
      400,
      'validation_failed',
    );
    // So is an empty chunked body without any content type.
    const chunked = await rawExchange(server.url, [
      [
        `PUT ${orgPath('/billing')} HTTP/1.1`,
        'Host: 127.0.0.1',
        `Authorization: Bearer ${server.org.ownerKey}`,
        'Transfer-Encoding: chunked',
        'Connection: close',
        '',
        '0',
        '',
        '',
      ].join('\r\n'),
    ]);
    expect(chunked.received).toMatch(/^HTTP\/1\.1 400 /);
    expect(chunked.received).toContain('a JSON body is required');
  });

  test('a body sent to an operation that takes none is not read', async () => {
    const response = await rawRequest(
      server.url,
      'GET',
      orgPath('/billing'),
      { ...auth(), 'Content-Type': 'text/plain', 'Content-Length': '15' },
      'anything at all',
    );
    expect(response.status, response.text).toBe(200);
  });
});

describe('query parameters', () => {
  test('a number that is not a finite integer is 400 validation_failed on the parameter', async () => {
    for (const value of ['Infinity', '-Infinity', 'NaN', '1e400', '2.5', '0x10', '']) {
      const body = expectProblem(
        await server.org.call('GET', `/compute/ssh-keys?limit=${encodeURIComponent(value)}`),
        400,
        'validation_failed',
      );
      expect(body.errors[0].pointer, value).toBe('/query/limit');
    }
  });

  test('a forged cursor is 400 invalid_cursor whatever it holds, never a database error', async () => {
    const cursor = (key: unknown, id = '00000000-0000-4000-8000-000000000000') =>
      Buffer.from(JSON.stringify(['api-tokens', key, id])).toString('base64url');
    for (const key of [
      '0',
      '1',
      '2026-02-30T00:00:00Z',
      '+275760-09-13T00:00:00.000Z',
      '0000-01-01T00:00:00Z',
      '2026-01-01',
      'Tue, 01 Jan 2026 00:00:00 GMT',
    ]) {
      expectProblem(await server.org.call('GET', `/api-tokens?cursor=${cursor(key)}`), 400, 'invalid_cursor');
    }
    // A well-formed position is still accepted.
    expect((await server.org.call('GET', `/api-tokens?cursor=${cursor('2026-01-01T00:00:00.000000Z')}`)).status).toBe(200);
  });

  test('a date-time outside what the database can hold is 400 validation_failed, not a 500', async () => {
    for (const value of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:60Z', '294277-01-01T00:00:00Z', '-000001-01-01T00:00:00Z']) {
      const response = await server.org.call('GET', `/audit-events?until=${encodeURIComponent(value)}`);
      expect(response.status, `${value}: ${response.text}`).toBeLessThan(500);
      if (response.status !== 200) expectProblem(response, 400, 'validation_failed');
    }
  });
});

describe('malformed HTTP', () => {
  test('a request Node cannot parse is answered with a 400 malformed_request problem, not a bare status', async () => {
    const { received } = await rawExchange(server.url, [
      Buffer.concat([Buffer.from(`GET ${orgPath('/billing')}`), Buffer.from([0xe9]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]),
    ]);
    expect(received).toMatch(/^HTTP\/1\.1 400 /);
    expect(received).toMatch(/content-type: application\/problem\+json/i);
    expect(received).toContain('"code":"malformed_request"');
    expect(problemSchemaErrors(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)))).toEqual([]);
  });

  test('a request head above 16 KiB is 431 request_headers_too_large as a problem', async () => {
    const { received } = await rawExchange(server.url, [
      `GET ${orgPath('/billing')} HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]);
    expect(received).toMatch(/^HTTP\/1\.1 431 /);
    expect(received).toMatch(/content-type: application\/problem\+json/i);
    expect(received).toContain('"code":"request_headers_too_large"');
  });
});

describe('problem documents stay within the Problem schema', () => {
  test('tens of thousands of failing fields: 50 listed, the detail says how many', async () => {
    const rawBody = `{"name": "many", "scopes": [${Array.from({ length: 80_000 }, () => '7').join(',')}]}`;
    const response = await server.org.call('POST', '/api-tokens', { rawBody });
    const body = expectProblem(response, 400, 'validation_failed');
    expect(body.errors).toHaveLength(50);
    expect(body.detail).toMatch(/^The request has \d+ invalid fields; errors lists the first 50\.$/);
    expect(response.text.length).toBeLessThan(20_000);
  });

  test('a pointer longer than 512 characters is cut at a segment; control characters are written visibly', async () => {
    const longKey = 'k'.repeat(700);
    const long = expectProblem(
      await server.org.call('PUT', '/billing', { rawBody: `{"spend_budget_cents": 1, "${longKey}": 1}` }),
      400,
      'validation_failed',
    );
    expect(long.errors.every((error: { pointer: string }) => error.pointer.length <= 512)).toBe(true);
    const control = expectProblem(
      await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 1, "a\\u0001b\\u001fc": 1}' }),
      400,
      'validation_failed',
    );
    expect(JSON.stringify(control.errors)).toContain('\\\\u0001');
  });
});

describe('connections', () => {
  test('a body over 1 MiB is 413 with Connection: close, and the client reads the answer', async () => {
    const oversized = Buffer.alloc(3 * 1024 * 1024, 'x');
    const head = [
      `POST ${orgPath('/api-tokens')} HTTP/1.1`,
      `Host: 127.0.0.1`,
      `Authorization: Bearer ${server.org.ownerKey}`,
      'Content-Type: application/json',
      `Content-Length: ${oversized.length}`,
      '',
      '',
    ].join('\r\n');
    const { received, closedByServer } = await rawExchange(server.url, [head, oversized]);
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received).toMatch(/\r\nconnection: close\r\n/i);
    expect(received).toMatch(/"code":"payload_too_large"/);
    expect(closedByServer).toBe(true);
  });

  test('after a 413 the server answers a new connection', async () => {
    // Served, not reset. (How soon depends on the machine, and is not timed.)
    const response = await rawRequest(server.url, 'GET', orgPath('/billing'), auth());
    expect(response.status).toBe(200);
  });
});
