// Mutations of everything around the body: path parameters (bad uuids, malformed percent-encoding,
// raw bytes), the path's shape, the method, query parameters (bad cursors, limits, duplicates,
// unknown ones), and headers (content types, Idempotency-Key, credentials).
import { gzipSync } from 'node:zlib';
import { unescape as unescapeQuery } from 'node:querystring';
import type { OperationSpec, ParameterSpec } from './contract.ts';
import { bodyBytesOf, encodeQueryValue, type Draft } from './draft.ts';
import { exactIntegerOf } from './body-mutations.ts';
import { bodyBreaksContract, preview, type MutationContext, type Mutator } from './mutation.ts';
import { integerRange, typesOf } from './values.ts';

/** A percent-decoded path segment, or undefined when its percent-encoding is malformed. */
export function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Whether a (decoded) parameter value breaks the parameter's schema, as a validator reading strings would judge it. */
function parameterBreaksContract(parameter: ParameterSpec, value: string, context: MutationContext): boolean | undefined {
  // The contract: a cursor the API did not issue for this list is refused (400 invalid_cursor).
  if (parameter.name === 'cursor') return true;
  const schema = context.contract.resolve(parameter.schema);
  const types = typesOf(schema);
  if (types.includes('integer')) {
    if (!/^-?\d+$/.test(value)) {
      // `1e2`, ` 5`, `0x10`, `1.0`: a validator may or may not read these as numbers.
      return /^[\s+-]*(\d|\.\d)/.test(value) && !/^-?\d+\.\d*[1-9]/.test(value) ? undefined : true;
    }
    const [min, max] = integerRange(schema);
    const exact = exactIntegerOf(value.replace(/^(-?)0+(?=\d)/, '$1'));
    return exact === undefined || exact < min || exact > max;
  }
  if (types.includes('array')) return !context.schemas.validates(schema, [value]);
  return !context.schemas.validates(schema, value);
}

const pathParameters = (operation: OperationSpec) => operation.parameters.filter((parameter) => parameter.in === 'path');

function badIds(context: MutationContext): string[] {
  const id = context.random.uuid();
  const otherIds = [...context.target.hints.entries()].filter(([name]) => name.endsWith('_id')).flatMap(([, values]) => values.map(String));
  return [
    'not-a-uuid',
    '123',
    id.replace(/-/g, ''),
    id.toUpperCase(),
    `urn:uuid:${id}`,
    `{${id}}`,
    `${id}x`,
    id.slice(0, 35),
    id.replace(/[0-9a-f]$/, 'g'),
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    ` ${id}`,
    `${id}\u0000`,
    id.replace(/-/g, '\u2010'),
    '１２３４５６７８-1234-4234-8234-123456789012',
    'in_2026_10_3f6c1a2e',
    "' OR '1'='1",
    '../billing',
    'a'.repeat(5000),
    ...(otherIds.length > 0 ? [context.random.pick(otherIds)] : []),
  ];
}

const badPathId: Mutator = {
  kind: 'path.bad-id',
  weight: (operation) => (pathParameters(operation).length > 0 ? 3 : 0),
  apply(draft, context) {
    // Mostly the resource's own id: a bad organization id mostly meets the 403 of another organization's path.
    const resources = pathParameters(draft.operation).filter((parameter) => parameter.name !== 'org');
    const parameter = context.random.pick(resources.length > 0 && context.random.chance(0.8) ? resources : pathParameters(draft.operation));
    const value = context.random.pick(badIds(context));
    draft.segments[draft.parameterSegments.get(parameter.name)!] = encodeURIComponent(value);
    return { description: `path ${parameter.name} = ${preview(value)}`, mustRefuse: parameterBreaksContract(parameter, value, context) };
  },
};

const MALFORMED_ENCODINGS = [
  '%ZZ',
  '%',
  '%2',
  '%G0',
  '%%',
  '%u0041',
  '%C0%AF',
  '%FF',
  '%E0%80%80',
  '%ED%A0%80',
  '%00',
  '%2F',
  '%2e%2e',
  '%252F',
  '%0A',
  '%20',
];

const pathPercentEncoding: Mutator = {
  kind: 'path.percent-encoding',
  // Only paths with parameters (the health probes have none).
  weight: (operation) => (pathParameters(operation).length > 0 ? 3 : 0),
  apply(draft, context) {
    const parameter = context.random.pick(pathParameters(draft.operation));
    const index = draft.parameterSegments.get(parameter.name)!;
    const encoding = context.random.pick(MALFORMED_ENCODINGS);
    const original = draft.segments[index]!;
    const cut = context.random.int(0, original.length);
    const segment = context.random.chance(0.5) ? encoding : original.slice(0, cut) + encoding + original.slice(cut);
    draft.segments[index] = segment;
    const decoded = decodeSegment(segment);
    return {
      description: `path ${parameter.name} sent as ${preview(segment)}`,
      mustRefuse: decoded === undefined ? true : parameterBreaksContract(parameter, decoded, context),
    };
  },
};

const SHAPES = [
  'trailing slash',
  'double slash',
  'last segment dropped',
  'extra segment',
  'upper-case V1',
  'dot segment',
  'dot-dot segment',
  'matrix parameter',
  'upper-case literal',
] as const;

const pathShape: Mutator = {
  kind: 'path.shape',
  weight: () => 2,
  apply(draft, context) {
    const shape = context.random.pick(SHAPES);
    const segments = draft.segments;
    const literalIndexes = segments
      .map((_segment, index) => index)
      .filter((index) => index > 0 && ![...draft.parameterSegments.values()].includes(index));
    switch (shape) {
      case 'trailing slash':
        segments.push('');
        break;
      case 'double slash':
        segments.splice(context.random.int(1, segments.length - 1), 0, '');
        break;
      case 'last segment dropped':
        segments.pop();
        break;
      case 'extra segment':
        segments.push(context.random.pick(['x', 'cancel', 'restore', '..', context.random.uuid()]));
        break;
      case 'upper-case V1':
        segments[1] = 'V1';
        break;
      case 'dot segment':
        segments.splice(context.random.int(2, segments.length - 1), 0, '.');
        break;
      case 'dot-dot segment':
        segments.splice(context.random.int(2, segments.length - 1), 0, 'x', '..');
        break;
      case 'matrix parameter':
        segments[segments.length - 1] += ';x=1';
        break;
      case 'upper-case literal': {
        const index = context.random.pick(literalIndexes);
        segments[index] = segments[index]!.toUpperCase();
        break;
      }
    }
    // Whether the new path still names an operation is for the oracle to work out.
    return { description: `path shape: ${shape}`, mustRefuse: undefined };
  },
};

const otherMethod: Mutator = {
  kind: 'request.method',
  weight: () => 1,
  apply(draft, context) {
    // Only methods the path does not take: another method of the path is another operation (a
    // GET turned DELETE would delete the fixture every later case aims at).
    const taken = context.contract.operations
      .filter((operation) => operation.pathTemplate === draft.operation.pathTemplate)
      .map((operation) => operation.method);
    const method = context.random.pick(['GET', 'PUT', 'POST', 'DELETE', 'PATCH'].filter((candidate) => !taken.includes(candidate)));
    draft.method = method;
    return { description: `method ${method}, which the path does not take`, mustRefuse: true };
  },
};

const queryParameters = (operation: OperationSpec) => operation.parameters.filter((parameter) => parameter.in === 'query');

/** Values to try for a query parameter, by what its schema is. */
function badQueryValues(parameter: ParameterSpec, context: MutationContext): string[] {
  const schema = context.contract.resolve(parameter.schema);
  const common = ['', ' ', 'a'.repeat(5000), '\u0000', '\n', 'é', '😀', '[object Object]', 'null', 'undefined'];
  if (typesOf(schema).includes('integer')) {
    return [
      ...common,
      '0',
      '201',
      '-1',
      '1.5',
      '1e2',
      'abc',
      '9223372036854775808',
      '99999999999999999999',
      ' 5',
      '5 ',
      '0x10',
      '+5',
      '05',
      '1.0',
      '-0',
      'NaN',
      'Infinity',
      '2147483648',
      '1e-400',
    ];
  }
  if (schema.format === 'uuid') return [...common, ...badIds(context)];
  if (schema.format === 'date-time') {
    return [
      ...common,
      'yesterday',
      '2026-13-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-11-20',
      '2026-11-20T25:00:00Z',
      '0',
      '+275760-09-13T00:00:00.000Z',
      '1e10',
      '2026-11-20T09:15:00.123456789Z',
      '9999-12-31T23:59:59Z',
      '0000-01-01T00:00:00Z',
    ];
  }
  if (Array.isArray(schema.enum))
    return [
      ...common,
      'bogus',
      String(schema.enum[0]).toUpperCase(),
      `${String(schema.enum[0])} `,
      `${String(schema.enum[0])},${String(schema.enum[1] ?? '')}`,
    ];
  if (parameter.name === 'label') return [...common, 'nocolon', ':x', 'k:', 'a:b:c', `${'k'.repeat(64)}:v`, 'k:\u0001'];
  return [...common, 'UPPER CASE', 'a'.repeat(64), '%', "' OR 1=1 --"];
}

const badQueryValue: Mutator = {
  kind: 'query.bad-value',
  weight: (operation) => (queryParameters(operation).length > 0 ? 3 : 0),
  apply(draft, context) {
    const parameter = context.random.pick(queryParameters(draft.operation));
    const value = context.random.pick(badQueryValues(parameter, context));
    draft.query = draft.query.filter(([key]) => key !== parameter.name);
    draft.query.push([parameter.name, encodeQueryValue(value, false)]);
    return { description: `query ${parameter.name} = ${preview(value)}`, mustRefuse: parameterBreaksContract(parameter, value, context) };
  },
};

const missingQuery: Mutator = {
  kind: 'query.missing-required',
  weight: (operation) => (queryParameters(operation).some((parameter) => parameter.required) ? 2 : 0),
  apply(draft, context) {
    const parameter = context.random.pick(queryParameters(draft.operation).filter((candidate) => candidate.required));
    draft.query = draft.query.filter(([key]) => key !== parameter.name);
    return { description: `required query ${parameter.name} left out`, mustRefuse: true };
  },
};

const QUERY_GARBAGE: Array<[string, string | null]> = [
  ['foo', 'bar'],
  ['LIMIT', '5'],
  ['limit[$gt]', '1'],
  ['__proto__', 'x'],
  ['constructor[prototype][x]', '1'],
  ['x'.repeat(100), '1'],
  ['', '1'],
  ['x', null],
  ['%ZZ', '1'],
  ['a%', '%'],
];

const unknownQuery: Mutator = {
  kind: 'query.unknown',
  weight: () => 1,
  apply(draft, context) {
    const pair = context.random.pick(QUERY_GARBAGE);
    draft.query.push(pair);
    return { description: `query ${pair[1] === null ? pair[0] : `${pair[0]}=${pair[1]}`} added`, mustRefuse: undefined };
  },
};

const duplicateQuery: Mutator = {
  kind: 'query.duplicate',
  weight: (operation) => (queryParameters(operation).length > 0 ? 2 : 0),
  apply(draft, context) {
    const parameter = context.random.pick(queryParameters(draft.operation));
    const present = draft.query.find(([key]) => key === parameter.name);
    const first =
      present?.[1] ??
      encodeQueryValue(
        String(context.values.valid(parameter.schema, context.random, context.target.hints, parameter.name)),
        parameter.allowReserved,
      );
    const second = context.random.chance(0.5)
      ? first
      : encodeQueryValue(
          String(context.values.valid(parameter.schema, context.random, context.target.hints, parameter.name)),
          parameter.allowReserved,
        );
    if (!present) draft.query.push([parameter.name, first]);
    draft.query.push([parameter.name, second]);
    return { description: `query ${parameter.name} given twice (${preview(first)}, ${preview(second)})`, mustRefuse: undefined };
  },
};

const queryPercentEncoding: Mutator = {
  kind: 'query.percent-encoding',
  weight: (operation) => (queryParameters(operation).length > 0 ? 2 : 0),
  apply(draft, context) {
    const parameter = context.random.pick(queryParameters(draft.operation));
    const encoding = context.random.pick(MALFORMED_ENCODINGS);
    const present = draft.query.find(([key]) => key === parameter.name)?.[1] ?? '';
    const raw = context.random.chance(0.5) ? encoding : present + encoding;
    draft.query = draft.query.filter(([key]) => key !== parameter.name);
    draft.query.push([parameter.name, raw]);
    // Query strings are commonly decoded leniently (a malformed escape stays as it is): judge that reading.
    return {
      description: `query ${parameter.name} sent as ${preview(raw)}`,
      mustRefuse: parameterBreaksContract(parameter, unescapeQuery(raw), context),
    };
  },
};

/** A `next_cursor` of this list or another, decoded when it is base64url JSON (as the server's are). */
function forgedCursors(draft: Draft, context: MutationContext): Array<{ cursor: string; what: string; mustRefuse: boolean | undefined }> {
  const own = context.target.cursors.get(draft.operation.operationId)?.cursor;
  const others = [...context.target.cursors.entries()]
    .filter(([operationId]) => operationId !== draft.operation.operationId)
    .map(([operationId, page]) => [operationId, page.cursor] as const);
  const garbage = Buffer.from(Array.from({ length: context.random.int(1, 60) }, () => context.random.int(0, 255))).toString('base64url');
  const list: Array<{ cursor: string; what: string; mustRefuse: boolean | undefined }> = [
    { cursor: garbage, what: 'random base64url', mustRefuse: true },
    { cursor: 'A'.repeat(513), what: '513 characters', mustRefuse: true },
    { cursor: `${garbage}==`, what: 'padded base64', mustRefuse: true },
    { cursor: 'a+b/c', what: 'base64 (not url) characters', mustRefuse: true },
  ];
  if (others.length > 0) {
    const [operationId, cursor] = context.random.pick(others);
    const listName = (value: string | undefined) => (value === undefined ? undefined : (decodeCursor(value)?.[0] as string | undefined));
    const foreign = own !== undefined && listName(own) !== undefined && listName(own) !== listName(cursor);
    list.push({ cursor, what: `the next_cursor of ${operationId}`, mustRefuse: foreign ? true : undefined });
  }
  const template = own ?? others[0]?.[1];
  const decoded = template === undefined ? undefined : decodeCursor(template);
  if (decoded) {
    const keys = [
      '0',
      '1',
      'Tue',
      '+275760-09-13T00:00:00.000Z',
      '2026-02-30T00:00:00Z',
      'Feb 30 2026',
      '1e10',
      '2026-11-20T09:15:00.123456789Z',
      '-000001-01-01T00:00:00Z',
      'x'.repeat(400),
      "2026-11-20' OR '1'='1",
    ];
    const forged = [...decoded];
    const position = context.random.int(0, forged.length - 1);
    forged[position] = context.random.pick<unknown>([
      ...keys,
      null,
      12,
      [],
      context.random.uuid().toUpperCase(),
      '00000000-0000-0000-0000-000000000000',
    ]);
    list.push({
      cursor: Buffer.from(JSON.stringify(forged)).toString('base64url'),
      what: `a forged cursor ${preview(JSON.stringify(forged), 120)}`,
      mustRefuse: undefined,
    });
  }
  return list;
}

function decodeCursor(cursor: string): unknown[] | undefined {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return Array.isArray(decoded) ? decoded : undefined;
  } catch {
    return undefined;
  }
}

const badCursor: Mutator = {
  kind: 'query.bad-cursor',
  weight: (operation) => (queryParameters(operation).some((parameter) => parameter.name === 'cursor') ? 3 : 0),
  apply(draft, context) {
    const chosen = context.random.pick(forgedCursors(draft, context));
    draft.query = draft.query.filter(([key]) => key !== 'cursor');
    draft.query.push(['cursor', encodeURIComponent(chosen.cursor)]);
    return { description: `cursor: ${chosen.what}`, mustRefuse: chosen.mustRefuse };
  },
};

const CONTENT_TYPES: Array<[string | undefined, boolean | undefined]> = [
  [undefined, true],
  ['text/plain', true],
  ['application/x-www-form-urlencoded', true],
  ['multipart/form-data; boundary=x', true],
  ['application/xml', true],
  ['application/json; charset=utf-16', undefined],
  ['application/json; charset=latin1', undefined],
  ['APPLICATION/JSON', false],
  ['application/json;charset=UTF-8', false],
  ['application/merge-patch+json', true],
  ['application/problem+json', true],
  ['application/jsonx', true],
  ['json', true],
  ['*/*', true],
  ['', true],
  ['application/json, text/plain', undefined],
];

const contentType: Mutator = {
  kind: 'header.content-type',
  // Only where the contract takes a body: a body on a GET is body.unexpected's business.
  weight: (operation) => (operation.body ? 2 : 0),
  apply(draft, context) {
    if (draft.body === undefined && draft.bodyBytes === undefined) draft.body = {};
    const [value, breaks] = context.random.pick(CONTENT_TYPES);
    draft.contentType = value;
    // A media type the contract does not take is refused whatever the body; a JSON one leaves the body to decide.
    const bodyVerdict = draft.operation.body ? bodyBreaksContract(draft, context) : undefined;
    const mustRefuse = breaks === true || bodyVerdict === true ? true : breaks === false ? bodyVerdict : undefined;
    return { description: value === undefined ? 'no Content-Type, with a body' : `Content-Type: ${value}`, mustRefuse };
  },
};

const contentEncoding: Mutator = {
  kind: 'header.content-encoding',
  weight: (operation) => (operation.body ? 1 : 0),
  apply(draft, context) {
    const variant = context.random.pick(['gzip, body plain', 'gzip, body gzipped', 'br, body plain', 'identity'] as const);
    draft.headers.push(['Content-Encoding', variant.split(',')[0]!]);
    if (variant === 'gzip, body gzipped') draft.bodyBytes = gzipSync(bodyBytesOf(draft) ?? Buffer.alloc(0));
    return { description: `Content-Encoding: ${variant}`, mustRefuse: undefined };
  },
};

const idempotencyKey: Mutator = {
  kind: 'header.idempotency-key',
  weight: (operation) => (operation.parameters.some((parameter) => parameter.name === 'Idempotency-Key') ? 2 : 0),
  apply(draft, context) {
    const parameter = draft.operation.parameters.find((candidate) => candidate.name === 'Idempotency-Key')!;
    draft.headers = draft.headers.filter(([name]) => name !== parameter.name);
    if (context.random.chance(0.2)) {
      const [first, second] = [context.random.uuid(), context.random.uuid()];
      draft.headers.push([parameter.name, first], [parameter.name, second]);
      return { description: 'Idempotency-Key sent twice', mustRefuse: undefined };
    }
    // Characters above 0x7f go out as single bytes (latin1): `Ã©` is the UTF-8 of `é`.
    const value = context.random.pick([
      'a'.repeat(256),
      'a'.repeat(255),
      'has space',
      'tab\there',
      'caf\u00e9',
      'Ã©',
      'x'.repeat(8000),
      '"quoted"',
      '{}',
      '\u00ff',
    ]);
    draft.headers.push([parameter.name, value]);
    return { description: `Idempotency-Key: ${preview(value)}`, mustRefuse: parameterBreaksContract(parameter, value, context) };
  },
};

const authorization: Mutator = {
  kind: 'header.authorization',
  // An operation without a credential ignores the header: nothing to refuse.
  weight: (operation) => (operation.authenticated ? 1 : 0),
  apply(draft, context) {
    const key = context.target.ownerKey;
    const variants: Array<[string | undefined, boolean | undefined]> = [
      [undefined, true],
      ['Bearer', true],
      [`Bearer ${key.slice(0, -1)}`, true],
      [`Bearer ${key}x`, true],
      ['Basic dXNlcjpwYXNz', true],
      [key, true],
      [`bearer ${key}`, undefined],
      [`Bearer  ${key}`, undefined],
      [`Bearer ${key} extra`, true],
      [`Bearer ${key.slice(0, -1)}\u00e9`, true],
      [`Bearer ${'a'.repeat(8000)}`, true],
    ];
    const [value, mustRefuse] = context.random.pick(variants);
    draft.headers = draft.headers.filter(([name]) => name !== 'Authorization');
    if (value !== undefined) draft.headers.unshift(['Authorization', value]);
    return {
      description: value === undefined ? 'no Authorization header' : `Authorization: ${preview(value.replace(key, '<owner key>'))}`,
      mustRefuse,
    };
  },
};

/**
 * Requests Node's own HTTP parser refuses before the application sees them: a raw byte above
 * 0x7f in the path, a request head over 16 KiB.
 */
const malformedHttp: Mutator = {
  kind: 'request.malformed-http',
  weight: () => 1,
  apply(draft, context) {
    if (context.random.chance(0.5)) {
      const index = draft.segments.length - 1;
      draft.segments[index] += '\u00e9';
      return { description: 'a raw byte 0xE9 at the end of the path', mustRefuse: true };
    }
    draft.headers.push(['X-Padding', 'p'.repeat(20_000)]);
    return { description: 'a 20,000-byte X-Padding header (request head over 16 KiB)', mustRefuse: undefined };
  },
};

export const requestMutators: Mutator[] = [
  badPathId,
  pathPercentEncoding,
  pathShape,
  otherMethod,
  badQueryValue,
  missingQuery,
  unknownQuery,
  duplicateQuery,
  queryPercentEncoding,
  badCursor,
  contentType,
  contentEncoding,
  idempotencyKey,
  authorization,
  malformedHttp,
];
