// createPlatformClient: the typed client. Every request goes through one fetch that adds the
// credential, an X-Request-Id and (on POST) an Idempotency-Key, then retries what is safe to retry;
// `call` adds exact JSON, the `org` path parameter and ProblemError on top of openapi-fetch.
import createClient, { type Client } from 'openapi-fetch';
import { operationRoutes, type OperationId, type paths } from '../generated/index.ts';
import { problemError, unexpectedResponse } from './errors.ts';
import { parseJson, stringifyJson } from './json.ts';
import { paginate, type Page } from './paginate.ts';
import { retryingFetch } from './retry.ts';
import type { CallArgs, ItemOf, Operation, PaginatedOperationId, PlatformClientOptions, SuccessBody, WaitOptions } from './types.ts';
import { waitForOperation } from './wait.ts';

export interface PlatformClient {
  /** The organization every call addresses: the one given, or the one learned from getAccount once it is (undefined until then). */
  readonly org: string | undefined;
  /**
   * The organization every call addresses: the `org` option, else the one the credential opens,
   * asked of `getAccount` once (by the first call that needs it) and kept.
   */
  organization(): Promise<string>;
  /**
   * The underlying openapi-fetch client, for anything else. It shares the credential, request ids,
   * idempotency keys and retries, but parses bodies with JSON.parse: pass `parseAs: 'text'` and use
   * `parseJson` where a big integer can occur.
   */
  readonly raw: Client<paths>;
  /** Calls an operation; resolves with its success body, rejects with ProblemError or PlatformNetworkError. */
  call<Id extends OperationId>(operationId: Id, ...init: CallArgs<Id>): Promise<SuccessBody<Id>>;
  /** As `call`, with the response too (its headers: `Idempotent-Replayed`, `RateLimit-*`…). */
  callWithResponse<Id extends OperationId>(operationId: Id, ...init: CallArgs<Id>): Promise<{ data: SuccessBody<Id>; response: Response }>;
  /** Every item of a list operation, following `next_cursor` until it is null. */
  paginate<Id extends PaginatedOperationId>(operationId: Id, ...init: CallArgs<Id>): AsyncGenerator<ItemOf<Id>, void, undefined>;
  /** Polls the operation until it has finished; see WaitOptions. */
  waitForOperation(operation: Operation | string, options?: WaitOptions): Promise<Operation>;
}

/** `req_` and 20 random characters. */
export function newRequestId(): string {
  return `req_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

type LooseInit = {
  path?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

/** Refuses options that could only fail later, obscurely (`TypeError: Failed to parse URL from /v1/orgs/{org}/…`). */
function checkOptions(options: PlatformClientOptions): void {
  const { baseUrl, credential } = options as Partial<PlatformClientOptions>;
  const shown = (value: unknown) => (value === undefined ? 'nothing' : JSON.stringify(value));
  if (typeof baseUrl !== 'string' || !URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new TypeError(
      `createPlatformClient: baseUrl must be the server's absolute http(s) address, such as 'http://127.0.0.1:8080'; got ${shown(baseUrl)}`,
    );
  }
  if (typeof credential !== 'function' && (typeof credential !== 'string' || credential === '')) {
    throw new TypeError(
      `createPlatformClient: credential must be an API key (cpk_…), an access token, or a function returning one; got ${shown(credential)}`,
    );
  }
}

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  checkOptions(options);
  const { baseUrl, credential } = options;
  let org = options.org;
  let learning: Promise<string> | undefined;
  const retrying = retryingFetch(options.fetch ?? ((request) => globalThis.fetch(request)), options.retry);

  /** The credential, a request id and an idempotency key, unless the request has its own. */
  async function prepare(request: Request): Promise<Request> {
    const headers = new Headers(request.headers);
    if (!headers.has('authorization')) {
      headers.set('Authorization', `Bearer ${typeof credential === 'function' ? await credential() : credential}`);
    }
    if (!headers.has('x-request-id')) headers.set('X-Request-Id', newRequestId());
    if (request.method === 'POST' && !headers.has('idempotency-key')) headers.set('Idempotency-Key', crypto.randomUUID());
    return new Request(request, { headers });
  }

  const raw = createClient<paths>({
    baseUrl,
    headers: options.headers,
    bodySerializer: stringifyJson,
    fetch: async (request) => retrying(await prepare(request)),
  });

  /** The organization, asked of getAccount once when not given; a failed ask is asked again by the next call. */
  function organization(): Promise<string> {
    if (org !== undefined) return Promise.resolve(org);
    learning ??= callWithResponse('getAccount').then(
      ({ data }) => (org = (data as { org_id: string }).org_id),
      (error: unknown) => {
        learning = undefined;
        throw error;
      },
    );
    return learning;
  }

  async function callWithResponse(operationId: OperationId, init: LooseInit = {}): Promise<{ data: unknown; response: Response }> {
    const route = operationRoutes[operationId];
    const pathOrg = route.path.includes('{org}') ? { org: await organization() } : {};
    let requestId = '';
    let errorResponse: Response | undefined;
    const result = await raw.request(
      route.method,
      route.path as never,
      {
        params: { path: { ...init.path, ...pathOrg }, query: init.query },
        body: init.body,
        headers: init.headers,
        signal: init.signal,
        parseAs: 'text',
        // Per call, to learn the request id sent and to read an error body with lossless-json
        // (openapi-fetch reads it with JSON.parse).
        fetch: async (request: Request) => {
          const prepared = await prepare(request);
          requestId = prepared.headers.get('x-request-id')!;
          const response = await retrying(prepared);
          if (!response.ok) errorResponse = response.clone();
          return response;
        },
      } as never,
    );
    const response: Response = result.response;
    if (!response.ok) throw problemError(response, (await errorResponse?.text()) ?? '', requestId);
    const text = result.data as string | undefined;
    if (!text) return { data: undefined, response };
    try {
      return { data: parseJson(text), response };
    } catch {
      throw unexpectedResponse(response, text, response.headers.get('x-request-id') || requestId);
    }
  }

  const client: PlatformClient = {
    get org() {
      return org;
    },
    organization,
    raw,
    callWithResponse: callWithResponse as PlatformClient['callWithResponse'],
    call: (async (operationId: OperationId, init?: LooseInit) =>
      (await callWithResponse(operationId, init)).data) as PlatformClient['call'],
    paginate: ((operationId: PaginatedOperationId, init: LooseInit = {}) =>
      paginate(
        async (cursor) =>
          (await callWithResponse(operationId, { ...init, query: { ...init.query, ...(cursor && { cursor }) } })).data as Page<unknown>,
        init.query?.cursor as string | undefined,
      )) as PlatformClient['paginate'],
    waitForOperation: (operation, waitOptions) =>
      waitForOperation(
        (operationId, signal) => client.call('getOperation', { path: { operation_id: operationId }, signal }),
        operation,
        waitOptions,
      ),
  };
  return client;
}
