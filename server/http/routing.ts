import type { NextFunction, Request, Response } from 'express';
import { methodNotAllowed } from './errors.ts';
import { fieldInvalid, notFound } from '../core/errors.ts';
import { stateOf } from './request-state.ts';
import { matchRoute } from './route-table.ts';

/** Finds the contract's operation for the request: unknown paths are 404, other methods 405. */
export function routing(req: Request, res: Response, next: NextFunction): void {
  const match = matchRoute(req.method, req.path);
  if (!match)
    throw notFound(`No route ${req.method} ${req.path}; every path starts with /v1/orgs/{org} (or is /v1/account, /healthz or /readyz).`);
  if ('allowed' in match) throw methodNotAllowed(req.method, match.allowed);
  if ('undecodable' in match) throw fieldInvalid(`/path/${match.undecodable}`, 'is not valid percent-encoded UTF-8');
  stateOf(res).route = match;
  next();
}
