import type { NextFunction, Request, Response } from 'express';
import type { OperationRoute } from '../../generated/operations.ts';
import { stateOf } from './request-state.ts';

/**
 * The headers every answer of a deprecated operation carries (the contract's versioning policy):
 * `Deprecation` (RFC 9745: `@` and the Unix time it was deprecated) and `Sunset` (RFC 8594: the
 * HTTP date after which it may be removed). The dates come from the contract (`x-deprecated-at`,
 * `x-sunset`), through the generated route table.
 */
export function deprecationHeaders(route: OperationRoute): Record<string, string> {
  if (!route.deprecation) return {};
  const deprecatedAt = Date.parse(`${route.deprecation.deprecatedAt}T00:00:00Z`);
  const sunset = Date.parse(`${route.deprecation.sunset}T00:00:00Z`);
  return { Deprecation: `@${Math.floor(deprecatedAt / 1000)}`, Sunset: new Date(sunset).toUTCString() };
}

/** Runs after routing, so that every answer of the operation says it, refusals included. */
export function deprecation(_req: Request, res: Response, next: NextFunction): void {
  const route = stateOf(res).route?.route;
  if (route) for (const [name, value] of Object.entries(deprecationHeaders(route))) res.setHeader(name, value);
  next();
}
