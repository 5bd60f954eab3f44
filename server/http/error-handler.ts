import type { NextFunction, Request, Response } from 'express';
import type { Pool } from '../db/pool.ts';
import { DomainError } from '../core/errors.ts';
import { completeKey, releaseKey } from '../core/idempotency.ts';
import {
  CONFLICT_RETRY_AFTER_SECONDS,
  DATABASE_RETRY_AFTER_SECONDS,
  isConcurrencyConflict,
  isDatabaseUnavailable,
  withinMs,
} from '../db/unavailable.ts';
import { PermanentBackendError, TransientBackendError } from '../drivers/errors.ts';
import { ApiError, internalError, problemOf, problemText, serviceUnavailable } from './errors.ts';
import { stateOf } from './request-state.ts';
import { ResponseContractError } from './validation.ts';

/** How long an error answer waits for its audit event and idempotency record. */
const BOOKKEEPING_WAIT_MS = 1_000;

/**
 * The one place every error becomes a response: an ApiError is its problem document; anything
 * else is logged and answered with the fixed 500 problem, disclosing nothing. A write by a known
 * caller leaves its audit event (denied or failed), and its Idempotency-Key keeps a 4xx answer
 * for replay but is released after a 5xx, so that a retry runs again.
 */
export function errorHandler(pool: Pool) {
  return async (error: unknown, req: Request, res: Response, _next: NextFunction): Promise<void> => {
    const state = stateOf(res);
    const log = state.log;
    let apiError: ApiError;
    if (error instanceof ApiError) {
      apiError = error;
    } else if (error instanceof DomainError) {
      apiError = problemOf(error);
    } else if (isBodyParserError(error)) {
      apiError = new ApiError(400, 'malformed_json', 'Malformed JSON body', 'The request body could not be read.');
    } else if (error instanceof TransientBackendError || error instanceof PermanentBackendError) {
      // A backend the request itself needed failed: nothing was changed, and a retry may work.
      log?.warn({ reason: error.message }, 'a backend call of the request failed');
      apiError = serviceUnavailable(
        5,
        `The ${error.backend} could not be reached; nothing was changed. Retry after the Retry-After delay.`,
      );
    } else if (isConcurrencyConflict(error)) {
      log?.warn({ reason: (error as Error).message }, 'the request collided with a concurrent transaction; answered 503');
      apiError = serviceUnavailable(
        CONFLICT_RETRY_AFTER_SECONDS,
        'The request collided with a concurrent change and was rolled back; nothing was changed. Retry after the Retry-After delay.',
      );
    } else if (isDatabaseUnavailable(error)) {
      log?.warn({ reason: (error as Error).message }, 'the database is unavailable; answered 503');
      apiError = serviceUnavailable(DATABASE_RETRY_AFTER_SECONDS);
    } else {
      log?.error({ err: error, contract: error instanceof ResponseContractError }, 'request failed');
      apiError = internalError();
    }
    const problem = apiError.toProblem(state.requestId ?? 'req_unknown');
    // Bounded: with the database down or frozen, the answer goes without waiting for the record.
    const recorded = bookkeeping(pool, req, res, apiError, problem).catch((bookkeepingError: unknown) =>
      log?.warn({ err: bookkeepingError }, 'recording a failed request failed'),
    );
    await withinMs(BOOKKEEPING_WAIT_MS, recorded);
    if (res.headersSent) return void res.end();
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    // Written directly rather than through the response validator: a problem document is the
    // same shape everywhere, and statuses such as 405 or 415 belong to no operation.
    res.status(apiError.status).type('application/problem+json').send(problemText(problem));
  };
}

/** The refused write's Idempotency-Key and audit event. */
async function bookkeeping(pool: Pool, req: Request, res: Response, error: ApiError, problem: object): Promise<void> {
  const state = stateOf(res);
  const principal = state.principal;
  if (!principal || !state.route || req.method === 'GET') return;
  if (state.idempotency) {
    if (error.status >= 500) await releaseKey(pool, principal.orgId, state.idempotency);
    else await completeKey(pool, principal.orgId, state.idempotency, error.status, problem);
  }
  await state.audit?.refused(pool, req.method, error);
}

function isBodyParserError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { type?: string }).type === 'entity.parse.failed';
}
