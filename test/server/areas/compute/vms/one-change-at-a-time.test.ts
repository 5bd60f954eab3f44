// One change at a time: while an instance's operation is in flight, every other change of it is
// refused with 409 vm_state_conflict. The stop here is held in flight by the simulated hypervisor
// (it fails transiently, and is retried, for as long as the test runs), so the refusals do not
// depend on how fast the machine carries the stop out.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../../../support/server.ts';
import { runningVm } from '../fixtures.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    SIM_FAULTS: 'hypervisor.stopServer=transient*100000',
    OPERATION_MAX_ATTEMPTS: '100',
    OPERATION_RETRY_BASE_MS: '200',
    OPERATION_RETRY_MAX_MS: '200',
  });
});
afterAll(() => server?.close());

test('a second change while one is in flight is refused', async () => {
  const { org } = server;
  const vm = await runningVm(server, org);
  const stop = await org.call('POST', `/compute/vms/${vm.id}/stop`);
  expect(stop.status, stop.text).toBe(202);
  const conflicts = await Promise.all(
    ['start', 'reboot', 'rescue', 'stop'].map((action) => org.call('POST', `/compute/vms/${vm.id}/${action}`)),
  );
  for (const response of conflicts) {
    expect(response.status, response.text).toBe(409);
    expect(response.body.code).toBe('vm_state_conflict');
  }
  // The stop was in flight all along: still not finished now.
  const operation = await org.call('GET', `/operations/${stop.body.operation.id}`);
  expect(['queued', 'running']).toContain(operation.body.state);
});
