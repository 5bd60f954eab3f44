import type { NextFunction, Request, Response } from 'express';

const EXPOSED = [
  'X-Request-Id',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'Idempotent-Replayed',
  'Allow',
];

/**
 * Browsers may call the API from any origin: it uses bearer credentials, never cookies, so no
 * origin gains anything a script could not do with the same credential. Preflights are answered
 * here, before authentication (browsers send them without credentials).
 */
export function cors(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', EXPOSED.join(', '));
  if (req.method === 'OPTIONS' && req.get('Access-Control-Request-Method')) {
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE');
    res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Idempotency-Key, X-Request-Id');
    res.setHeader('Access-Control-Max-Age', '600');
    res.status(204).end();
    return;
  }
  next();
}
