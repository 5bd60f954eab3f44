import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { parse as parseLosslessJson } from 'lossless-json';
import { fieldInvalid, notFound, validationFailed, type FieldError } from '../../server/core/errors.ts';
import { malformedJson, methodNotAllowed, problemOf, type ApiError } from '../../server/http/errors.ts';
import { matchRoute } from '../../server/http/route-table.ts';
import type { MockOperations } from './mock-operations.ts';

/**
 * A thin proxy in front of Prism that makes the mock answer as the real server does, with the
 * server's own problem documents (built by the same functions, server/http/errors.ts):
 *
 * - an unknown path is `404 not_found`, a method the path does not take `405 method_not_allowed`
 *   with `Allow` (Prism's own errors have other shapes);
 * - a body that is not JSON is `400 malformed_json` (Prism answers `{"error": …}`);
 * - a request that breaks the contract is `400 validation_failed` with one `errors` entry per
 *   failing field, as JSON Pointers like the server's (Prism answers with the operation's 422
 *   example when one is declared, and `Prefer: code=400` does not change that);
 * - `Prefer: example=<name>` alone serves that named example whatever status it belongs to
 *   (Prism looks only in the first success response); a name the operation does not have is
 *   `400 validation_failed` at `/header/Prefer`, naming the examples it has.
 *
 * A caller who names a code with `Prefer: code=…` gets Prism's answer to it unchanged.
 */
export function startMockProxy(options: { host: string; port: number; prismPort: number; operations: MockOperations }): Promise<Server> {
  const server = createServer((request, response) => {
    handle(request, response, options).catch((error: unknown) => {
      response.statusCode = 502;
      response.setHeader('content-type', 'text/plain');
      response.end(`mock proxy: Prism did not answer (${String(error)})`);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve(server));
  });
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  options: { prismPort: number; operations: MockOperations },
): Promise<void> {
  const offeredId = request.headers['x-request-id'];
  const requestId =
    typeof offeredId === 'string' && CLIENT_REQUEST_ID.test(offeredId) ? offeredId : `req_${randomBytes(12).toString('base64url')}`;
  const method = (request.method ?? 'GET').toUpperCase();
  const url = new URL(request.url ?? '/', 'http://mock');
  const body = await readBody(request);

  // The server's own route table: the same 404 and 405 (with Allow) as the server.
  const match = matchRoute(method, url.pathname);
  if (!match) {
    return sendProblem(
      response,
      requestId,
      problemOf(
        notFound(`No route ${method} ${url.pathname}; every path starts with /v1/orgs/{org} (or is /v1/account, /healthz or /readyz).`),
      ),
    );
  }
  if ('allowed' in match) return sendProblem(response, requestId, methodNotAllowed(method, match.allowed));
  if ('undecodable' in match)
    return sendProblem(response, requestId, problemOf(fieldInvalid(`/path/${match.undecodable}`, 'is not valid percent-encoded UTF-8')));
  const operation = options.operations.get(match.operationId);
  if (!operation) throw new Error(`the mock document has no operation ${match.operationId}`);

  const headers = toHeaders(request.headers);
  const prefer = parsePrefer(headers.get('prefer'));
  const hasCredential = headers.has('authorization') || operation.public;
  // The server reads the credential first, the body after: a body is judged only with a credential.
  if (hasCredential && body.length > 0 && isJson(headers.get('content-type'))) {
    const problem = malformedJsonProblem(body);
    if (problem) return sendProblem(response, requestId, problem);
  }
  if (prefer.example !== undefined) {
    const statuses = operation.examples.get(prefer.example);
    if (!statuses || (prefer.code !== undefined && !statuses.includes(prefer.code))) {
      const where = prefer.code === undefined ? '' : ` ${prefer.code}`;
      const known = [...operation.examples].map(([name, codes]) => `${name} (${codes.join(', ')})`).join(', ');
      const detail = `${operation.operationId} has no${where} example named "${prefer.example}"; its named examples: ${known}`;
      return sendProblem(response, requestId, problemOf(validationFailed([{ pointer: '/header/Prefer', detail }])));
    }
    // Prism looks for a named example only in the first success response: name the status too.
    if (prefer.code === undefined && statuses[0] !== operation.defaultStatus)
      headers.set('prefer', `${headers.get('prefer')}, code=${statuses[0]}`);
  }

  const upstream = await fetch(`http://127.0.0.1:${options.prismPort}${request.url ?? '/'}`, {
    method,
    headers,
    body: body.length > 0 ? new Uint8Array(body) : undefined,
  });
  const violations = upstream.headers.get('sl-violations');
  let status = upstream.status;
  let text = await upstream.text();
  if (violations && (status === 400 || status === 422) && prefer.code === undefined) {
    status = 400;
    text = JSON.stringify(
      problemOf(validationFailed(fieldErrorsOf(violations))).toProblem(upstream.headers.get('x-request-id') ?? requestId),
    );
  }
  upstream.headers.forEach((value, name) => {
    if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) response.setHeader(name, value);
  });
  // The server echoes the caller's request id; Prism answers with the example's.
  if (typeof offeredId === 'string' && CLIENT_REQUEST_ID.test(offeredId)) response.setHeader('x-request-id', offeredId);
  response.statusCode = status;
  response.end(text);
}

/** The server's `400 malformed_json` for a body its parser cannot read, or undefined when it can. */
function malformedJsonProblem(body: Buffer): ApiError | undefined {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(body);
  if (text.trim() === '') return undefined;
  try {
    parseLosslessJson(text);
    return undefined;
  } catch (error) {
    return malformedJson(error instanceof Error ? error.message.replace(/\.$/, '') : 'unreadable');
  }
}

/** Headers every answer of the contract carries, with the values a fresh window of the server has. */
function sendProblem(response: ServerResponse, requestId: string, error: ApiError): void {
  response.statusCode = error.status;
  response.setHeader('content-type', 'application/problem+json');
  response.setHeader('x-request-id', requestId);
  response.setHeader('ratelimit-limit', '600');
  response.setHeader('ratelimit-remaining', '599');
  response.setHeader('ratelimit-reset', '60');
  response.setHeader('access-control-allow-origin', '*');
  for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
  response.end(JSON.stringify(error.toProblem(requestId)));
}

interface Prefer {
  code?: number;
  example?: string;
}

function parsePrefer(header: string | null): Prefer {
  const prefer: Prefer = {};
  for (const part of (header ?? '').split(/[,;]/)) {
    const [name, value] = part.split('=').map((text) => text.trim().replace(/^"|"$/g, ''));
    if (name === 'code' && value) prefer.code = Number(value);
    if (name === 'example' && value) prefer.example = value;
  }
  return prefer;
}

const isJson = (contentType: string | null): boolean => /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType ?? '');

interface Violation {
  location?: string[];
  message?: string;
}

/** The violations Prism found (header `sl-violations`) as the server's field errors. */
function fieldErrorsOf(violationsHeader: string): FieldError[] {
  let violations: Violation[];
  try {
    violations = JSON.parse(violationsHeader) as Violation[];
  } catch {
    violations = [];
  }
  return violations.map((violation) => ({
    pointer: toPointer(violation.location ?? []),
    detail: violation.message ?? 'is invalid',
  }));
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
