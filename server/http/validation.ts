import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { CONTRACT_PATH, contractText } from '../core/contract-document.ts';
import { skipContractInIdScan } from './contract-id-scan.ts';
import { compileSpecCheckOnUse } from './spec-check-on-use.ts';
import { ApiError } from './errors.ts';
import { stateOf } from './request-state.ts';
import { isRfc3339DateTime } from '../core/date-time-format.ts';
import { http } from '../node-http.ts';
import { validationFailed, type FieldError } from '../core/errors.ts';

/**
 * express-openapi-validator, set up in one place: every request is checked against the contract
 * (parameters, headers, body; unknown query parameters and body fields refused, nothing coerced
 * in bodies), and every response too unless switched off. Security is checked by our own
 * middleware, which knows API keys and OIDC tokens.
 */
export function contractValidator(options: { validateResponses: boolean }): RequestHandler[] {
  // Compiling the contract costs most of a second of CPU: made once per process and setting,
  // whatever number of platforms the process starts (the tests start one per file).
  let validator = compiledValidators.get(options.validateResponses);
  if (!validator) {
    validator = compileValidator(options);
    compiledValidators.set(options.validateResponses, validator);
  }
  return validator;
}

const compiledValidators = new Map<boolean, RequestHandler[]>();

function compileValidator(options: { validateResponses: boolean }): RequestHandler[] {
  skipContractInIdScan(contractText());
  compileSpecCheckOnUse();
  return OpenApiValidator.middleware({
    // A path, not the parsed document: the validator dereferences a copy of its own either way,
    // and a document given it is deep-cloned first (lodash.cloneDeep of 0.8 MB, 35 to 80 ms of a
    // start), where a file is read and parsed once.
    apiSpec: CONTRACT_PATH,
    // Checked where it is made (spec:lint, generate:check); see spec-check-on-use.ts.
    validateApiSpec: false,
    validateRequests: {
      // Every failing field is reported, not just the first.
      allErrors: true,
      allowUnknownQueryParameters: false,
      // false: bodies are never coerced ("100" stays a string and is refused where an integer
      // is due); path, query and header parameters are still read from their strings.
      coerceTypes: false,
      removeAdditional: false,
    },
    validateResponses: options.validateResponses ? { removeAdditional: false, coerceTypes: false } : false,
    validateSecurity: false,
    validateFormats: true,
    formats: { 'date-time': { type: 'string', validate: isRfc3339DateTime } },
    ignoreUndocumented: true,
    $refParser: { mode: 'dereference' },
  });
}

/** What express-openapi-validator puts on `req.openapi` once it has found the request's operation. */
type OperationLookup = Record<string, unknown> & { openApiRoute: string; pathParams: Record<string, string> };

/**
 * express-openapi-validator 5.6 finds a request's operation by compiling the path pattern of every
 * operation of the contract with path-to-regexp, on every request, until one matches: about a
 * sixth of the CPU of a GET one instance here (upstream, PR #1217 caches the compiled patterns).
 * Our router (routing.ts) has already found the operation by then, so the validator's answer for an
 * operation is kept from its first request and reused on the next ones with the path parameters
 * the router decoded: the same schemas, checked by the validator's own request and response
 * validators as before. An operation whose answer names another path than the router's is never
 * reused (its lookup stays the validator's own), nor is any request the router did not match.
 */
export function reuseOperationLookups(contract: RequestHandler[]): RequestHandler[] {
  return contract.map((middleware) => (middleware.name === 'metadataMiddleware' ? reusingLookups(middleware) : middleware));
}

function reusingLookups(validatorLookup: RequestHandler): RequestHandler {
  const lookups = new Map<string, OperationLookup>();
  return function metadataMiddleware(req, res, next) {
    const route = stateOf(res).route;
    const known = route && lookups.get(route.operationId);
    const request = req as typeof req & { openapi?: OperationLookup };
    if (route && known) {
      request.openapi = { ...known, pathParams: route.params };
      req.params = route.params;
      next();
      return;
    }
    return validatorLookup(req, res, (error?: unknown) => {
      const found = request.openapi;
      if (error === undefined && route && found && found.openApiRoute === route.route.path && sameParams(found.pathParams, route.params)) {
        lookups.set(route.operationId, { ...found });
      }
      next(error);
    });
  };
}

function sameParams(found: Record<string, string>, routed: Record<string, string>): boolean {
  const names = Object.keys(routed);
  return Object.keys(found).length === names.length && names.every((name) => found[name] === routed[name]);
}

/**
 * Has the validator load the contract and build its schemas now rather than on a client's first
 * request (about 0.3 s of work): one GET /healthz is passed through the same middlewares, on a
 * loopback port of a throw-away app, while the server waits for its database. Never fails: a
 * validator that cannot load the contract says so on the first real request instead.
 * The validator's path-parameter hook is left out: it installs itself on the first app it sees,
 * and belongs to the real one.
 */
export function warmUpContractValidator(middlewares: RequestHandler[]): Promise<void> {
  let warming = warmUps.get(middlewares);
  if (!warming) {
    warming = warmUp(middlewares);
    warmUps.set(middlewares, warming);
  }
  return warming;
}

/** Validators warmed up or warming: once each (contractValidator shares one per setting). */
const warmUps = new WeakMap<RequestHandler[], Promise<void>>();

async function warmUp(middlewares: RequestHandler[]): Promise<void> {
  const app = express();
  app.use(middlewares.filter((middleware) => middleware.name !== 'pathParamsMiddleware'));
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.use(((_error, _req, res, _next) => void res.status(500).end()) as ErrorRequestHandler);
  let server: Server | undefined;
  try {
    server = await new Promise<Server>((resolve, reject) => {
      const listening = app.listen(0, '127.0.0.1', (error?: Error) => (error ? reject(error) : resolve(listening)));
    });
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      http
        .get({ host: '127.0.0.1', port, path: '/healthz' }, (response) =>
          response
            .resume()
            .on('end', resolve)
            .on('error', () => resolve()),
        )
        .on('error', () => resolve());
    });
  } catch {
    // A warm-up only.
  } finally {
    server?.close();
  }
}

interface ValidatorError {
  status?: number;
  path?: string;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
}

/**
 * The validator's errors as problems: a request that breaks the contract is
 * `400 validation_failed` with one JSON Pointer per failing field; a response that breaks it is
 * our bug, so it becomes the fixed `500 internal_error` (and is logged by the final handler).
 */
export const translateValidatorErrors: ErrorRequestHandler = (error: unknown, _req, _res, next) => {
  const candidate = error as ValidatorError & Error;
  if (!candidate || typeof candidate !== 'object' || !Array.isArray(candidate.errors) || typeof candidate.status !== 'number')
    return next(error);
  if (candidate.status === 500 || candidate.errors.some((item) => item.path?.startsWith('/response'))) {
    return next(new ResponseContractError(candidate.message));
  }
  if (candidate.status === 415) return next(new ApiError(415, 'unsupported_media_type', 'Unsupported media type', candidate.message));
  const fieldErrors: FieldError[] = candidate.errors.map((item) => ({
    pointer: toPointer(item.path ?? ''),
    detail: item.message ?? 'is invalid',
  }));
  next(validationFailed(dedupe(fieldErrors)));
};

/** A response did not match the contract. */
export class ResponseContractError extends Error {}

/** The validator's paths (`/body/labels/env`, `/query/limit`, `/params/vm_id`, `/headers/idempotency-key`) as pointers. */
function toPointer(validatorPath: string): string {
  const [, where, ...rest] = validatorPath.split('/');
  const tail = rest.join('/');
  switch (where) {
    case 'body':
      return rest.length > 0 ? `/${tail}` : '';
    case 'params':
      return `/path/${tail}`;
    case 'headers':
      return `/header/${tail}`;
    case 'query':
      return `/query/${tail}`;
    default:
      return validatorPath;
  }
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.pointer}\u0000${error.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
