import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { CONSOLE_SESSIONS_PATH, recordSessionEnd, redeemConsoleToken, sessionsToEnd, type RedeemedConsole } from './console-urls.ts';
import type { ConsoleConfig } from '../../../config.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import { withTransaction, type Pool } from '../../../db/pool.ts';
import type { ConsoleAttachment, HypervisorDriver } from '../../../drivers/hypervisor.ts';
import type { Logger } from '../../../logging.ts';

/**
 * WebSocket close codes of a console session, each with the reason sent beside it. 1000 and 1001
 * are the protocol's own; the 4xxx codes are this gateway's (RFC 6455 leaves 4000-4999 to
 * applications).
 */
export const CONSOLE_CLOSE = {
  closed: { code: 1000, reason: 'The console session ended.' },
  shuttingDown: { code: 1001, reason: 'The console gateway is shutting down; collect a new console URL.' },
  failed: { code: 1011, reason: 'The console could not be reached; collect a new console URL.' },
  idle: { code: 4001, reason: 'Closed after %s seconds without input.' },
  credentialRevoked: { code: 4003, reason: 'The API key that opened this console was revoked or expired.' },
  instanceDeleted: { code: 4004, reason: 'The instance was deleted.' },
} as const;

interface LiveSession {
  console: RedeemedConsole;
  socket: WebSocket;
  attachment: ConsoleAttachment | undefined;
  idleTimer: NodeJS.Timeout | undefined;
  ended: boolean;
}

/**
 * The console gateway: the address every collected console URL names
 * (`ws[s]://<public base>/console/sessions/<token>`). It shares the API's HTTP server, on an
 * upgrade handler of its own, so no HTTP middleware (nor the contract's validator) sees these
 * requests. A connection is accepted once per token, before it expires; it then carries the
 * instance's console from the hypervisor driver, text both ways. A session ends with a close code
 * and a reason: the user closing it (1000), no keystroke for `idleTimeoutSeconds` (4001), the API
 * key that collected it revoked or expired (4003), the instance deleted (4004), the server
 * stopping (1001).
 */
export function createConsoleGateway(deps: {
  pool: Pool;
  orgClock: OrganizationClock;
  hypervisor: HypervisorDriver;
  config: ConsoleConfig;
  log: Logger;
}) {
  const { pool, orgClock, hypervisor, config, log } = deps;
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const sessions = new Map<string, LiveSession>();
  let sweeping = false;

  function refuse(socket: Duplex, status: 400 | 404 | 503, text: string): void {
    const reason = { 400: 'Bad Request', 404: 'Not Found', 503: 'Service Unavailable' }[status];
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n${text}`,
    );
  }

  function end(session: LiveSession, close: { code: number; reason: string }, record: string): void {
    if (session.ended) return;
    session.ended = true;
    clearTimeout(session.idleTimer);
    session.attachment?.detach();
    sessions.delete(session.console.operationId);
    const closeSocket = (): void => {
      if (session.socket.readyState === session.socket.OPEN || session.socket.readyState === session.socket.CONNECTING) {
        session.socket.close(close.code, close.reason);
      }
    };
    // A server going down closes at once; otherwise the end is on record before the client
    // sees the close, so whoever reacts to the close code finds why the session ended.
    if (record === 'server_shutdown') closeSocket();
    recordSessionEnd(pool, session.console.operationId, record)
      .catch((error: unknown) =>
        log.warn({ err: error, operation_id: session.console.operationId }, 'recording the end of a console session failed'),
      )
      .finally(closeSocket);
  }

  function armIdleTimer(session: LiveSession): void {
    clearTimeout(session.idleTimer);
    const seconds = config.idleTimeoutSeconds;
    session.idleTimer = setTimeout(
      () =>
        end(session, { code: CONSOLE_CLOSE.idle.code, reason: CONSOLE_CLOSE.idle.reason.replace('%s', String(seconds)) }, 'idle_timeout'),
      seconds * 1000,
    );
  }

  async function accept(request: IncomingMessage, socket: Duplex, head: Buffer, token: string): Promise<void> {
    let redeemed: RedeemedConsole | undefined;
    try {
      redeemed = await withTransaction(pool, (tx) => redeemConsoleToken(tx, orgClock, token));
    } catch (error) {
      log.warn({ err: error }, 'console token lookup failed');
      return refuse(socket, 503, 'The console gateway cannot reach its database; try again shortly.\n');
    }
    if (!redeemed) {
      return refuse(socket, 404, 'This console URL is unknown, was already used, or has expired. Request and collect a new one.\n');
    }
    const consoleOf = redeemed;
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      const session: LiveSession = { console: consoleOf, socket: webSocket, attachment: undefined, idleTimer: undefined, ended: false };
      sessions.set(consoleOf.operationId, session);
      armIdleTimer(session);
      const pending: string[] = [];
      webSocket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
        const text = Buffer.isBuffer(data)
          ? data.toString('utf8')
          : Array.isArray(data)
            ? Buffer.concat(data).toString('utf8')
            : Buffer.from(data).toString('utf8');
        armIdleTimer(session);
        if (session.attachment) session.attachment.input(text);
        else pending.push(text);
      });
      webSocket.on('close', () => end(session, CONSOLE_CLOSE.closed, 'closed'));
      webSocket.on('error', () => end(session, CONSOLE_CLOSE.closed, 'closed'));
      hypervisor
        .attachConsole({ serverId: consoleOf.vmId, name: consoleOf.vmName }, consoleOf.operationId, {
          output: (text) => {
            if (!session.ended) webSocket.send(text);
          },
          ended: () => end(session, CONSOLE_CLOSE.instanceDeleted, 'instance_deleted'),
        })
        .then(
          (attachment) => {
            if (session.ended) return attachment.detach();
            session.attachment = attachment;
            for (const text of pending.splice(0)) attachment.input(text);
          },
          (error: unknown) => {
            log.warn({ err: error, operation_id: consoleOf.operationId }, 'attaching to the console failed');
            end(session, CONSOLE_CLOSE.failed, 'attach_failed');
          },
        );
    });
  }

  /** Ends the sessions whose instance is going or whose API key no longer works (from any process). */
  async function sweep(): Promise<void> {
    if (sweeping || sessions.size === 0) return;
    sweeping = true;
    try {
      const ending = await sessionsToEnd(pool, [...sessions.keys()]);
      for (const [operationId, why] of ending) {
        const session = sessions.get(operationId);
        if (!session) continue;
        if (why === 'instance_deleted') end(session, CONSOLE_CLOSE.instanceDeleted, why);
        else end(session, CONSOLE_CLOSE.credentialRevoked, why);
      }
    } catch (error) {
      log.warn({ err: error }, 'checking console sessions failed; checked again shortly');
    } finally {
      sweeping = false;
    }
  }
  const sweeper = setInterval(() => void sweep(), config.checkIntervalMs);
  sweeper.unref();

  return {
    /** Takes the upgrade requests of the console path; every other upgrade is refused. */
    attach(server: Server): void {
      server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
        socket.on('error', () => {});
        const path = (request.url ?? '').split('?')[0]!;
        if (!path.startsWith(CONSOLE_SESSIONS_PATH)) return refuse(socket, 404, 'No WebSocket here; consoles are at /console/sessions/.\n');
        const token = path.slice(CONSOLE_SESSIONS_PATH.length);
        if (!/^cs_[A-Za-z0-9_-]{20,100}$/.test(token))
          return refuse(socket, 404, 'This console URL is unknown, was already used, or has expired.\n');
        void accept(request, socket, head, token);
      });
    },

    /** Open sessions (for tests and metrics). */
    get openSessions(): number {
      return sessions.size;
    },

    /** Ends every session (1001) and stops. */
    close(): void {
      clearInterval(sweeper);
      for (const session of [...sessions.values()]) end(session, CONSOLE_CLOSE.shuttingDown, 'server_shutdown');
      sockets.close();
    },
  };
}

export type ConsoleGateway = ReturnType<typeof createConsoleGateway>;
