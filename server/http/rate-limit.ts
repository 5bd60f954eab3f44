import type { Socket } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { rateLimited } from './errors.ts';
import { stateOf } from './request-state.ts';
import { WindowCounter } from '../core/window-counter.ts';

export interface RateLimitOptions {
  /** Requests per window for one verified credential. */
  limit: number;
  /** Requests per window from one client address that carry no verified credential. */
  anonymousLimit: number;
  windowSeconds: number;
}

/**
 * Rate limits in two stages.
 *
 * `byAddress` runs before anything else reads the request: every request counts against its
 * client address, so requests without a valid credential (junk or guessed keys, unknown routes)
 * are limited per address, whatever their Authorization header says, and cost no database work
 * once the address is over its budget; only a credential this process already verified passes
 * then (`isKnownCredential`).
 *
 * `byCredential` runs once the credential is verified: the request is taken back from the
 * address and counted against the credential itself (the API key's id, or the token's issuer
 * and subject), so the spelling of the header (`bearer`, extra spaces) changes nothing.
 *
 * Every answer carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset of the budget it
 * was counted against; past it, 429 rate_limited with Retry-After.
 */
export type RateLimits = ReturnType<typeof createRateLimits>;

export function createRateLimits(
  options: RateLimitOptions,
  /**
   * Whether the request carries a credential already verified, at no database cost: such a request
   * passes an address over its budget, to be counted against its credential instead. Clients
   * sharing an address (behind a NAT, on a CI runner) that guess keys or call without one then
   * cannot lock out a valid key, while a guessed or unknown key is still refused before any lookup.
   */
  isKnownCredential: (req: Request) => boolean = () => false,
) {
  const windowMs = options.windowSeconds * 1000;
  const addresses = new WindowCounter(windowMs);
  const credentials = new WindowCounter(windowMs);

  /** The budget's headers; past it, 429 unless `refuse` is false. */
  const apply = (res: Response, limit: number, { count, resetMs }: { count: number; resetMs: number }, refuse = true): void => {
    const resetSeconds = Math.max(0, Math.ceil(resetMs / 1000));
    res.setHeader('RateLimit-Limit', String(limit));
    res.setHeader('RateLimit-Remaining', String(Math.max(0, limit - count)));
    res.setHeader('RateLimit-Reset', String(resetSeconds));
    if (refuse && count > limit) throw rateLimited(Math.max(1, resetSeconds));
  };

  const addressOf = (req: Request): string => `address:${req.socket.remoteAddress ?? 'unknown'}`;

  return {
    byAddress: (req: Request, res: Response, next: NextFunction): void => {
      const counted = addresses.hit(addressOf(req));
      // A known credential passes; byCredential then takes the request back from the address and
      // counts it against the credential, whose headers replace these (a route that takes no
      // credential keeps the address's).
      apply(res, options.anonymousLimit, counted, !(counted.count > options.anonymousLimit && isKnownCredential(req)));
      next();
    },

    /**
     * For a request Node's parser refused (client-errors.ts): it counts against its address like
     * any other, and its answer carries the same headers. Never refused here: it is refused anyway.
     */
    headersForUnparsed: (socket: Socket): Array<[string, string]> => {
      const { count, resetMs } = addresses.hit(`address:${socket.remoteAddress ?? 'unknown'}`);
      return [
        ['RateLimit-Limit', String(options.anonymousLimit)],
        ['RateLimit-Remaining', String(Math.max(0, options.anonymousLimit - count))],
        ['RateLimit-Reset', String(Math.max(0, Math.ceil(resetMs / 1000)))],
      ];
    },

    byCredential: (req: Request, res: Response, next: NextFunction): void => {
      const principal = stateOf(res).principal;
      // An operation without a credential stays counted against its address.
      if (!principal) return next();
      addresses.refund(addressOf(req));
      const key = principal.tokenId ? `key:${principal.tokenId}` : `token:${principal.realm}\u0000${principal.subject}`;
      apply(res, options.limit, credentials.hit(key));
      next();
    },
  };
}
