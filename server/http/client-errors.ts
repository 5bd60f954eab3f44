import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../logging.ts';
import { ApiError, problemText } from './errors.ts';
import type { RateLimits } from './rate-limit.ts';
import { securityHeaderList } from './security-headers.ts';

/**
 * Requests Node's HTTP parser refuses never reach Express: a raw byte in the path, a broken
 * request line, a head above Node's 16 KiB, a head that is not finished in time. Node would answer
 * them with a bare status and no body; this answers a problem document like any other error, with
 * the same security headers, and closes the connection (what follows on it cannot be framed).
 */
export function answerClientErrors(
  server: Server,
  log: Logger,
  options: { https: boolean; rateLimits: Pick<RateLimits, 'headersForUnparsed'> },
): void {
  const headers = securityHeaderList(options);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Node's own default: nothing to answer on a reset socket, or once a response has begun.
    const responseStarted = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === 'ECONNRESET' || !socket.writable || responseStarted) {
      socket.destroy();
      return;
    }
    const apiError = problemFor(error.code);
    const requestId = `req_${randomBytes(12).toString('base64url')}`;
    // The parser's error only: the raw packet may hold a credential.
    log.info({ request_id: requestId, status: apiError.status, reason: error.code ?? 'unknown' }, 'unparseable request refused');
    const body = problemText(apiError.toProblem(requestId));
    const head = [
      `HTTP/1.1 ${apiError.status} ${apiError.title}`,
      'Content-Type: application/problem+json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      ...[...headers, ...options.rateLimits.headersForUnparsed(socket as Socket), ['Access-Control-Allow-Origin', '*']].map(
        ([name, value]) => `${name}: ${value}`,
      ),
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
}

function problemFor(parserCode: string | undefined): ApiError {
  switch (parserCode) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        431,
        'request_headers_too_large',
        'Request Header Fields Too Large',
        'The request line and headers exceed 16 KiB.',
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'request_timeout', 'Request Timeout', 'The request was not received in time.');
    default:
      return new ApiError(
        400,
        'malformed_request',
        'Bad Request',
        'The request is not valid HTTP/1.1: its request line or headers could not be parsed.',
      );
  }
}
