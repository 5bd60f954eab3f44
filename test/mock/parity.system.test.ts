// The mock refuses a bad request exactly as the server does (issue 30): a front end that maps a
// problem's `errors[].pointer` to form fields, or branches on `code`, must not break when it moves
// from the mock to the server. The same bad requests go to the real server (in-process, on
// PostgreSQL) and to `npm run mock` (Prism behind the project's proxy), and their answers are
// compared field by field. Each side calls its own organization with its own credential: the
// server an owner's API key, the mock any Bearer credential (README, "The mock").
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMock, type Started } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const mockOrg = '3f6c1a2e-9b4d-4c7a-8e21-5d0b7f9a1c34';
const vm = 'b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20';
const bucket = '2c4e6a8b-0d2f-4a4c-8e6a-0b2d4f6a8c18';
const publicIp = '7e9a1c3d-5f7b-4d9f-a1c3-5e7a9c1d3f84';

interface BadRequest {
  method: string;
  /** Under /v1/orgs/{org}, unless it starts with `!` (then the rest is the whole path). */
  path: string;
  /** A body sent as JSON (with Content-Type: application/json). */
  json?: unknown;
  /** A body sent as it is. */
  body?: string | Uint8Array<ArrayBuffer>;
  headers?: Record<string, string>;
  /** The Authorization header sent to both, instead of each side's valid credential; null: none. */
  authorization?: string | null;
}

const validVm = {
  name: 'web-2',
  image: 'ubuntu-24.04',
  region: 'fra1',
  vcpus: 2,
  memory_mb: 4096,
  disk_gb: 40,
  storage_pool: 'fra1-ssd',
  network_profile: 'fra1-standard',
};
const { image: _image, ...vmWithoutImage } = validVm;
const json = { 'Content-Type': 'application/json' };
const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const badRequests: Record<string, BadRequest> = {
  // Bodies that break the contract.
  'a body missing one required field': { method: 'POST', path: '/compute/vms', json: vmWithoutImage },
  'an empty object where eight fields are required': { method: 'POST', path: '/compute/vms', json: {} },
  'no body where one is required': { method: 'POST', path: '/compute/vms', headers: json },
  'a string where a name is due': { method: 'POST', path: '/compute/vms', json: { ...validVm, name: 42 } },
  'a name that breaks its pattern': { method: 'POST', path: '/compute/vms', json: { ...validVm, name: 'Not A Valid Name!' } },
  'a name one character too long': { method: 'POST', path: '/compute/vms', json: { ...validVm, name: 'a'.repeat(64) } },
  'an integer below its minimum': { method: 'POST', path: '/compute/vms', json: { ...validVm, vcpus: 0 } },
  'an integer above its maximum': { method: 'POST', path: '/compute/vms', json: { ...validVm, vcpus: 65 } },
  'an integer sent as a string': { method: 'POST', path: '/compute/vms', json: { ...validVm, vcpus: '2' } },
  'a fraction where an integer is due': { method: 'POST', path: '/compute/vms', json: { ...validVm, memory_mb: 4096.5 } },
  'an integer beyond int64': { method: 'PUT', path: '/billing', body: '{"spend_budget_cents": 9223372036854775808}', headers: json },
  'a literal no double can hold': { method: 'PUT', path: '/billing', body: '{"spend_budget_cents": 1e-400}', headers: json },
  'a budget of 0': { method: 'PUT', path: '/billing', json: { spend_budget_cents: 0 } },
  'a budget sent as a string': { method: 'PUT', path: '/billing', json: { spend_budget_cents: '100' } },
  'a budget missing': { method: 'PUT', path: '/billing', json: {} },
  'a value outside its enum': { method: 'POST', path: '/compute/vms', json: { ...validVm, workload_type: 'gpu' } },
  'an unknown field': { method: 'PUT', path: '/billing', json: { spend_budget_cents: 100, currency: 'eur' } },
  'several failing fields at once': { method: 'POST', path: '/compute/vms', json: { ...validVm, name: '', vcpus: 0, colour: 'red' } },
  'a label key with a colon': { method: 'POST', path: '/compute/vms', json: { ...validVm, labels: { 'a:b': 'c' } } },
  'too many labels': {
    method: 'POST',
    path: '/compute/vms',
    json: { ...validVm, labels: Object.fromEntries(Array.from({ length: 33 }, (_, index) => [`k${index}`, 'v'])) },
  },
  'the same SSH key twice': { method: 'POST', path: '/compute/vms', json: { ...validVm, ssh_keys: ['alice', 'alice'] } },
  'a string where a list is due': { method: 'POST', path: '/compute/vms', json: { ...validVm, ssh_keys: 'alice' } },
  'user data over 64 KiB': { method: 'POST', path: '/compute/vms', json: { ...validVm, user_data: 'x'.repeat(65_537) } },
  'a list where an object is due': { method: 'POST', path: '/compute/vms', json: [] },
  'a JSON string where an object is due': { method: 'PUT', path: '/billing', json: 'budget' },
  'null where an object is due': { method: 'PUT', path: '/billing', body: 'null', headers: json },
  'a quota below its minimum': { method: 'PUT', path: '/s3/quota', json: { hard_bytes: 1024 } },
  'a negative bucket quota': { method: 'PUT', path: `/s3/buckets/${bucket}/quota`, json: { max_objects: -1 } },
  'a bucket name too short': { method: 'POST', path: '/s3/buckets', json: { name: 'ab' } },
  'a boolean sent as a string': { method: 'POST', path: '/s3/buckets', json: { name: 'photos', versioning: 'yes' } },
  'a scope outside its enum': { method: 'POST', path: '/api-tokens', json: { name: 'ci', scopes: ['admin'] } },
  'no scope in a list that needs one': { method: 'POST', path: '/api-tokens', json: { name: 'ci', scopes: [] } },
  'a date-time in words': { method: 'POST', path: '/api-tokens', json: { name: 'ci', expires_at: 'tomorrow' } },
  'a date-time of 30 February': { method: 'POST', path: '/api-tokens', json: { name: 'ci', expires_at: '2027-02-30T00:00:00Z' } },
  'a control character in a name': { method: 'POST', path: '/api-tokens', json: { name: 'a\u0001b' } },
  'a schedule of an unknown kind': { method: 'POST', path: `/compute/vms/${vm}/scheduled-actions`, json: { kind: 'daily' } },
  'a time of day at 25:00': {
    method: 'POST',
    path: `/compute/vms/${vm}/scheduled-actions`,
    json: { kind: 'weekly', day_of_week: 0, time_of_day: '25:00' },
  },
  'a protection flag sent as a string': { method: 'PUT', path: `/compute/vms/${vm}/protection`, json: { protected: 'true' } },
  'a firewall rule of an unknown protocol': {
    method: 'PUT',
    path: `/compute/vms/${vm}/firewall`,
    json: { inbound: [{ protocol: 'sctp', ports: '22', sources: ['0.0.0.0/0'] }] },
  },
  'a uuid field that is not a uuid': { method: 'POST', path: `/compute/public-ips/${publicIp}/associate`, json: { vm_id: 'web-1' } },
  'a resize missing two of its fields': { method: 'POST', path: `/compute/vms/${vm}/resize`, json: { vcpus: 2 } },
  'an empty image id': { method: 'POST', path: `/compute/vms/${vm}/rebuild`, json: { image_id: '' } },
  'an SSH key that is not one': { method: 'POST', path: '/compute/ssh-keys', json: { name: 'alice', public_key: 'ssh-dss AAAA' } },

  // Bodies that are not JSON the API reads.
  'malformed JSON': { method: 'PUT', path: '/billing', body: '{"spend_budget_cents": 1,', headers: json },
  'a form body labelled JSON': { method: 'POST', path: '/compute/vms', body: 'name=web-2&image=ubuntu-24.04', headers: json },
  'a key given twice': { method: 'PUT', path: '/billing', body: '{"spend_budget_cents": 1, "spend_budget_cents": 2}', headers: json },
  'JSON nested 33 levels deep': { method: 'PUT', path: '/billing', body: nested(33), headers: json },
  'bytes that are not UTF-8': {
    method: 'PUT',
    path: '/billing',
    body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    headers: json,
  },
  'a body in text/plain': { method: 'PUT', path: '/billing', body: '{"spend_budget_cents": 1}', headers: { 'Content-Type': 'text/plain' } },
  'a body over 1 MiB': {
    method: 'POST',
    path: '/api-tokens',
    body: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 1) }),
    headers: json,
  },

  // Path parameters.
  'an instance id that is not a uuid': { method: 'GET', path: '/compute/vms/web-1' },
  'an operation id that is not a uuid': { method: 'POST', path: '/operations/1234/cancel' },
  'an invoice id that breaks its pattern': { method: 'GET', path: '/invoices/inv-2026-10' },
  'an id with broken percent-encoding': { method: 'GET', path: '/compute/vms/%ZZ' },

  // Query parameters.
  'a limit of 0': { method: 'GET', path: '/compute/vms?limit=0' },
  'a limit above 200': { method: 'GET', path: '/invoices?limit=201' },
  'a limit in words': { method: 'GET', path: '/api-tokens?limit=ten' },
  'a limit in exponent notation': { method: 'GET', path: '/api-tokens?limit=1e2' },
  'a limit in hexadecimal': { method: 'GET', path: '/operations?limit=0x10' },
  'an empty limit': { method: 'GET', path: '/operations?limit=' },
  'an unknown query parameter': { method: 'GET', path: '/compute/vms?colour=red' },
  'a state outside its enum': { method: 'GET', path: '/compute/vms?state=sleeping' },
  'a label filter without a colon': { method: 'GET', path: '/compute/vms?label=production' },
  'a cursor with characters a cursor never has': { method: 'GET', path: '/operations?cursor=not%20a%20cursor' },
  'a cursor longer than 512 characters': { method: 'GET', path: `/api-tokens?cursor=${'a'.repeat(513)}` },
  'a cursor the list did not issue': { method: 'GET', path: '/invoices?cursor=bm90LWEtY3Vyc29y' },
  'a cursor that decodes to something else': {
    method: 'GET',
    path: `/operations?cursor=${Buffer.from('["operations","yesterday","x"]').toString('base64url')}`,
  },
  'a required query parameter missing': { method: 'GET', path: '/compute/images' },
  'a region that breaks its pattern': { method: 'GET', path: '/compute/images?region=FRA1' },
  'a since that is not a date-time': { method: 'GET', path: '/audit-events?since=yesterday' },
  'a console collected without its operation': { method: 'GET', path: `/compute/vms/${vm}/console` },

  // Headers.
  'an Idempotency-Key too long': { method: 'POST', path: `/compute/vms/${vm}/start`, headers: { 'Idempotency-Key': 'k'.repeat(256) } },
  'an Idempotency-Key with a space': { method: 'POST', path: `/compute/vms/${vm}/reboot`, headers: { 'Idempotency-Key': 'a b' } },

  // Routes and methods.
  'an unknown path': { method: 'GET', path: '/compute/volumes' },
  'a path outside /v1': { method: 'GET', path: '!/v2/orgs' },
  'a method the path does not take': { method: 'PATCH', path: '/billing' },
  'DELETE on a path that only reads and writes': { method: 'DELETE', path: '/billing' },
  'PUT on a collection': { method: 'PUT', path: '/compute/vms', json: validVm },

  // Credentials (checked after the route, before the body).
  'no credential': { method: 'GET', path: '/billing', authorization: null },
  'a Basic credential': { method: 'GET', path: '/billing', authorization: 'Basic dXNlcjpwYXNz' },
  'Bearer without a credential': { method: 'GET', path: '/billing', authorization: 'Bearer' },
  'no credential and a malformed body': { method: 'PUT', path: '/billing', body: '{', headers: json, authorization: null },
  'no credential on an unknown path': { method: 'GET', path: '/compute/volumes', authorization: null },
};

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  problem: Record<string, any>;
}

let server: TestServer;
let mock: Started;
let mockUrl: string;

beforeAll(async () => {
  [server, { mock, baseUrl: mockUrl }] = await Promise.all([startTestServer(), startMock(`/v1/orgs/${mockOrg}`)]);
});
afterAll(async () => {
  await Promise.all([mock?.stop(), server?.close()]);
});

async function send(base: string, org: string, credential: string, request: BadRequest): Promise<Answer> {
  const path = request.path.startsWith('!') ? request.path.slice(1) : `/v1/orgs/${org}${request.path}`;
  const authorization = request.authorization === undefined ? `Bearer ${credential}` : request.authorization;
  const headers: Record<string, string> = { ...(authorization === null ? {} : { Authorization: authorization }), ...request.headers };
  let body = request.body;
  if (request.json !== undefined) {
    body = JSON.stringify(request.json);
    headers['Content-Type'] = 'application/json';
  }
  const response = await fetch(`${base}${path}`, { method: request.method, headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, problem: JSON.parse(text) as Record<string, any> };
}

/** What must be the same on both sides: everything but the request id, with each side's organization id written {org}. */
function comparable(answer: Answer, org: string) {
  const { problem } = answer;
  return {
    status: answer.status,
    contentType: answer.headers.get('content-type'),
    allow: answer.headers.get('allow'),
    wwwAuthenticate: answer.headers.get('www-authenticate'),
    type: problem.type,
    code: problem.code,
    title: problem.title,
    problemStatus: problem.status,
    detail: String(problem.detail).replaceAll(org, '{org}'),
    errors: (problem.errors as Array<{ pointer: string; detail: string }> | undefined)?.map(({ pointer, detail }) => ({ pointer, detail })),
  };
}

const mockRequestIds = new Set<string>();

describe('the mock and the server answer the same bad request alike', () => {
  test(`with at least 50 bad requests`, () => {
    expect(Object.keys(badRequests).length).toBeGreaterThanOrEqual(50);
  });

  test.each(Object.entries(badRequests))('%s', async (_name, request) => {
    const [real, mocked] = await Promise.all([
      send(server.url, server.org.orgId, server.org.ownerKey, request),
      send(mockUrl, mockOrg, 'anything', request),
    ]);
    expect(real.status).toBeGreaterThanOrEqual(400);
    expect(comparable(mocked, mockOrg)).toEqual(comparable(real, server.org.orgId));

    for (const answer of [real, mocked]) {
      // One JSON document and one newline, counted in Content-Length.
      expect(answer.text.endsWith('}\n')).toBe(true);
      expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(answer.text)));
      // The request id of the problem is the one of the header, and of the server's form.
      expect(answer.problem.request_id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
      expect(answer.headers.get('x-request-id')).toBe(answer.problem.request_id);
    }
    // A fresh one for every answer of the mock.
    expect(mockRequestIds.has(mocked.problem.request_id)).toBe(false);
    mockRequestIds.add(mocked.problem.request_id);
  });

  test("a caller's X-Request-Id is echoed by both, in the header and the problem", async () => {
    const request: BadRequest = { method: 'GET', path: '/compute/vms/web-1', headers: { 'X-Request-Id': 'trace-4f2a.1' } };
    const [real, mocked] = await Promise.all([
      send(server.url, server.org.orgId, server.org.ownerKey, request),
      send(mockUrl, mockOrg, 'anything', request),
    ]);
    for (const answer of [real, mocked]) {
      expect(answer.headers.get('x-request-id')).toBe('trace-4f2a.1');
      expect(answer.problem.request_id).toBe('trace-4f2a.1');
    }
  });
});
