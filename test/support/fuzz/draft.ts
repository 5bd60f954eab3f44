// A request being built: valid first (from the operation's schemas and the fixtures), then
// changed by at most one mutation, then rendered to the exact bytes that go on the wire.
import type { OperationSpec } from './contract.ts';
import { encodeJson, type JsonBody } from './json-text.ts';
import type { Random } from './random.ts';
import type { Hints, ValueGenerator } from './values.ts';

/** What the fuzzer knows about its target: where it is, whose credential, which real resources. */
export interface FuzzTarget {
  /** `http://host:port`, without a trailing slash. */
  baseUrl: string;
  orgId: string;
  ownerKey: string;
  /** Values of real resources by parameter or property name (`vm_id`, `ssh_keys[]`, …). */
  hints: Hints;
  /** A real second page of each list operation that has one. */
  cursors: ReadonlyMap<string, NextPage>;
}

/** A `next_cursor` and the filters of the list that issued it (the cursor holds only for those). */
export interface NextPage {
  cursor: string;
  /** Encoded query pairs, `limit` aside. */
  filters: Array<[string, string]>;
}

/** One request as sent: every header the fuzzer sends is listed, in order; the body as bytes. */
export interface FuzzRequest {
  method: string;
  /** Path and query exactly as sent; characters above 0x7f go out as single latin1 bytes. */
  target: string;
  headers: Array<[string, string]>;
  body: Buffer | undefined;
}

export interface Draft {
  operation: OperationSpec;
  method: string;
  /** The path's segments, percent-encoded as sent (the first is the empty one before `/`). */
  segments: string[];
  /** Which segment holds each path parameter. */
  parameterSegments: Map<string, number>;
  /** Query pairs, percent-encoded as sent; a `null` value is sent as a bare key. */
  query: Array<[string, string | null]>;
  /** Headers other than Host, Content-Type, Content-Length and Connection. */
  headers: Array<[string, string]>;
  contentType: string | undefined;
  /** The body as a value; `bodyBytes`, when set, is sent instead. */
  body: JsonBody | undefined;
  bodyBytes: Buffer | undefined;
  /** `chunked`: the body goes with Transfer-Encoding instead of Content-Length. */
  framing: 'length' | 'chunked';
}

/** Encodes a query value as a form would, keeping the characters `allowReserved` lets through. */
export function encodeQueryValue(value: string, allowReserved: boolean): string {
  const encoded = encodeURIComponent(value);
  return allowReserved ? encoded.replace(/%3A/g, ':').replace(/%2F/g, '/').replace(/%40/g, '@') : encoded;
}

/** A request the contract calls valid, with real ids where the fixtures have them. */
export function validDraft(operation: OperationSpec, target: FuzzTarget, random: Random, values: ValueGenerator): Draft {
  const hints = target.hints;
  // A cursor is valid only as the list issued it, with the filters it was issued for.
  const nextPage = target.cursors.get(operation.operationId);
  const onNextPage = nextPage !== undefined && random.chance(0.3);
  const segments = operation.pathTemplate.split('/');
  const parameterSegments = new Map<string, number>();
  const headers: Array<[string, string]> = [['Authorization', `Bearer ${target.ownerKey}`]];
  const query: Array<[string, string | null]> = [];
  for (const parameter of operation.parameters) {
    if (parameter.in === 'path') {
      const index = segments.indexOf(`{${parameter.name}}`);
      parameterSegments.set(parameter.name, index);
      // The organization is always the fuzzer's own: another one's answers 403 before anything else.
      const value = parameter.name === 'org' ? target.orgId : String(values.valid(parameter.schema, random, hints, parameter.name));
      segments[index] = encodeURIComponent(value);
    } else if (parameter.in === 'query') {
      if (parameter.name === 'cursor') {
        if (onNextPage) query.push(['cursor', encodeURIComponent(nextPage.cursor)]);
        continue;
      }
      if (onNextPage && parameter.name !== 'limit') {
        query.push(...nextPage.filters.filter(([name]) => name === parameter.name));
        continue;
      }
      if (!parameter.required && !random.chance(0.4)) continue;
      const value = values.valid(parameter.schema, random, hints, parameter.name);
      const items = Array.isArray(value) && parameter.explode ? value : [value];
      for (const item of items) query.push([parameter.name, encodeQueryValue(String(item), parameter.allowReserved)]);
    } else if (parameter.required || random.chance(0.7)) {
      // Mostly a fresh uuid, as the contract advises for an Idempotency-Key; sometimes a short
      // generated key, which other cases may happen to reuse (and so reach replays and 422s).
      const fresh = new Map([[parameter.name, [random.uuid()]]]);
      headers.push([parameter.name, String(values.valid(parameter.schema, random, fresh, parameter.name))]);
    }
  }
  const body = operation.body ? values.valid(operation.body.schema, random, hints, undefined, operation.body.examples) : undefined;
  return {
    operation,
    method: operation.method,
    segments,
    parameterSegments,
    query,
    headers,
    contentType: body === undefined ? undefined : 'application/json',
    body,
    bodyBytes: undefined,
    framing: 'length',
  };
}

export function bodyBytesOf(draft: Draft): Buffer | undefined {
  if (draft.bodyBytes !== undefined) return draft.bodyBytes;
  return draft.body === undefined ? undefined : encodeJson(draft.body);
}

/** The exact request: Host first, Connection: close last, framing as the draft says. */
export function render(draft: Draft, target: FuzzTarget): FuzzRequest {
  const path = draft.segments.join('/');
  const query = draft.query.map(([key, value]) => (value === null ? key : `${key}=${value}`)).join('&');
  const body = bodyBytesOf(draft);
  const headers: Array<[string, string]> = [['Host', new URL(target.baseUrl).host], ...draft.headers];
  if (draft.contentType !== undefined) headers.push(['Content-Type', draft.contentType]);
  if (draft.framing === 'chunked') headers.push(['Transfer-Encoding', 'chunked']);
  else if (body !== undefined || ['POST', 'PUT', 'PATCH'].includes(draft.method))
    headers.push(['Content-Length', String(body?.length ?? 0)]);
  headers.push(['Connection', 'close']);
  return { method: draft.method, target: query === '' && !draft.query.length ? path : `${path}?${query}`, headers, body };
}
