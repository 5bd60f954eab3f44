import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { rateLimited } from './errors.ts';

/**
 * A fixed-window rate limit per credential (per client address when there is none), in memory:
 * each process counts its own requests. Every response carries RateLimit-Limit,
 * RateLimit-Remaining and RateLimit-Reset; past the limit, 429 with Retry-After.
 */
export function rateLimit(options: { limit: number; windowSeconds: number }) {
  const windows = new Map<string, { start: number; count: number }>();
  let lastSweep = Date.now();
  return (req: Request, res: Response, next: NextFunction): void => {
    const now = Date.now();
    const windowMs = options.windowSeconds * 1000;
    if (now - lastSweep > windowMs) {
      for (const [key, window] of windows) if (now - window.start >= windowMs) windows.delete(key);
      lastSweep = now;
    }
    const key = keyOf(req);
    let window = windows.get(key);
    if (!window || now - window.start >= windowMs) {
      window = { start: now, count: 0 };
      windows.set(key, window);
    }
    window.count += 1;
    const resetSeconds = Math.max(0, Math.ceil((window.start + windowMs - now) / 1000));
    res.setHeader('RateLimit-Limit', String(options.limit));
    res.setHeader('RateLimit-Remaining', String(Math.max(0, options.limit - window.count)));
    res.setHeader('RateLimit-Reset', String(resetSeconds));
    if (window.count > options.limit) throw rateLimited(Math.max(1, resetSeconds));
    next();
  };
}

/** The credential is hashed: the limiter never holds it in the clear. */
function keyOf(req: Request): string {
  const authorization = req.get('Authorization');
  if (authorization) return `credential:${createHash('sha256').update(authorization).digest('base64url')}`;
  return `address:${req.socket.remoteAddress ?? 'unknown'}`;
}
