// A console client as a program would write one: a WebSocket to the collected URL, text both ways.
import WebSocket from 'ws';
import type { TestOrg, TestServer } from './server.ts';

export interface ConsoleConnection {
  /** Everything the console has written so far. */
  output(): string;
  /** Resolves once the output (after `from`) matches; fails, showing the output, after `timeoutMs`. */
  waitFor(pattern: string | RegExp, options?: { from?: number; timeoutMs?: number }): Promise<void>;
  type(text: string): void;
  close(): void;
  /** How the session ended: the close code and reason the gateway sent. */
  closed: Promise<{ code: number; reason: string }>;
}

/** Requests a console for the instance, waits for the operation and collects the URL (as `key`). */
export async function collectConsoleUrl(server: TestServer, org: TestOrg, vmId: string, key?: string): Promise<string> {
  const requested = await org.call('POST', `/compute/vms/${vmId}/console`, { key });
  if (requested.status !== 202) throw new Error(`requestConsole: ${requested.status} ${requested.text}`);
  await server.waitForOperation(org, requested.body.operation.id);
  const collected = await org.call('GET', `/compute/vms/${vmId}/console?operation=${requested.body.operation.id}`, { key });
  if (collected.status !== 200) throw new Error(`collectConsole: ${collected.status} ${collected.text}`);
  return collected.body.url as string;
}

/** Opens the URL. Resolves with the connection, or rejects with the HTTP status that refused it. */
export function connectConsole(url: string): Promise<ConsoleConnection> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    let text = '';
    const waiters = new Set<() => void>();
    socket.on('message', (data: Buffer) => {
      text += data.toString('utf8');
      for (const waiter of waiters) waiter();
    });
    const closed = new Promise<{ code: number; reason: string }>((resolveClosed) =>
      socket.on('close', (code: number, reason: Buffer) => resolveClosed({ code, reason: reason.toString() })),
    );
    socket.on('unexpected-response', (_request, response) => {
      reject(Object.assign(new Error(`refused with HTTP ${response.statusCode}`), { status: response.statusCode }));
      socket.terminate();
    });
    socket.on('error', (error) => reject(error));
    socket.on('open', () =>
      resolve({
        output: () => text,
        waitFor(pattern, { from = 0, timeoutMs = 10_000 } = {}) {
          const matches = () => (typeof pattern === 'string' ? text.slice(from).includes(pattern) : pattern.test(text.slice(from)));
          if (matches()) return Promise.resolve();
          return new Promise<void>((resolveWait, rejectWait) => {
            const timer = setTimeout(() => {
              waiters.delete(check);
              rejectWait(new Error(`console never showed ${String(pattern)}; it showed:\n${text.slice(from)}`));
            }, timeoutMs);
            const check = () => {
              if (!matches()) return;
              clearTimeout(timer);
              waiters.delete(check);
              resolveWait();
            };
            waiters.add(check);
          });
        },
        type: (input) => socket.send(input),
        close: () => socket.close(1000, 'done'),
        closed,
      }),
    );
  });
}
