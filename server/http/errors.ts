import type { components } from '../../generated/openapi.ts';
import type { DomainError } from '../core/errors.ts';
import { MAX_FIELD_ERRORS, type FieldError, type RefusalKind } from '../core/errors.ts';

export type Problem = components['schemas']['Problem'];

/**
 * An error of the HTTP exchange, answered with a problem document. Refusals of the rules are
 * DomainErrors (core/errors.ts), mapped by `problemOf`; anything else becomes `500 internal_error`
 * with a fixed phrase.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly fieldErrors?: FieldError[];
  /** Extra response headers, such as Retry-After. */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    title: string,
    detail: string,
    fieldErrors?: FieldError[],
    headers: Record<string, string> = {},
  ) {
    super(`${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.title = title;
    this.detail = detail;
    this.fieldErrors = fieldErrors;
    this.headers = headers;
  }

  /**
   * The problem document, within the bounds of the contract's `Problem` schema whatever the
   * error holds: at most MAX_FIELD_ERRORS entries (the detail says how many there were), and
   * every text one line of bounded length (a control character, which may come from the
   * request itself, is written as a visible `\uXXXX`).
   */
  toProblem(requestId: string): Problem {
    const fieldErrors = (this.fieldErrors ?? []).slice(0, MAX_FIELD_ERRORS).map((error) => ({
      pointer: boundedPointer(error.pointer),
      detail: boundedText(error.detail, 500),
    }));
    return {
      type: `https://docs.cloudplatform.dev/errors/${this.code}`,
      title: boundedText(this.title, 200),
      status: this.status,
      detail: boundedText(this.detail, 2000),
      code: this.code,
      request_id: requestId,
      ...(fieldErrors.length > 0 ? { errors: fieldErrors } : {}),
    };
  }
}

/**
 * A problem document as it goes on the wire. Every JSON answer ends with a newline (send.ts does
 * the same for the others), so that answers printed one after another, as curl does, keep to
 * lines of their own.
 */
export const problemText = (problem: Problem): string => `${JSON.stringify(problem)}\n`;

const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;
const visible = (text: string): string =>
  text.replace(CONTROL_CHARACTERS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** One line of at most `maxLength` characters, never empty. */
function boundedText(text: string, maxLength: number): string {
  const line = visible(text);
  if (line.length === 0) return '-';
  return line.length <= maxLength ? line : `${line.slice(0, maxLength - 3)}...`;
}

/** A pointer of at most 512 characters: a longer one is cut at a segment and ends in `/...`. */
function boundedPointer(pointer: string): string {
  const line = visible(pointer);
  if (line.length <= 512) return line;
  const cut = line.slice(0, 508);
  const lastSlash = cut.lastIndexOf('/');
  return `${lastSlash > 0 ? cut.slice(0, lastSlash) : ''}/...`;
}

/** The status of each kind of refusal the rules know: the one place a domain error meets HTTP. */
const STATUS_OF: Record<RefusalKind, number> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  unavailable: 503,
};

/** How long a client waits before retrying what is unavailable now. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The problem a refusal of the rules (core/errors.ts) is answered with. */
export const problemOf = (error: DomainError): ApiError =>
  new ApiError(
    STATUS_OF[error.kind],
    error.code,
    error.title,
    error.detail,
    error.fieldErrors,
    error.kind === 'unavailable' ? { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) } : {},
  );

// Errors of the HTTP exchange itself (credentials, methods, media types, limits, availability).

export const malformedJson = (detail: string) =>
  new ApiError(400, 'malformed_json', 'Malformed JSON body', `The request body is not valid JSON: ${detail}.`);

export const unauthenticated = (detail = 'Send a valid API key or access token as Authorization Bearer.') =>
  new ApiError(401, 'unauthenticated', 'Authentication required', detail, undefined, {
    'WWW-Authenticate': 'Bearer realm="cloud-platform"',
  });

export const methodNotAllowed = (method: string, allowed: string[]) =>
  new ApiError(
    405,
    'method_not_allowed',
    'Method not allowed',
    `${method} is not allowed on this path; it allows ${allowed.join(', ')}.`,
    undefined,
    {
      Allow: allowed.join(', '),
    },
  );

/** The connection closes after this answer: the rest of the body is not read. */
export const payloadTooLarge = (limit: string) =>
  new ApiError(413, 'payload_too_large', 'Payload too large', `The request body is larger than ${limit}.`, undefined, {
    Connection: 'close',
  });

export const unsupportedMediaType = (mediaType: string) =>
  new ApiError(
    415,
    'unsupported_media_type',
    'Unsupported media type',
    `The request body must be application/json, not ${mediaType || 'absent'}.`,
  );

export const rateLimited = (retryAfterSeconds: number) =>
  new ApiError(
    429,
    'rate_limited',
    'Rate limit exceeded',
    `Too many requests for this credential; retry after ${retryAfterSeconds} seconds.`,
    undefined,
    {
      'Retry-After': String(retryAfterSeconds),
    },
  );

export const idempotencyKeyInUse = () =>
  new ApiError(
    409,
    'idempotency_key_in_use',
    'Idempotency key in use',
    'A request with this Idempotency-Key is still being processed; retry in a moment.',
  );

export const idempotencyKeyReused = () =>
  new ApiError(
    422,
    'idempotency_key_reused',
    'Idempotency key reused',
    'This Idempotency-Key was used with a different request; use a new key for a new request.',
  );

/**
 * The platform cannot reach its database, or a backend it must call during the request: worth
 * retrying after `Retry-After` seconds (the typed client does). Never a 500.
 */
export const serviceUnavailable = (
  retryAfterSeconds: number,
  detail = 'The service cannot complete this request right now; retry after the Retry-After delay.',
) => new ApiError(503, 'service_unavailable', 'Service unavailable', detail, undefined, { 'Retry-After': String(retryAfterSeconds) });

/** The fixed answer to anything unexpected: nothing internal is disclosed. */
export const internalError = () =>
  new ApiError(500, 'internal_error', 'Internal server error', 'An unexpected error occurred. Quote the request id to support.');
