// Requests exactly as written, for what fetch would refuse or normalise: broken percent-encoding,
// bodies that are not UTF-8, a body larger than the server reads, several requests on one socket.
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One request with node:http, the path sent as given. */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: Buffer | string,
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/**
 * Writes `text` to a new TCP connection and collects everything the server sends until it closes
 * the connection or `idleMs` pass without data. For keep-alive and pipelining behaviour.
 */
export function rawExchange(
  baseUrl: string,
  chunks: Array<string | Buffer>,
  idleMs = 1500,
): Promise<{ received: string; closedByServer: boolean }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ received, closedByServer });
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(false), idleMs);
    };
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
      arm();
    });
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      arm();
    });
    socket.on('end', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' || error.code === 'EPIPE' ? finish(true) : reject(error),
    );
  });
}
