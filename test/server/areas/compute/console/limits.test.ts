// One tenant's console session costs the others nothing. A client flooding its console with
// one-byte frames (84,000 of them, as fast as it can) is read only at its rate, then closed with
// 4029, while another organization's requests are answered; a client that stops reading while its
// console writes (`help` typed again and again) fills a bounded buffer and is closed with 4030,
// the server's memory staying bounded. No timing is asserted: only what the rates guarantee
// however loaded the machine (an upper bound on what got through in the time the test saw pass).
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collectConsoleUrl } from '../../../../support/console-client.ts';
import { eventually } from '../../../../support/eventually.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';
import { runningVm } from '../fixtures.ts';

const MESSAGES_PER_SECOND = 200;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    CONSOLE_INPUT_MESSAGES_PER_SECOND: String(MESSAGES_PER_SECOND),
    // Enough bytes that a client ignoring its output fills the bound in seconds, not minutes.
    CONSOLE_INPUT_BYTES_PER_SECOND: String(1024 * 1024),
    CONSOLE_OUTPUT_BUFFER_BYTES: String(1024 * 1024),
  });
});
afterAll(() => server?.close());

/** A raw WebSocket client of a console: what it was sent, and how it was closed. */
async function openConsole(org: TestOrg): Promise<{
  socket: WebSocket;
  received: () => string;
  closed: Promise<{ code: number; reason: string }>;
}> {
  const vm = await runningVm(server, org);
  const socket = new WebSocket(await collectConsoleUrl(server, org, vm.id));
  let text = '';
  socket.on('message', (data: Buffer) => (text += data.toString('utf8')));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => text, closed };
}

/** Another organization asking for itself, one request after another, until `done`: every status. */
async function otherTenantMeanwhile(done: Promise<unknown>): Promise<number[]> {
  const other = await server.createOrg('Bystander');
  let finished = false;
  const finish = () => void (finished = true);
  done.then(finish, finish);
  const statuses: number[] = [];
  while (!finished) statuses.push((await other.call('GET', '')).status);
  return statuses;
}

/** Sends `message` until `count` were sent, the socket closes or `paced` says stop, never letting more than 256 KiB wait in the client. */
async function sendMany(socket: WebSocket, message: string | Buffer, count: number, paced = () => true): Promise<number> {
  let sent = 0;
  while (sent < count && socket.readyState === socket.OPEN && paced()) {
    if (socket.bufferedAmount > 256 * 1024) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      continue;
    }
    for (let batch = 0; batch < 500 && sent < count; batch++, sent++) socket.send(message);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return sent;
}

/** Resolves with the close, or fails saying it never came. */
function closedWithin<T>(closed: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    closed,
    new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`${what} was never closed`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

describe('a console client that floods its input', () => {
  test("84,000 one-byte frames: read at the session's rate, then closed with 4029; another tenant is answered meanwhile", async () => {
    const flooder = await openConsole(server.org);
    await eventually(() => (flooder.received().includes('login: ') ? true : undefined), 'the login prompt');
    const openedAt = Date.now();
    const echoedBefore = flooder.received().length;
    const flood = (async () => {
      const sent = await sendMany(flooder.socket, Buffer.from('x'), 84_000);
      return { sent, ended: await closedWithin(flooder.closed, 30_000, 'the flooding session') };
    })();
    const statuses = await otherTenantMeanwhile(flood);
    const { sent, ended } = await flood;
    const seconds = (Date.now() - openedAt) / 1000;

    expect(ended.code).toBe(4029);
    expect(ended.reason).toBe(
      `Closed: input kept coming faster than ${MESSAGES_PER_SECOND} messages a second; send keystrokes, not a flood.`,
    );
    // What reached the console (its echo at the login prompt) is what the rate allowed, however
    // long the test took: the burst (twice the rate), the allowance past it, and the rate since.
    const echoed = (flooder.received().slice(echoedBefore).match(/x/g) ?? []).length;
    expect(echoed).toBeLessThanOrEqual(4 * MESSAGES_PER_SECOND + MESSAGES_PER_SECOND * seconds);
    expect(sent).toBeGreaterThan(echoed);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 200)).toBe(true);
    const { rows } = await server.pool.query('SELECT end_reason FROM console_sessions WHERE end_reason = $1', ['input_flood']);
    expect(rows.length).toBeGreaterThanOrEqual(1);
  });

  test('typing, and pasting into the console, stays well within the rate: the session stays open', async () => {
    const typist = await openConsole(server.org);
    await eventually(() => (typist.received().includes('login: ') ? true : undefined), 'the login prompt');
    // Fast typing (a key every 10 ms), then a paste of 8 KiB in one message.
    for (const key of 'root') {
      typist.socket.send(key);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    typist.socket.send('\r');
    await eventually(() => (typist.received().includes('Password: ') ? true : undefined), 'the password prompt');
    typist.socket.send('secret\r');
    await eventually(() => (/root@[\w-]+:~# $/.test(typist.received()) ? true : undefined), 'the shell');
    typist.socket.send(`echo ${'p'.repeat(8 * 1024 - 10)}\r`);
    await eventually(() => (typist.received().includes('p'.repeat(4_000)) ? true : undefined), 'the pasted line echoed');
    expect(typist.socket.readyState).toBe(typist.socket.OPEN);
    typist.socket.close();
  });
});

describe('a console client that stops reading', () => {
  test('fills a bounded buffer and is closed with 4030; memory stays bounded and another tenant is answered', async () => {
    const reader = await openConsole(server.org);
    await eventually(() => (reader.received().includes('login: ') ? true : undefined), 'the login prompt');
    reader.socket.send('root\r');
    await eventually(() => (reader.received().includes('Password: ') ? true : undefined), 'the password prompt');
    reader.socket.send('secret\r');
    await eventually(() => (/root@[\w-]+:~# $/.test(reader.received()) ? true : undefined), 'the shell');
    const memoryBefore = process.memoryUsage();

    // Stops reading, and types `help` over and over (each answers a line of 130 bytes).
    reader.socket.pause();
    let sessionEnded = false;
    const ended = eventually(
      async () => {
        const { rows } = await server.pool.query(`SELECT 1 FROM console_sessions WHERE end_reason = 'output_not_read'`);
        return rows.length > 0 ? (sessionEnded = true) : undefined;
      },
      'the session to end for output not read',
      60_000,
    );
    const typing = sendMany(reader.socket, 'help\r'.repeat(100), 8_000, () => !sessionEnded);
    const statuses = await otherTenantMeanwhile(ended);
    await ended;
    await typing;
    const memoryAfter = process.memoryUsage();

    // Reading again: what waited for it, then the close and why.
    reader.socket.resume();
    const close = await closedWithin(reader.closed, 30_000, 'the session that stopped reading');
    expect(close.code).toBe(4030);
    expect(close.reason).toMatch(/^Closed: the client stopped reading the console output \(\d+ bytes waited for it\)\.$/);
    // Bounded: the output buffer (1 MiB) and the sockets' own, not what the typing asked for.
    const grownBytes = memoryAfter.heapUsed + memoryAfter.external - (memoryBefore.heapUsed + memoryBefore.external);
    expect(grownBytes).toBeLessThan(256 * 1024 * 1024);
    expect(statuses.every((status) => status === 200)).toBe(true);
  });
});
