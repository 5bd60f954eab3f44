// The errors the client throws. Every one is a PlatformError; aborting a call rejects with the
// signal's reason instead, as fetch does.
import { parseJson } from './json.ts';
import type { Operation, Problem, ProblemFieldError } from './types.ts';

export class PlatformError extends Error {
  override name = 'PlatformError';
}

/** The API refused the request: its problem document (RFC 9457), or one made up for a body that is not one. */
export class ProblemError extends PlatformError {
  override name = 'ProblemError';
  readonly status: number;
  /** The stable snake_case code to branch on; `unexpected_response` when the body was not a problem document. */
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  /** The problem's `request_id`, else the `X-Request-Id` response header, else the id the client sent. */
  readonly requestId: string;
  /** The problem's `errors`: one entry per failing field on validation failures, else empty. */
  readonly fieldErrors: ProblemFieldError[];

  readonly problem: Problem;
  /** The raw response (its body already read). */
  readonly response: Response;

  constructor(problem: Problem, response: Response) {
    super(`${problem.status} ${problem.code}: ${problem.detail} (request ${problem.request_id})`);
    this.problem = problem;
    this.response = response;
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.requestId = problem.request_id;
    this.fieldErrors = problem.errors ?? [];
  }
}

/** The request never got an HTTP response, even after retries; `cause` is the last fetch error. */
export class PlatformNetworkError extends PlatformError {
  override name = 'PlatformNetworkError';
  readonly method: string;
  readonly url: string;
  /** The `X-Request-Id` the client sent. */
  readonly requestId: string;

  readonly attempts: number;

  constructor(request: Request, attempts: number, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`${request.method} ${request.url}: no response after ${attempts} attempt(s): ${reason}`, { cause });
    this.attempts = attempts;
    this.method = request.method;
    this.url = request.url;
    this.requestId = request.headers.get('x-request-id') ?? '';
  }
}

/** `waitForOperation`: the operation ended `failed` or `cancelled`. */
export class OperationFailedError extends PlatformError {
  override name = 'OperationFailedError';
  readonly state: Operation['state'];
  readonly errorClass: Operation['error_class'];
  readonly errorDetail: Operation['error_detail'];

  readonly operation: Operation;

  constructor(operation: Operation) {
    super(`Operation ${operation.id} (${operation.type}) ${operation.state}${operation.error_detail ? `: ${operation.error_detail}` : ''}`);
    this.operation = operation;
    this.state = operation.state;
    this.errorClass = operation.error_class;
    this.errorDetail = operation.error_detail;
  }
}

/** `waitForOperation`: the operation was still in flight when `timeoutMs` passed. */
export class OperationTimeoutError extends PlatformError {
  override name = 'OperationTimeoutError';

  readonly operationId: string;
  readonly timeoutMs: number;
  /** The operation as last seen, if it was seen at all. */
  readonly operation: Operation | undefined;

  constructor(operationId: string, timeoutMs: number, operation: Operation | undefined) {
    super(`Operation ${operationId} did not finish within ${timeoutMs} ms (last state: ${operation?.state ?? 'unknown'})`);
    this.operationId = operationId;
    this.timeoutMs = timeoutMs;
    this.operation = operation;
  }
}

/** The ProblemError for an error response, given its body text and the request id sent. */
export function problemError(response: Response, text: string, sentRequestId: string): ProblemError {
  let body: unknown;
  try {
    body = text ? parseJson(text) : undefined;
  } catch {
    body = undefined;
  }
  const requestId = response.headers.get('x-request-id') || sentRequestId;
  if (isProblem(body)) {
    return new ProblemError({ ...body, request_id: body.request_id || requestId }, response);
  }
  return unexpectedResponse(response, text, requestId);
}

/** A response the client cannot use (not a problem document, or a success body that is not JSON). */
export function unexpectedResponse(response: Response, text: string, requestId: string): ProblemError {
  const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  return new ProblemError(
    {
      type: 'about:blank',
      title: response.statusText || 'Unexpected response',
      status: response.status,
      detail: `HTTP ${response.status} (${response.headers.get('content-type') ?? 'no content type'}) with an unexpected body${excerpt ? `: ${excerpt}` : ''}`,
      code: 'unexpected_response',
      request_id: requestId,
    },
    response,
  );
}

function isProblem(body: unknown): body is Problem {
  const candidate = body as Partial<Problem> | null | undefined;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.code === 'string' && typeof candidate.status === 'number';
}
