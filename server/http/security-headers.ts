import type { NextFunction, Request, Response } from 'express';

/**
 * Headers a careful JSON API sends on every answer, errors included:
 * - `Cache-Control: no-store`: answers carry account data, and some carry a secret shown once
 *   (an API key, an S3 secret key); no browser, proxy or CDN may keep them;
 * - `X-Content-Type-Options: nosniff`: a JSON body is never read as a script or a page;
 * - `Content-Security-Policy` and `X-Frame-Options`: should a body be opened as a document, it
 *   may load nothing and be framed by no one;
 * - `Referrer-Policy: no-referrer`;
 * - `Strict-Transport-Security` when the API is served over HTTPS (PUBLIC_BASE_URL).
 */
export function securityHeaders(options: { https: boolean }) {
  const headers = securityHeaderList(options);
  return (_req: Request, res: Response, next: NextFunction): void => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}

/** The headers themselves, also written on answers made outside Express (client-errors.ts). */
export function securityHeaderList(options: { https: boolean }): Array<[string, string]> {
  return [
    ['Cache-Control', 'no-store'],
    ['X-Content-Type-Options', 'nosniff'],
    ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
    ['X-Frame-Options', 'DENY'],
    ['Referrer-Policy', 'no-referrer'],
    ...(options.https ? ([['Strict-Transport-Security', 'max-age=31536000']] as Array<[string, string]>) : []),
  ];
}
