import type { NextFunction, Request, Response } from 'express';
import { parse, stringify } from 'lossless-json';
import type { Pool } from '../db/pool.ts';
import { claimKey, fingerprintOf, type KeyHolder } from '../core/idempotency.ts';
import { idempotencyKeyInUse, idempotencyKeyReused } from './errors.ts';
import { stateOf } from './request-state.ts';

/**
 * The Idempotency-Key of a POST: claims it, or answers at once with the stored response
 * (`Idempotent-Replayed: true`), 409 idempotency_key_in_use or 422 idempotency_key_reused.
 * Runs after validation, so that the fingerprint is of a valid request.
 */
export function idempotency(pool: Pool, holder: KeyHolder) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const state = stateOf(res);
    const key = req.get('Idempotency-Key');
    if (!key || !state.route!.route.idempotencyKey) return next();
    const fingerprint = fingerprintOf(state.route!.operationId, state.route!.params, req.body);
    const claim = await claimKey(pool, holder, state.principal!.orgId, key, fingerprint);
    switch (claim.kind) {
      case 'claimed':
        state.idempotency = { key, claim: claim.claim };
        return next();
      case 'replay':
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(claim.status);
        if (claim.body === '') {
          res.end();
          return;
        }
        if (claim.status >= 400) {
          res.type('application/problem+json').send(problemOfThisRequest(claim.body, state.requestId));
          return;
        }
        // Stored without the newline that ends every JSON answer (send.ts): the replay is the answer as first sent.
        res.type('application/json').send(`${claim.body}\n`);
        return;
      case 'reused':
        throw idempotencyKeyReused();
      case 'in_use':
        throw idempotencyKeyInUse();
    }
  };
}

/**
 * A stored problem document as this request answers it: the same problem, with the id of this
 * request, which the contract has `request_id` match (the `X-Request-Id` this answer carries, and
 * the one its log line and audit event name).
 */
function problemOfThisRequest(stored: string, requestId: string): string {
  return `${stringify({ ...(parse(stored) as object), request_id: requestId })!}\n`;
}
