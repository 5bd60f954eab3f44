// The validator's AJV no longer walks the whole contract for each schema it compiles
// (server/http/contract-id-scan.ts): only where that walk could find nothing, and with what the
// contract's schemas say still checked, `$ref`s into components included.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { skipContractInIdScan } from '../../../server/http/contract-id-scan.ts';
import { contractText } from '../../../server/core/contract-document.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { vmRequest } from '../areas/compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

test('a contract with an $id or an anchor is walked whole; the platform’s has none', () => {
  expect(
    skipContractInIdScan(JSON.stringify({ components: { schemas: { Named: { $id: 'https://example.com/named', type: 'string' } } } })),
  ).toBe(false);
  expect(
    skipContractInIdScan(JSON.stringify({ paths: { '/x': { get: { responses: { 200: { description: 'x', $anchor: 'here' } } } } } })),
  ).toBe(false);
  expect(skipContractInIdScan(contractText())).toBe(true);
});

test('what the contract’s components say is still checked, on requests and on an operation’s first request alike', async () => {
  // A body whose fields are defined by components (the instance's labels, its name's pattern):
  // refused field by field, on this operation's first request in this server and on the next.
  for (let attempt = 0; attempt < 2; attempt++) {
    const refused = await server.org.call('POST', '/compute/vms', {
      body: { ...vmRequest({ name: 'Not A Valid Name!' }), labels: { env: 42 } },
    });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.code).toBe('validation_failed');
    const pointers = (refused.body.errors as Array<{ pointer: string }>).map((error) => error.pointer);
    expect(pointers).toEqual(expect.arrayContaining(['/name', expect.stringMatching(/^\/labels/)]));
  }
  // And an answer is checked against its schema: a valid creation is answered whole.
  const created = await server.org.call('POST', '/compute/vms', { body: vmRequest({ name: 'scan-1' }) });
  expect(created.status, created.text).toBe(202);
  expect(created.body.vm).toMatchObject({ name: 'scan-1', state: expect.any(String) });
});
