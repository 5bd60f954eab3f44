// The typed client against the real server (in-process, real PostgreSQL): the same helpers the
// mock tests exercise, now with real authentication, cursors, idempotency and big integers.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPlatformClient, ProblemError, type PlatformClient } from '../../client/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { clientFor, recordingFetch, type ApiTarget } from './support.ts';

let server: TestServer;
let target: ApiTarget;
let client: PlatformClient;

beforeAll(async () => {
  server = await startTestServer();
  target = { baseUrl: server.url, org: server.org.orgId, credential: server.org.ownerKey, stop: () => server.close() };
  client = clientFor(target);
});
afterAll(() => server?.close());

describe('the client against the server', () => {
  test('a typed call returns the body, with org filled in', async () => {
    const context = await client.call('getOrgContext');
    expect(context.org_id).toBe(server.org.orgId);
    expect(context.name).toBe('Acme Robotics');
  });

  test('without an org, the client learns it from getAccount, once, and every call addresses it', async () => {
    const other = await server.createOrg('Learned Ltd');
    const { fetch, sent } = recordingFetch();
    const learning = createPlatformClient({ baseUrl: server.url, credential: other.ownerKey, fetch });
    expect(learning.org).toBeUndefined();
    const [context, billing] = await Promise.all([learning.call('getOrgContext'), learning.call('getBilling')]);
    expect(context).toMatchObject({ org_id: other.orgId, name: 'Learned Ltd' });
    expect(billing.state).toBeDefined();
    expect(learning.org).toBe(other.orgId);
    await learning.call('listVms');
    expect(sent.map((request) => request.url.pathname)).toEqual([
      '/v1/account',
      `/v1/orgs/${other.orgId}`,
      `/v1/orgs/${other.orgId}/billing`,
      `/v1/orgs/${other.orgId}/compute/vms`,
    ]);
    const account = await learning.call('getAccount');
    expect(account.credential).toMatchObject({ type: 'api_key', name: 'owner key', scopes: ['read', 'write'] });
  });

  test('a missing or relative baseUrl, or no credential, is refused at once with a sentence saying what is due', () => {
    const options = { org: server.org.orgId, credential: server.org.ownerKey };
    expect(() => createPlatformClient({ ...options } as never)).toThrow(
      "createPlatformClient: baseUrl must be the server's absolute http(s) address, such as 'http://127.0.0.1:8080'; got nothing",
    );
    expect(() => createPlatformClient({ ...options, baseUrl: '/v1' })).toThrow(/baseUrl must be .*; got "\/v1"/);
    expect(() => createPlatformClient({ baseUrl: server.url, org: server.org.orgId } as never)).toThrow(/credential must be/);
  });

  test('big integers round-trip exactly: a bigint budget is sent and read back as a bigint', async () => {
    const set = await client.call('setBillingBudget', { body: { spend_budget_cents: 9223372036854775807n } });
    expect(set.spend_budget_cents).toBe(9223372036854775807n);
    expect((await client.call('getBilling')).spend_budget_cents).toBe(9223372036854775807n);
    await client.call('setBillingBudget', { body: { spend_budget_cents: null } });
  });

  test('an error is a ProblemError with code, fieldErrors and the request id the client sent', async () => {
    const { fetch, sent } = recordingFetch();
    const recording = clientFor(target, { fetch });
    const error = await recording.call('getInvoice', { path: { invoice_id: 'in_2001_01_nope' } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ status: 404, code: 'not_found', requestId: sent[0]!.headers.get('x-request-id') });
    const invalid = await client.call('createApiToken', { body: { name: '' } }).catch((caught: unknown) => caught as ProblemError);
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed' });
    expect((invalid as ProblemError).fieldErrors.map((fieldError) => fieldError.pointer)).toContain('/name');
  });

  test('a revoked credential is a 401 ProblemError', async () => {
    const created = await client.call('createApiToken', { body: { name: 'soon-revoked', scopes: ['read'] } });
    const revokedClient = clientFor(target, { credential: created.secret! });
    await client.call('revokeApiToken', { path: { token_id: created.token.id } });
    await expect(revokedClient.call('getBilling')).rejects.toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  test('the automatic Idempotency-Key makes a repeated POST a replay', async () => {
    const key = randomUUID();
    const first = await client.callWithResponse('createApiToken', { body: { name: 'replay-me' }, headers: { 'Idempotency-Key': key } });
    const second = await client.callWithResponse('createApiToken', { body: { name: 'replay-me' }, headers: { 'Idempotency-Key': key } });
    expect(second.response.headers.get('idempotent-replayed')).toBe('true');
    expect(second.data.token.id).toBe(first.data.token.id);
    expect(first.data.secret).toMatch(/^cpk_/);
    expect(second.data.secret).toBeUndefined();
  });

  test('paginate follows real cursors to the end, without repeats', async () => {
    const org = await server.createOrg('Many keys');
    const orgClient = clientFor({ ...target, org: org.orgId, credential: org.ownerKey });
    for (let index = 0; index < 5; index++) await orgClient.call('createApiToken', { body: { name: `key-${index}` } });
    const names: string[] = [];
    for await (const token of orgClient.paginate('listApiTokens', { query: { limit: 2 } })) names.push(token.name);
    expect(names).toEqual(['key-4', 'key-3', 'key-2', 'key-1', 'key-0', 'owner key']);
  });

  test('waitForOperation rejects with OperationFailedError for a cancelled operation', async () => {
    const paused = await startTestServer({ BACKGROUND_WORK: 'false' });
    try {
      const org = paused.org;
      const pausedClient = clientFor({ baseUrl: paused.url, org: org.orgId, credential: org.ownerKey, stop: async () => {} });
      const accepted = await pausedClient.call('createBucket', { body: { name: `wait-${randomUUID().slice(0, 8)}` } });
      await pausedClient.call('cancelOperation', { path: { operation_id: accepted.operation.id } });
      await expect(pausedClient.waitForOperation(accepted.operation, { timeoutMs: 5000 })).rejects.toMatchObject({
        name: 'OperationFailedError',
        state: 'cancelled',
      });
    } finally {
      await paused.close();
    }
  });
});
