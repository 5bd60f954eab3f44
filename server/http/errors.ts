import type { components } from '../../generated/openapi.ts';

export type Problem = components['schemas']['Problem'];
export type FieldError = components['schemas']['ProblemFieldError'];

/**
 * An error the API answers with a problem document. Everything that is not an ApiError becomes
 * `500 internal_error` with a fixed phrase.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
    readonly fieldErrors?: FieldError[],
    /** Extra response headers, such as Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(`${code}: ${detail}`);
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

/** The most entries a problem's `errors` lists (the contract's `Problem.errors.maxItems`). */
export const MAX_FIELD_ERRORS = 50;

const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;
const visible = (text: string): string => text.replace(CONTROL_CHARACTERS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);

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

// Named errors, one factory each: the only place a status, code and title are chosen.

export const validationFailed = (errors: FieldError[]) =>
  new ApiError(
    400,
    'validation_failed',
    'Request validation failed',
    errors.length <= MAX_FIELD_ERRORS
      ? `The request has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}; see errors.`
      : `The request has ${errors.length} invalid fields; errors lists the first ${MAX_FIELD_ERRORS}.`,
    errors,
  );

export const fieldInvalid = (pointer: string, detail: string) => validationFailed([{ pointer, detail }]);

export const malformedJson = (detail: string) => new ApiError(400, 'malformed_json', 'Malformed JSON body', `The request body is not valid JSON: ${detail}.`);

export const invalidCursor = () =>
  new ApiError(400, 'invalid_cursor', 'Invalid cursor', 'The cursor was not issued by this list; pass the next_cursor of the previous page unchanged.', [
    { pointer: '/query/cursor', detail: 'not a cursor issued by this list' },
  ]);

export const unauthenticated = (detail = 'Send a valid API key or access token as Authorization Bearer.') =>
  new ApiError(401, 'unauthenticated', 'Authentication required', detail, undefined, { 'WWW-Authenticate': 'Bearer realm="cloud-platform"' });

export const forbidden = (detail: string) => new ApiError(403, 'forbidden', 'Permission denied', detail);

export const notFound = (detail = 'No such resource in this organization.') => new ApiError(404, 'not_found', 'Resource not found', detail);

export const methodNotAllowed = (method: string, allowed: string[]) =>
  new ApiError(405, 'method_not_allowed', 'Method not allowed', `${method} is not allowed on this path; it allows ${allowed.join(', ')}.`, undefined, {
    Allow: allowed.join(', '),
  });

export const conflict = (code: string, title: string, detail: string) => new ApiError(409, code, title, detail);

export const unprocessable = (code: string, title: string, detail: string, errors?: FieldError[]) => new ApiError(422, code, title, detail, errors);

export const invalidReference = (errors: FieldError[]) =>
  unprocessable('invalid_reference', 'Invalid reference', `The request refers to ${errors.length === 1 ? 'something that does' : 'things that do'} not exist here; see errors.`, errors);

/** The connection closes after this answer: the rest of the body is not read. */
export const payloadTooLarge = (limit: string) =>
  new ApiError(413, 'payload_too_large', 'Payload too large', `The request body is larger than ${limit}.`, undefined, { Connection: 'close' });

export const unsupportedMediaType = (mediaType: string) =>
  new ApiError(415, 'unsupported_media_type', 'Unsupported media type', `The request body must be application/json, not ${mediaType || 'absent'}.`);

export const rateLimited = (retryAfterSeconds: number) =>
  new ApiError(429, 'rate_limited', 'Rate limit exceeded', `Too many requests for this credential; retry after ${retryAfterSeconds} seconds.`, undefined, {
    'Retry-After': String(retryAfterSeconds),
  });

export const spendBudgetExceeded = () =>
  conflict('spend_budget_exceeded', 'Spend budget exceeded', "The organization's month-to-date spend has reached its spend budget; raise or clear the budget to create billable resources.");

export const idempotencyKeyInUse = () =>
  conflict('idempotency_key_in_use', 'Idempotency key in use', 'A request with this Idempotency-Key is still being processed; retry in a moment.');

export const idempotencyKeyReused = () =>
  unprocessable('idempotency_key_reused', 'Idempotency key reused', 'This Idempotency-Key was used with a different request; use a new key for a new request.');

/**
 * The platform cannot reach its database, or a backend it must call during the request: worth
 * retrying after `Retry-After` seconds (the typed client does). Never a 500.
 */
export const serviceUnavailable = (retryAfterSeconds: number, detail = 'The service cannot complete this request right now; retry after the Retry-After delay.') =>
  new ApiError(503, 'service_unavailable', 'Service unavailable', detail, undefined, { 'Retry-After': String(retryAfterSeconds) });

/** The fixed answer to anything unexpected: nothing internal is disclosed. */
export const internalError = () => new ApiError(500, 'internal_error', 'Internal server error', 'An unexpected error occurred. Quote the request id to support.');
