import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging.ts';
import type { Metrics } from '../metrics.ts';
import { stateOf, type RequestState } from './request-state.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const ID_BYTES = 12;
/** Random bytes for this many ids are drawn at once: one call into OpenSSL per 512 requests, not one per request. */
const POOL_IDS = 512;
let pool = Buffer.alloc(0);
let offset = 0;

/** A new request id: 12 random bytes (96 bits), base64url. */
export function newRequestId(): string {
  if (offset >= pool.length) {
    pool = randomBytes(ID_BYTES * POOL_IDS);
    offset = 0;
  }
  offset += ID_BYTES;
  return `req_${pool.toString('base64url', offset - ID_BYTES, offset)}`;
}

/**
 * Gives every request an id (the client's `X-Request-Id` when it is well-formed, else a new one),
 * echoes it in the `X-Request-Id` response header, and logs one line per request when the
 * response is finished: never a header or a body, so never a credential.
 */
export function requestId(log: Logger, metrics?: Metrics) {
  // The request line holds only the fields below, none of which can be a secret: pino's redaction
  // has nothing to find there, and costs a pass over every line.
  const requestLines = log.child({}, { redact: [] });
  return (req: Request, res: Response, next: NextFunction): void => {
    const offered = req.get('X-Request-Id');
    const id = offered && CLIENT_REQUEST_ID.test(offered) ? offered : newRequestId();
    const state = stateOf(res);
    state.requestId = id;
    state.startedAt = performance.now();
    defineRequestLogger(state, log);
    res.setHeader('X-Request-Id', id);
    res.on('finish', () => {
      const seconds = (performance.now() - state.startedAt) / 1000;
      metrics?.requestAnswered(state.route?.operationId ?? 'none', req.method, res.statusCode, seconds);
      requestLines.info(
        {
          request_id: id,
          method: req.method,
          route: state.route?.route.path ?? null,
          operation: state.route?.operationId ?? null,
          org_id: state.principal?.orgId ?? null,
          status: res.statusCode,
          duration_ms: Math.round(seconds * 10_000) / 10,
        },
        'request',
      );
    });
    next();
  };
}

/**
 * `state.log`: a logger whose lines carry the request id, and the organization once the credential
 * is known. Made when first used, and made again once the organization is known: most requests
 * log nothing but their request line, and a child logger costs as much to make as a line.
 */
function defineRequestLogger(state: RequestState, log: Logger): void {
  let logger: Logger | undefined;
  let loggedOrgId: string | undefined;
  Object.defineProperty(state, 'log', {
    configurable: true,
    enumerable: true,
    get(): Logger {
      const orgId = state.principal?.orgId;
      if (logger === undefined || loggedOrgId !== orgId) {
        logger = log.child(orgId === undefined ? { request_id: state.requestId } : { request_id: state.requestId, org_id: orgId });
        loggedOrgId = orgId;
      }
      return logger;
    },
  });
}
