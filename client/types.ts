// The client's types, all derived from the generated contract types: nothing here restates a schema.
import type { components, OperationId, OperationTypes } from '../generated/index.ts';
import type { operationRoutes } from '../generated/operations.ts';

export type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];
export type ProblemFieldError = Schemas['ProblemFieldError'];
/** An asynchronous operation (`OperationRef`), as `getOperation` returns it. */
export type Operation = Schemas['OperationRef'];

type RequestOf<Id extends OperationId> = OperationTypes[Id]['request'];
// `{}` here asks whether the key may be absent: the standard way to find required keys.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];

/**
 * What an operation takes instead of parameters it has none of: a sentence, so that passing some
 * fails to compile saying so (`… is not assignable to type '"getBilling takes no query
 * parameters"'`) rather than `… is not assignable to type 'undefined'`.
 */
type NoParameters<Id extends string, Name extends string> = `${Id} takes no ${Name} parameters`;

/**
 * An option named `Name` holding `T`: absent (only the sentence above) when the operation has no
 * such parameters, optional when all of them are optional, required otherwise.
 */
type ParameterOption<Id extends string, Name extends string, T> = [keyof T] extends [never]
  ? { [K in Name]?: NoParameters<Id, Name> }
  : string extends keyof T // Record<string, never>: the operation takes none
    ? { [K in Name]?: NoParameters<Id, Name> }
    : [RequiredKeys<T>] extends [never]
      ? { [K in Name]?: T }
      : { [K in Name]: T };

/** A request body is required exactly when the operation has one. */
type BodyOption<T> = [T] extends [undefined] ? { body?: never } : { body: T };

/** The path parameters a caller passes: all of them but `org`, which the client fills in. */
export type PathParams<Id extends OperationId> = Omit<RequestOf<Id>['path'], 'org'>;

/** What `call(operationId, init)` takes for that operation. */
export type CallInit<Id extends OperationId> = ParameterOption<Id, 'path', PathParams<Id>> &
  ParameterOption<Id, 'query', RequestOf<Id>['query']> &
  BodyOption<RequestOf<Id>['body']> & {
    /** Extra request headers (`Idempotency-Key`, `X-Request-Id`, `Prefer`…); they win over the defaults. */
    headers?: Record<string, string>;
    /** Cancels the request, including a pending retry backoff. */
    signal?: AbortSignal;
  };

/** The `init` argument: optional when the operation needs nothing from the caller. */
export type CallArgs<Id extends OperationId> = [RequiredKeys<CallInit<Id>>] extends [never] ? [init?: CallInit<Id>] : [init: CallInit<Id>];

/** The body of the operation's success response (`undefined` for a `204`). */
export type SuccessBody<Id extends OperationId> = OperationTypes[Id]['success']['body'];

/** The operationIds of the list operations (`paginated: true`). */
export type PaginatedOperationId = {
  [Id in OperationId]: (typeof operationRoutes)[Id]['paginated'] extends true ? Id : never;
}[OperationId];

/** The item type of a list operation. */
export type ItemOf<Id extends PaginatedOperationId> = SuccessBody<Id> extends { items: readonly (infer Item)[] } ? Item : never;

export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 disables retries). */
  maxAttempts?: number;
  /** No retry starts once this much time has passed since the first attempt (default 30 000 ms). */
  maxElapsedMs?: number;
  /** The backoff before retry n is a random delay in [0, min(maxDelayMs, baseDelayMs·2^(n-1))] (default 500 ms). */
  baseDelayMs?: number;
  /** Default 8 000 ms. */
  maxDelayMs?: number;
}

export interface PlatformClientOptions {
  /** The server's root address, e.g. `http://127.0.0.1:8080` (paths start with `/v1/orgs/{org}`). */
  baseUrl: string;
  /**
   * The organization's uuid: fills the `org` path parameter of every call. Leave it out to use the
   * organization the credential opens (`getAccount`, asked once by the first call that needs it).
   */
  org?: string;
  /** An API key (`cpk_…`) or an OIDC access token, or a function returning one (called once per request). */
  credential: string | (() => string | Promise<string>);
  /** The fetch to use (default `globalThis.fetch`); it receives a `Request`. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers added to every request (a call's own headers win). */
  headers?: Record<string, string>;
  retry?: RetryOptions;
}

export interface WaitOptions {
  /** Rejects with `OperationTimeoutError` after this long (default 600 000 ms = 10 minutes). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called with the operation after every poll. */
  onProgress?: (operation: Operation) => void;
  /** The first pause between polls (default 500 ms); it doubles up to `maxIntervalMs` (default 5 000 ms). */
  initialIntervalMs?: number;
  maxIntervalMs?: number;
}
