import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { CONSOLE_SESSIONS_PATH, recordSessionEnd, redeemConsoleToken, sessionsToEnd, type RedeemedConsole } from './console-urls.ts';
import type { ConsoleConfig } from '../../../config.ts';
import { FlowControl, SharedRates, type FlowLimitReached } from '../../../core/flow-control.ts';
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
  inputFlood: { code: 4029, reason: 'Closed: input kept coming faster than %s messages a second; send keystrokes, not a flood.' },
  outputNotRead: { code: 4030, reason: 'Closed: the client stopped reading the console output (%s bytes waited for it).' },
} as const;

/** How long a session closed for a limit may take to say goodbye before its connection is cut. */
const LIMIT_CLOSE_GRACE_MS = 2_000;

interface LiveSession {
  console: RedeemedConsole;
  socket: WebSocket;
  flow: FlowControl;
  attachment: ConsoleAttachment | undefined;
  /** Keystrokes that came before the console was attached (few: reading waits for it). */
  pending: string[];
  /** Output not yet sent: what the console wrote in this turn of the event loop goes as one message. */
  output: string[];
  flushing: boolean;
  lastInputAt: number;
  idleTimer: NodeJS.Timeout | undefined;
  ended: boolean;
}

/** The bytes of a WebSocket message as `ws` hands it over. */
const messageBytes = (data: Buffer | ArrayBuffer | Buffer[]): Buffer =>
  Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);

/**
 * The console gateway: the address every collected console URL names
 * (`ws[s]://<public base>/console/sessions/<token>`). It shares the API's HTTP server, on an
 * upgrade handler of its own, so no HTTP middleware (nor the contract's validator) sees these
 * requests. A connection is accepted once per token, before it expires; it then carries the
 * instance's console from the hypervisor driver, text both ways. A session ends with a close code
 * and a reason: the user closing it (1000), no keystroke for `idleTimeoutSeconds` (4001), the API
 * key that collected it revoked or expired (4003), the instance deleted (4004), the server
 * stopping (1001), input flooding past its rate (4029), output not read (4030).
 *
 * No session costs the others anything (core/flow-control.ts): each message is handled in a turn
 * of the event loop of its own; input is rate-limited per session and per organization, and past
 * the rate the session is not read (its client's keystrokes wait in TCP); a client that keeps
 * sending far past it is closed. What the console writes in one turn goes as one message, and
 * output waiting for a client that does not read it is bounded. A session holds no database
 * connection while it is open.
 */
export function createConsoleGateway(deps: {
  pool: Pool;
  orgClock: OrganizationClock;
  hypervisor: HypervisorDriver;
  config: ConsoleConfig;
  log: Logger;
  /** Counts the sessions each limit closed (absent: not counted). */
  countLimitClose?: (why: FlowLimitReached) => void;
}) {
  const { pool, orgClock, hypervisor, config, log } = deps;
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: 64 * 1024,
    // One message per turn of the event loop: a chunk of thousands of one-byte frames, read at
    // once, is not handled in one go while every other request waits.
    allowSynchronousEvents: false,
  });
  const sessions = new Map<string, LiveSession>();
  const organizations = new SharedRates(config.organizationInput);
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
    session.flow.stop();
    organizations.release(session.console.orgId);
    session.attachment?.detach();
    sessions.delete(session.console.operationId);
    const { socket } = session;
    const limit = record === 'input_flood' || record === 'output_not_read';
    const closeSocket = (): void => {
      if (socket.readyState !== socket.OPEN && socket.readyState !== socket.CONNECTING) return;
      socket.close(close.code, close.reason);
      if (limit) {
        // Not read again: a flooder's backlog is not worth reading, and one that does not read
        // gets the close once it reads again, or not at all. Either way the connection is cut soon.
        setTimeout(() => socket.terminate(), LIMIT_CLOSE_GRACE_MS).unref();
      } else {
        // Reading again, should it have been paused, for the client's answer to the close.
        socket.resume();
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

  /** Ends the session once no keystroke came for the idle timeout (one timer per session, moved on as it fires). */
  function watchIdle(session: LiveSession): void {
    const timeoutMs = config.idleTimeoutSeconds * 1000;
    const check = (): void => {
      const quietMs = Date.now() - session.lastInputAt;
      if (quietMs < timeoutMs) {
        session.idleTimer = setTimeout(check, timeoutMs - quietMs);
        return;
      }
      end(
        session,
        { code: CONSOLE_CLOSE.idle.code, reason: CONSOLE_CLOSE.idle.reason.replace('%s', String(config.idleTimeoutSeconds)) },
        'idle_timeout',
      );
    };
    session.idleTimer = setTimeout(check, timeoutMs);
  }

  /** Sends what the console wrote in this turn as one message, then checks the client keeps up. */
  function queueOutput(session: LiveSession, text: string): void {
    if (session.ended) return;
    session.output.push(text);
    if (session.flushing) return;
    session.flushing = true;
    setImmediate(() => {
      session.flushing = false;
      if (session.ended) return;
      const message = session.output.join('');
      session.output = [];
      session.socket.send(message);
      session.flow.wrote();
    });
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
      const closeFor = (why: FlowLimitReached) => {
        deps.countLimitClose?.(why);
        const template = why === 'input_flood' ? CONSOLE_CLOSE.inputFlood : CONSOLE_CLOSE.outputNotRead;
        const figure = why === 'input_flood' ? config.input.messagesPerSecond : webSocket.bufferedAmount;
        end(session, { code: template.code, reason: template.reason.replace('%s', String(figure)) }, why);
      };
      const flow = new FlowControl(
        {
          pauseInput: () => webSocket.pause(),
          resumeInput: () => webSocket.resume(),
          bufferedOutput: () => webSocket.bufferedAmount,
        },
        { input: config.input, floodMessages: 2 * config.input.messagesPerSecond, maxBufferedOutput: config.outputBufferBytes },
        closeFor,
        [organizations.acquire(consoleOf.orgId)],
      );
      const session: LiveSession = {
        console: consoleOf,
        socket: webSocket,
        flow,
        attachment: undefined,
        pending: [],
        output: [],
        flushing: false,
        lastInputAt: Date.now(),
        idleTimer: undefined,
        ended: false,
      };
      sessions.set(consoleOf.operationId, session);
      watchIdle(session);
      // Nothing to type into until the console is attached: the client waits (in TCP) meanwhile.
      flow.hold();
      webSocket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
        const bytes = messageBytes(data);
        if (session.ended || !flow.received(bytes.length)) return;
        session.lastInputAt = Date.now();
        const text = bytes.toString('utf8');
        if (session.attachment) session.attachment.input(text);
        else session.pending.push(text);
      });
      webSocket.on('close', () => end(session, CONSOLE_CLOSE.closed, 'closed'));
      webSocket.on('error', () => end(session, CONSOLE_CLOSE.closed, 'closed'));
      hypervisor
        .attachConsole({ serverId: consoleOf.vmId, name: consoleOf.vmName }, consoleOf.operationId, {
          output: (text) => queueOutput(session, text),
          ended: () => end(session, CONSOLE_CLOSE.instanceDeleted, 'instance_deleted'),
        })
        .then(
          (attachment) => {
            if (session.ended) return attachment.detach();
            session.attachment = attachment;
            for (const text of session.pending.splice(0)) attachment.input(text);
            flow.release();
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
