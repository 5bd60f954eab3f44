import type { Server } from 'node:http';
import express, { type ErrorRequestHandler, type Express, type NextFunction, type Request, type Response } from 'express';
import { parse, stringify } from 'lossless-json';
import { pino } from 'pino';
import { loadConfig } from '../../server/config.ts';
import { DomainError, invalidCursor, validationFailed } from '../../server/core/errors.ts';
import { bearerCredential } from '../../server/http/authentication.ts';
import { cors } from '../../server/http/cors.ts';
import { deprecation } from '../../server/http/deprecation.ts';
import { ApiError, internalError, problemOf, problemText, unauthenticated } from '../../server/http/errors.ts';
import { jsonBody, restoreExactIntegers } from '../../server/http/json-body.ts';
import { queryLiterals } from '../../server/http/query-literals.ts';
import { stateOf } from '../../server/http/request-state.ts';
import { requestId } from '../../server/http/request-id.ts';
import { routing } from '../../server/http/routing.ts';
import { securityHeaders } from '../../server/http/security-headers.ts';
import { stages } from '../../server/http/stages.ts';
import { contractValidator, reuseOperationLookups, translateValidatorErrors } from '../../server/http/validation.ts';
import { answerForOperation } from './mock-answers.ts';
import type { MockOperations, OperationIdentity } from './mock-operations.ts';

export interface MockProxyOptions {
  prismPort: number;
  operations: MockOperations;
  /** The operations of the platform the examples' story starts, by id (mock-operations.ts). */
  story: Map<string, OperationIdentity>;
}

/**
 * The mock's HTTP face: Prism, behind the server's own request stages. A request goes through
 * the stages server/app.ts runs, in the same order (route → credential → JSON body → integer
 * query literals → contract validation), and a refused one is answered by the same functions
 * with the same problem document (status, code, title, detail, `errors[].pointer` and
 * `errors[].detail`) as the server's, with a fresh request id: the same by construction, not by
 * translating Prism's own errors. Prism sees only requests the server would have accepted, and
 * only chooses the answer (mock-document.ts takes its own request checks away).
 *
 * Where the mock differs from the server, by design:
 * - any `Bearer` credential opens any organization (no key to create first); no `Authorization`
 *   header, or one that is not `Bearer`, is the server's `401`;
 * - it keeps no state, so it refuses nothing the server refuses by looking at its data (a name
 *   taken, an unknown image): `Prefer` serves those answers on demand;
 * - a list accepts only the cursors its own examples hand out (`next_cursor`); any other is the
 *   server's `400 invalid_cursor`. The page such a cursor names is the last (`next_cursor` null);
 * - `Prefer: example=<name>` serves that named example whatever status it belongs to (Prism looks
 *   only in the first success response); a name the operation does not have is
 *   `400 validation_failed` at `/header/Prefer`, naming the examples it has;
 * - an operation of the platform read or cancelled by id is answered as that operation
 *   (mock-answers.ts), whichever example was served.
 */
export function mockApp(options: MockProxyOptions): Express {
  const { rateLimit } = loadConfig({});
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(
    stages(
      requestId(pino({ level: 'silent' })),
      securityHeaders({ https: false }),
      cors,
      freshRateLimitWindow(rateLimit.anonymousLimit, rateLimit.windowSeconds),
      routing,
      deprecation,
      anyBearerCredential,
      freshRateLimitWindow(rateLimit.limit, rateLimit.windowSeconds),
      jsonBody,
      queryLiterals,
      ...reuseOperationLookups(contractValidator({ validateResponses: false })),
    ),
  );
  app.use(translateValidatorErrors);
  app.use(stages(restoreExactIntegers, issuedCursorsOnly(options.operations), preferredExample(options.operations), prism(options)));
  app.use(answerProblem);
  return app;
}

export function startMockProxy(options: MockProxyOptions & { host: string; port: number }): Promise<Server> {
  const app = mockApp(options);
  return new Promise((resolve, reject) => {
    const server = app.listen(options.port, options.host, (error?: Error) => (error ? reject(error) : resolve(server)));
  });
}

/** The server's `authenticate` stage with any Bearer credential taken as valid. */
function anyBearerCredential(req: Request, res: Response, next: NextFunction): void {
  if (stateOf(res).route!.route.scope !== 'none' && bearerCredential(req) === undefined) throw unauthenticated();
  next();
}

/** The rate-limit headers of a window just begun: the mock never refuses a request for its rate. */
function freshRateLimitWindow(limit: number, windowSeconds: number) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('RateLimit-Limit', String(limit));
    res.setHeader('RateLimit-Remaining', String(limit - 1));
    res.setHeader('RateLimit-Reset', String(windowSeconds));
    next();
  };
}

/** A cursor is one the list handed out (its examples' `next_cursor`), as on the server; any other is `400 invalid_cursor`. */
function issuedCursorsOnly(operations: MockOperations) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const cursor = (req.query as { cursor?: unknown }).cursor;
    if (typeof cursor === 'string' && !operationOf(operations, res).cursors.has(cursor)) throw invalidCursor();
    next();
  };
}

interface Prefer {
  code?: number;
  example?: string;
}

/** Checks `Prefer: example=<name>`, and names the status it belongs to when Prism would not look there. */
function preferredExample(operations: MockOperations) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const prefer = parsePrefer(req.get('Prefer'));
    if (prefer.example !== undefined) {
      const operation = operationOf(operations, res);
      const statuses = operation.examples.get(prefer.example);
      if (!statuses || (prefer.code !== undefined && !statuses.includes(prefer.code))) {
        const where = prefer.code === undefined ? '' : ` ${prefer.code}`;
        const known = [...operation.examples].map(([name, codes]) => `${name} (${codes.join(', ')})`).join(', ');
        const detail = `${operation.operationId} has no${where} example named "${prefer.example}"; its named examples: ${known}`;
        throw validationFailed([{ pointer: '/header/Prefer', detail }]);
      }
      // Prism looks for a named example only in the first success response: name the status too.
      if (prefer.code === undefined && statuses[0] !== operation.defaultStatus) {
        req.headers.prefer = `${req.get('Prefer')}, code=${statuses[0]}`;
      }
    }
    next();
  };
}

function parsePrefer(header: string | undefined): Prefer {
  const prefer: Prefer = {};
  for (const part of (header ?? '').split(/[,;]/)) {
    const [name, value] = part.split('=').map((text) => text.trim().replace(/^"|"$/g, ''));
    if (name === 'code' && value) prefer.code = Number(value);
    if (name === 'example' && value) prefer.example = value;
  }
  return prefer;
}

function operationOf(operations: MockOperations, res: Response) {
  const { operationId } = stateOf(res).route!;
  const operation = operations.get(operationId);
  if (!operation) throw new Error(`the mock document has no operation ${operationId}`);
  return operation;
}

/** Prism's own headers, or ones this proxy writes itself (stages above, and the body's own). */
const NOT_FORWARDED = /^(?:access-control-|ratelimit-|sl-|x-request-id$|content-length$|transfer-encoding$|connection$|keep-alive$|date$)/i;

/** Asks Prism for the answer to a request the stages above accepted, and sends it as the server would. */
function prism({ prismPort, story }: MockProxyOptions) {
  return async (req: Request, res: Response): Promise<void> => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || ['host', 'connection', 'content-length', 'transfer-encoding'].includes(name)) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
    }
    // The body as the stages read it, its big integers exact.
    const body = req.body === undefined ? undefined : stringify(req.body);
    if (body !== undefined) headers.set('content-type', 'application/json');
    const upstream = await fetch(`http://127.0.0.1:${prismPort}${req.originalUrl}`, { method: req.method, headers, body }).catch(
      (error: unknown) => {
        throw new PrismUnreachable(error);
      },
    );
    upstream.headers.forEach((value, name) => {
      if (!NOT_FORWARDED.test(name) && !res.hasHeader(name)) res.setHeader(name, value);
    });
    res.status(upstream.status);
    const text = await upstream.text();
    const mediaType = (upstream.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (text === '' || !/^application\/(?:[\w.+-]+\+)?json$/i.test(mediaType)) {
      res.end(text);
      return;
    }
    let answer = parse(text);
    // A problem names the request it answers, not the example's.
    if (upstream.status >= 400 && isObject(answer) && 'request_id' in answer) answer = { ...answer, request_id: stateOf(res).requestId };
    if (upstream.status < 300) answer = answerForOperation(stateOf(res).route!, answer, story);
    // The page a cursor names is the list's last: an example hands out one cursor, and the page it
    // named handed out the same one again, so a client paging to the end never got there.
    if (upstream.status < 300 && typeof req.query.cursor === 'string' && isObject(answer) && 'next_cursor' in answer)
      answer = { ...answer, next_cursor: null };
    // A newline ends every JSON answer, as on the server (server/http/send.ts).
    res.type(mediaType).send(`${stringify(answer)}\n`);
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

class PrismUnreachable extends Error {
  constructor(cause: unknown) {
    super(`mock proxy: Prism did not answer (${String(cause)})`);
  }
}

/** The server's error handler (server/http/error-handler.ts) for a process with no database to record refusals in. */
const answerProblem: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
  if (res.headersSent) return void res.end();
  if (error instanceof PrismUnreachable) {
    res.status(502).type('text/plain').send(`${error.message}\n`);
    return;
  }
  const apiError = error instanceof ApiError ? error : error instanceof DomainError ? problemOf(error) : internalError();
  if (apiError.status === 500) console.error('mock proxy: request failed', error);
  for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
  res
    .status(apiError.status)
    .type('application/problem+json')
    .send(problemText(apiError.toProblem(stateOf(res).requestId)));
};
