import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/**
 * A thin proxy in front of Prism that makes invalid requests look as they do on the real server.
 * Prism answers a request that breaks the contract with the operation's 422 example when one is
 * declared (every POST declares 422 for `idempotency_key_reused`), and `Prefer: code=400` does not
 * change that; the server answers `400 validation_failed`. The proxy answers such requests with
 * the server's 400 problem, its `errors` made from the violations Prism found (header
 * `sl-violations`) as JSON Pointers like the server's. A caller who names a code with
 * `Prefer: code=…` gets Prism's answer unchanged.
 */
export function startMockProxy(options: { host: string; port: number; prismPort: number }): Promise<Server> {
  const server = createServer(async (request, response) => {
    try {
      const body = await readBody(request);
      const forward = (headers: Headers) =>
        fetch(`http://127.0.0.1:${options.prismPort}${request.url ?? '/'}`, {
          method: request.method,
          headers,
          body: body.length > 0 ? new Uint8Array(body) : undefined,
        });
      const headers = toHeaders(request.headers);
      const upstream = await forward(headers);
      const violations = upstream.headers.get('sl-violations');
      const choseCode = /\bcode=/.test(headers.get('prefer') ?? '');
      let status = upstream.status;
      let text = await upstream.text();
      if (violations && (status === 400 || status === 422) && !choseCode) {
        status = 400;
        text = validationProblem(violations, upstream.headers.get('x-request-id') ?? 'req_mock');
      }
      upstream.headers.forEach((value, name) => {
        if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) response.setHeader(name, value);
      });
      response.statusCode = status;
      response.end(text);
    } catch (error) {
      response.statusCode = 502;
      response.setHeader('content-type', 'text/plain');
      response.end(`mock proxy: Prism did not answer (${String(error)})`);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve(server));
  });
}

interface Violation {
  location?: string[];
  message?: string;
}

/** The server's `400 validation_failed` problem for these violations. */
function validationProblem(violationsHeader: string, requestId: string): string {
  let violations: Violation[];
  try {
    violations = JSON.parse(violationsHeader);
  } catch {
    violations = [];
  }
  const errors = violations.map((violation) => ({
    pointer: toPointer(violation.location ?? []),
    detail: violation.message ?? 'is invalid',
  }));
  return JSON.stringify({
    type: 'https://docs.cloudplatform.dev/errors/validation_failed',
    title: 'Request validation failed',
    status: 400,
    detail: `The request has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}; see errors.`,
    code: 'validation_failed',
    request_id: requestId,
    errors,
  });
}

/** Prism's location (`['request', 'body', 'labels', 'env']`) as the server's pointer (`/labels/env`). */
function toPointer(location: string[]): string {
  const [, where, ...rest] = location;
  const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');
  if (where === 'body') return rest.map((segment) => `/${escape(segment)}`).join('');
  return `/${[where ?? 'request', ...rest].map(escape).join('/')}`;
}

function readBody(request: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function toHeaders(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || ['host', 'connection', 'content-length'].includes(name)) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}
