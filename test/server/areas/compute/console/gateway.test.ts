// The console gateway end to end: a console requested and collected through the API, opened as a
// WebSocket at the URL it names, typed into, and ended by every way a session ends. The instance
// behind it is the simulated hypervisor's, whose serial console boots, logs in and answers.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runAdminCommand } from '../../../../../server/admin/commands.ts';
import { loadConfig } from '../../../../../server/config.ts';
import { createLogger } from '../../../../../server/logging.ts';
import { collectConsoleUrl, connectConsole, type ConsoleConnection } from '../../../../support/console-client.ts';
import { startTestServer, TEST_ENV, type TestServer } from '../../../../support/server.ts';
import { act, runningVm, singleCopyRequest } from '../fixtures.ts';

let server: TestServer;
let idleServer: TestServer;
beforeAll(async () => {
  [server, idleServer] = await Promise.all([
    startTestServer({ TEST_CLOCKS: 'true', CONSOLE_CHECK_INTERVAL_MS: '100' }),
    // Behind TLS as far as clients know (PUBLIC_BASE_URL https), and quick to call a session idle.
    startTestServer({ CONSOLE_IDLE_TIMEOUT_SECONDS: '1', PUBLIC_BASE_URL: 'https://console.example.test' }),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.close(), idleServer?.close()]);
});

/** Logs in at the console's prompt and waits for the shell. */
async function logIn(session: ConsoleConnection, user = 'root'): Promise<void> {
  await session.waitFor(/login: $/);
  session.type(`${user}\r`);
  await session.waitFor('Password: ');
  session.type('correct horse\r');
  await session.waitFor(new RegExp(`${user}@[\\w-]+:~[#$] $`));
}

/** Moves the organization's test clock as the operator's command does. */
async function advanceClock(orgId: string, by: string): Promise<Record<string, unknown>> {
  const config = loadConfig({ ...TEST_ENV, TEST_CLOCKS: 'true', SIM_LATENCY_MS: '1', DATABASE_URL: server.databaseUrl });
  return runAdminCommand(server.pool, 'clock', { org: orgId, by }, 'test', { config, log: createLogger('silent'), args: ['advance'] });
}

describe('a console session', () => {
  test('connects at the collected ws:// URL, shows a login prompt, and answers commands typed into it', async () => {
    const vm = await runningVm(server, server.org, {}, singleCopyRequest);
    const url = await collectConsoleUrl(server, server.org, vm.id);
    expect(url).toMatch(new RegExp(`^${server.url.replace('http://', 'ws://')}/console/sessions/cs_`));
    const session = await connectConsole(url);
    await logIn(session);
    // Operators see it among the open sessions.
    const metrics = await (await fetch(server.metricsUrl!)).text();
    expect(Number(/^cloud_console_sessions_open (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    let mark = session.output().length;
    session.type('hostname\r');
    await session.waitFor(`\r\n${vm.name}\r\n`, { from: mark });
    mark = session.output().length;
    session.type('nproc\r');
    await session.waitFor(`\r\n${vm.vcpus}\r\n`, { from: mark });
    mark = session.output().length;
    session.type('no-such-tool --help\r');
    await session.waitFor('-bash: no-such-tool: command not found', { from: mark });
    session.close();
    expect(await session.closed).toMatchObject({ code: 1000 });
  });

  test('accepts exactly one connection per URL: a second one, even while the first is open, is refused', async () => {
    const vm = await runningVm(server, server.org);
    const url = await collectConsoleUrl(server, server.org, vm.id);
    const first = await connectConsole(url);
    await expect(connectConsole(url)).rejects.toMatchObject({ status: 404 });
    await first.waitFor('login:');
    first.close();
    await first.closed;
    await expect(connectConsole(url)).rejects.toMatchObject({ status: 404 });
    // A made-up token is refused alike.
    await expect(connectConsole(url.replace(/cs_.{4}/, 'cs_AAAA'))).rejects.toMatchObject({ status: 404 });
  });

  test('shows what a reboot, a stop and a start, and a rescue do to the instance', async () => {
    const vm = await runningVm(server, server.org);
    const session = await connectConsole(await collectConsoleUrl(server, server.org, vm.id));
    await session.waitFor('login:');

    let mark = session.output().length;
    await act(server, server.org, 'POST', `/compute/vms/${vm.id}/reboot`);
    await session.waitFor('reboot: Restarting system', { from: mark });
    await session.waitFor(/Linux version [\s\S]*Reached target multi-user\.target[\s\S]*login: $/, { from: mark });

    mark = session.output().length;
    await act(server, server.org, 'POST', `/compute/vms/${vm.id}/stop`);
    await session.waitFor('reboot: Power down', { from: mark });
    mark = session.output().length;
    await act(server, server.org, 'POST', `/compute/vms/${vm.id}/start`);
    await session.waitFor(/Linux version [\s\S]*login: $/, { from: mark });

    mark = session.output().length;
    await act(server, server.org, 'POST', `/compute/vms/${vm.id}/rescue`);
    await session.waitFor(/Command line: .*root=\/dev\/ram0[\s\S]*root@rescue:~# $/, { from: mark });
    mark = session.output().length;
    session.type('cat /etc/os-release\r');
    await session.waitFor('PRETTY_NAME="Rescue system"', { from: mark });
    session.close();
  });

  test('ends with 4004 when the instance is deleted mid-session', async () => {
    const vm = await runningVm(server, server.org);
    const session = await connectConsole(await collectConsoleUrl(server, server.org, vm.id));
    await session.waitFor('login:');
    const deleted = await server.org.call('DELETE', `/compute/vms/${vm.id}`);
    expect(deleted.status, deleted.text).toBe(202);
    expect(await session.closed).toEqual({ code: 4004, reason: 'The instance was deleted.' });
    const { rows } = await server.pool.query('SELECT end_reason FROM console_sessions WHERE vm_id = $1', [vm.id]);
    expect(rows[0].end_reason).toBe('instance_deleted');
  });

  test('ends with 4003 when the API key that collected the URL is revoked; another key is not affected', async () => {
    const vm = await runningVm(server, server.org);
    const created = await server.org.call('POST', '/api-tokens', { body: { name: 'console opener', scopes: ['read', 'write'] } });
    expect(created.status, created.text).toBe(201);
    const [revokedSession, ownerSession] = await Promise.all([
      collectConsoleUrl(server, server.org, vm.id, created.body.secret).then(connectConsole),
      collectConsoleUrl(server, server.org, vm.id).then(connectConsole),
    ]);
    await revokedSession.waitFor('login:');
    expect((await server.org.call('DELETE', `/api-tokens/${created.body.token.id}`)).status).toBe(200);
    expect(await revokedSession.closed).toEqual({ code: 4003, reason: 'The API key that opened this console was revoked or expired.' });
    // The owner's session goes on.
    const mark = ownerSession.output().length;
    ownerSession.type('\r');
    await ownerSession.waitFor('login:', { from: mark });
    ownerSession.close();
  });

  test('a URL collected with a key revoked before connecting is refused', async () => {
    const vm = await runningVm(server, server.org);
    const created = await server.org.call('POST', '/api-tokens', { body: { name: 'short-lived', scopes: ['read', 'write'] } });
    const url = await collectConsoleUrl(server, server.org, vm.id, created.body.secret);
    await server.org.call('DELETE', `/api-tokens/${created.body.token.id}`);
    await expect(connectConsole(url)).rejects.toMatchObject({ status: 404 });
  });
});

describe('expiry by the organization clock', () => {
  test("a URL past expires_in_seconds on its organization's test clock is refused; another organization's is not", async () => {
    const other = await server.createOrg('Clockless');
    const [vm, otherVm] = await Promise.all([runningVm(server, server.org), runningVm(server, other, {}, singleCopyRequest)]);
    const url = await collectConsoleUrl(server, server.org, vm.id);
    const otherUrl = await collectConsoleUrl(server, other, otherVm.id);
    const moved = await advanceClock(server.org.orgId, '61s');
    expect(moved.offset_ms).toBeGreaterThanOrEqual(61_000);
    await expect(connectConsole(url)).rejects.toMatchObject({ status: 404 });
    const session = await connectConsole(otherUrl);
    await session.waitFor('login:');
    session.close();
  });

  test('a console not collected within 5 minutes of being prepared, on the moved clock, is 404', async () => {
    const vm = await runningVm(server, server.org);
    const requested = await server.org.call('POST', `/compute/vms/${vm.id}/console`);
    await server.waitForOperation(server.org, requested.body.operation.id);
    await advanceClock(server.org.orgId, '301s');
    const late = await server.org.call('GET', `/compute/vms/${vm.id}/console?operation=${requested.body.operation.id}`);
    expect(late.status).toBe(404);
  });

  test('within expires_in_seconds on the moved clock, a URL still works', async () => {
    const vm = await runningVm(server, server.org);
    const url = await collectConsoleUrl(server, server.org, vm.id);
    await advanceClock(server.org.orgId, '30s');
    const session = await connectConsole(url);
    await session.waitFor('login:');
    session.close();
  });
});

describe('idle sessions and TLS addresses', () => {
  test('behind TLS (PUBLIC_BASE_URL https) the URL is wss:// at that address', async () => {
    const vm = await runningVm(idleServer, idleServer.org, {}, singleCopyRequest);
    const url = await collectConsoleUrl(idleServer, idleServer.org, vm.id);
    expect(url).toMatch(/^wss:\/\/console\.example\.test\/console\/sessions\/cs_[\w-]{43}$/);
  });

  test('a session without input for the idle timeout ends with 4001; input keeps it open', async () => {
    const vm = await runningVm(idleServer, idleServer.org, {}, singleCopyRequest);
    const url = await collectConsoleUrl(idleServer, idleServer.org, vm.id);
    // The URL names the public address; the test reaches the same gateway where it listens.
    const session = await connectConsole(url.replace('wss://console.example.test', idleServer.url.replace('http://', 'ws://')));
    const opened = Date.now();
    // Typing every 400 ms keeps it open past the 1-second timeout.
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 400));
      session.type('\r');
    }
    const ended = await session.closed;
    expect(ended).toEqual({ code: 4001, reason: 'Closed after 1 seconds without input.' });
    expect(Date.now() - opened).toBeGreaterThanOrEqual(2_400);
  });
});
