// Mutations of a JSON request body: wrong types, missing and unknown fields, huge strings,
// control characters and unicode edge cases, number literals past int64 or not quite integers,
// deep nesting, invalid UTF-8, malformed and empty bodies.
import type { OperationSpec } from './contract.ts';
import { bodyBytesOf, type Draft } from './draft.ts';
import { encodeJson, isPlainObject, RawJson, RawStringBytes, toPlainJson, type JsonBody } from './json-text.ts';
import {
  bodyBreaksContract,
  bodySites,
  cloneBody,
  deleteAt,
  preview,
  replaceAt,
  type BodySite,
  type MutationContext,
  type Mutator,
} from './mutation.ts';
import { integerRange, typesOf } from './values.ts';

const weightWithBody = (weight: number) => (operation: OperationSpec) => (operation.body ? weight : 0);

function sitesOf(draft: Draft, context: MutationContext): BodySite[] {
  return bodySites(draft.body!, draft.operation.body!.schema, context.contract);
}

function pointerText(path: Array<string | number>): string {
  return path.length === 0 ? '(the body)' : path.map((segment) => `/${segment}`).join('');
}

/** Replaces one value and judges the result against the contract. */
function replaceSite(draft: Draft, context: MutationContext, site: BodySite, value: JsonBody, what: string) {
  draft.body = replaceAt(draft.body!, site.path, value);
  return { description: `${pointerText(site.path)} ← ${what}`, mustRefuse: bodyBreaksContract(draft, context) };
}

const WRONG_TYPES: JsonBody[] = [0, -1, 1.5, true, false, null, '', 'text', '0', 'true', [], {}, [null], { a: 1 }];

const wrongType: Mutator = {
  kind: 'body.wrong-type',
  weight: weightWithBody(3),
  apply(draft, context) {
    const site = context.random.pick(sitesOf(draft, context));
    const typeOf = (value: JsonBody) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
    const value = context.random.pick(WRONG_TYPES.filter((candidate) => typeOf(candidate) !== typeOf(site.value)));
    return replaceSite(draft, context, site, cloneBody(value), preview(value));
  },
};

const missingRequired: Mutator = {
  kind: 'body.missing-required',
  weight: weightWithBody(2),
  apply(draft, context) {
    const requiredFields = sitesOf(draft, context).flatMap((site) =>
      ((site.schema?.required as string[] | undefined) ?? [])
        .filter((key) => site.value !== null && typeof site.value === 'object' && !Array.isArray(site.value) && key in site.value)
        .map((key) => [...site.path, key]),
    );
    if (requiredFields.length === 0) return undefined;
    const path = context.random.pick(requiredFields);
    deleteAt(draft.body!, path);
    return { description: `${pointerText(path)} removed (required)`, mustRefuse: bodyBreaksContract(draft, context) };
  },
};

// A key of 600 characters makes a JSON Pointer longer than the 512 the Problem schema allows.
const UNKNOWN_KEYS = [
  'extra',
  'id',
  'org_id',
  '__proto__',
  'constructor',
  'NAME',
  ' name',
  '',
  'name\u0000',
  'a\nb',
  '$where',
  'x'.repeat(600),
  '😀',
  '~1/',
];

const unknownField: Mutator = {
  kind: 'body.unknown-field',
  weight: weightWithBody(2),
  apply(draft, context) {
    const objects = sitesOf(draft, context).filter((site) => isPlainObject(site.value));
    if (objects.length === 0) return undefined;
    const site = context.random.pick(objects);
    const key = context.random.pick(UNKNOWN_KEYS);
    const value = context.random.pick<JsonBody>(['x', 1, true, null, { polluted: true }]);
    replaceAt(draft.body!, [...site.path, key], value);
    return { description: `${pointerText([...site.path, key])} added: ${preview(value)}`, mustRefuse: bodyBreaksContract(draft, context) };
  },
};

/** Many failing fields at once: more than the 100 `errors` a problem document may list. */
const manyErrors: Mutator = {
  kind: 'body.many-errors',
  weight: weightWithBody(2),
  apply(draft, context) {
    const count = context.random.pick([101, 150, 1_000]);
    const sites = sitesOf(draft, context);
    const arrays = sites.filter((site) => Array.isArray(site.value) && site.schema?.items);
    if (arrays.length > 0 && context.random.chance(0.4)) {
      const site = context.random.pick(arrays);
      const item = context.random.pick<JsonBody>([{}, null, 12, 'x'.repeat(2)]);
      return replaceSite(
        draft,
        context,
        site,
        Array.from({ length: count }, () => cloneBody(item)),
        `${count} items ${preview(item)}`,
      );
    }
    const objects = sites.filter((site) => isPlainObject(site.value));
    const site = context.random.pick(objects);
    for (let index = 0; index < count; index++) replaceAt(draft.body!, [...site.path, `unknown_${index}`], index);
    return {
      description: `${pointerText(site.path)}: ${count} unknown fields unknown_0…unknown_${count - 1}`,
      mustRefuse: bodyBreaksContract(draft, context),
    };
  },
};

const hugeString: Mutator = {
  kind: 'body.huge-string',
  weight: weightWithBody(2),
  apply(draft, context) {
    const strings = sitesOf(draft, context).filter((site) => typeof site.value === 'string');
    const site = context.random.pick(strings.length > 0 ? strings : sitesOf(draft, context));
    // Up to 400,000 characters: under the 1 MiB body limit even in two-byte characters.
    const length = context.random.pick([300, 5_000, 70_000, 400_000]);
    const unit = context.random.pick(['a', 'é', '0', '-', typeof site.value === 'string' && site.value !== '' ? [...site.value][0]! : 'b']);
    return replaceSite(draft, context, site, unit.repeat(length), `${JSON.stringify(unit)} × ${length}`);
  },
};

const CONTROL = ['\u0000', '\u0001', '\u0007', '\u0008', '\t', '\n', '\r', '\u001b', '\u001f', '\u007f', '\u0085', '\u009f'];
const UNICODE_EDGES = [
  '\ud800',
  '\udfff',
  '\ud83d',
  '\u202e',
  '\u200b',
  '\u200d',
  '\ufeff',
  '\ufffe',
  '\uffff',
  'e\u0301',
  '\u2028',
  '\u2029',
  '👩‍👩‍👧',
  'ｆｒａ１',
  'ı',
  'İ',
  'ß',
  '١٢٣',
  '𝟘',
  '\u00a0',
  'ǅ',
  '\u0000\u0000',
];

function insertInString(draft: Draft, context: MutationContext, kind: string, pieces: string[]) {
  const strings = sitesOf(draft, context).filter((site) => typeof site.value === 'string');
  if (strings.length === 0) return undefined;
  const site = context.random.pick(strings);
  const original = site.value as string;
  const piece = context.random.pick(pieces);
  const position = context.random.pick(['replace', 'start', 'middle', 'end'] as const);
  const middle = Math.floor(original.length / 2);
  const value =
    position === 'replace'
      ? piece
      : position === 'start'
        ? piece + original
        : position === 'end'
          ? original + piece
          : original.slice(0, middle) + piece + original.slice(middle);
  return replaceSite(draft, context, site, value, `${kind} ${JSON.stringify(piece)} (${position}) → ${preview(value)}`);
}

const controlCharacters: Mutator = {
  kind: 'body.control-characters',
  weight: weightWithBody(2),
  apply: (draft, context) => insertInString(draft, context, 'control character', CONTROL),
};

const unicodeEdges: Mutator = {
  kind: 'body.unicode-edge',
  weight: weightWithBody(2),
  apply: (draft, context) => insertInString(draft, context, 'unicode', UNICODE_EDGES),
};

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** The exact value of a JSON number literal when it is an integer (`1e2`, `-0`, `5.000`); else undefined. */
export function exactIntegerOf(literal: string): bigint | undefined {
  const match = JSON_NUMBER.exec(literal);
  if (!match) return undefined;
  const negative = literal.startsWith('-');
  const fraction = match[2]?.slice(1) ?? '';
  let digits = (match[1]! + fraction).replace(/^0+(?=\d)/, '');
  let exponent = Number(match[3]?.slice(1) ?? 0) - fraction.length;
  while (digits.length > 1 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    exponent++;
  }
  if (/^0+$/.test(digits)) return 0n;
  if (exponent < 0) return undefined;
  // Far beyond any bound of the contract; no need to build the number.
  if (exponent > 400) return (negative ? -1n : 1n) * 10n ** 400n;
  return (negative ? -1n : 1n) * BigInt(digits) * 10n ** BigInt(exponent);
}

/**
 * Literals that a reader going through a double takes for the integer the site holds, though
 * they are not that integer (`7.00000000000000000001`, `1e-400`), or that are it in an unusual
 * spelling (`7.0`, `7e0`, `-0`).
 */
function nearIntegerLiterals(site: BodySite): string[] {
  const value =
    typeof site.value === 'number' && Number.isInteger(site.value)
      ? String(site.value)
      : typeof site.value === 'bigint'
        ? site.value.toString()
        : '1';
  return [
    `${value}.00000000000000000001`,
    '1e-400',
    `0.${'0'.repeat(400)}1`,
    `${value}.0`,
    `${value}e0`,
    '-0',
    `${value}00000000000000000000e-20`,
    `${value}.99999999999999999999`,
  ];
}

function numberLiterals(site: BodySite): string[] {
  const literals = [
    '9223372036854775808',
    '-9223372036854775809',
    '18446744073709551616',
    '1e-400',
    '-0',
    '0',
    '1.0',
    '1e400',
    '-1e400',
    '1E2',
    '0.5',
  ];
  literals.push(
    '1.0000000000000000001',
    '100e-2',
    '0e10',
    '9007199254740993',
    '9007199254740993.0',
    '1e19',
    '-1e-7',
    '123456789012345678901234567890',
  );
  literals.push('00', '01', '+1', '.5', '1.', 'NaN', 'Infinity', '-', '0x10', '1e', '--1');
  if (site.schema && typesOf(site.schema).includes('integer')) {
    const [min, max] = integerRange(site.schema);
    literals.push(`${max + 1n}`, `${min - 1n}`, `${max}.0`, `${min}e0`, `${max}0e-1`);
  }
  return literals;
}

/**
 * Whether a literal in place of a site's value leaves the body valid. The literal is judged by its
 * exact value (`1e-400` is not an integer, though it parses to 0), then the body with that value.
 */
function literalBreaksContract(draft: Draft, context: MutationContext, site: BodySite, literal: string): boolean {
  if (!JSON_NUMBER.test(literal) || !site.schema) return true;
  const types = typesOf(site.schema);
  let value: number | bigint;
  const integer = exactIntegerOf(literal);
  if (types.includes('integer')) {
    if (integer === undefined) return true;
    const [min, max] = integerRange(site.schema);
    if (integer < min || integer > max) return true;
    value = integer;
  } else if (types.includes('number')) {
    value = Number(literal);
    if (!Number.isFinite(value)) return true;
  } else return true;
  const scratch = replaceAt(cloneBody(draft.body!), site.path, value);
  return !context.schemas.validates(draft.operation.body!.schema, toPlainJson(scratch));
}

const numberLiteral: Mutator = {
  kind: 'body.number-literal',
  weight: weightWithBody(3),
  apply(draft, context) {
    const sites = sitesOf(draft, context);
    const numeric = sites.filter((site) => site.schema && typesOf(site.schema).some((type) => type === 'integer' || type === 'number'));
    const site = context.random.pick(numeric.length > 0 && context.random.chance(0.85) ? numeric : sites);
    const literal = context.random.pick(context.random.chance(0.5) ? nearIntegerLiterals(site) : numberLiterals(site));
    const mustRefuse = literalBreaksContract(draft, context, site, literal);
    draft.body = replaceAt(draft.body!, site.path, new RawJson(literal));
    return { description: `${pointerText(site.path)} ← ${literal}`, mustRefuse };
  },
};

function nested(depth: number, shape: 'array' | 'object' | 'mixed'): string {
  if (shape === 'array') return '['.repeat(depth) + ']'.repeat(depth);
  if (shape === 'object') return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
  return '[{"a":'.repeat(depth) + 'null' + '}]'.repeat(depth);
}

const deepNesting: Mutator = {
  kind: 'body.deep-nesting',
  weight: weightWithBody(2),
  apply(draft, context) {
    const site = context.random.pick(sitesOf(draft, context));
    // Between about 1,500 and 6,000 levels a body passes the JSON parser and overflows the stack
    // of what reads it next (where exactly depends on the path and on the JIT's frames): dense there.
    const depth = context.random.chance(0.6) ? context.random.int(1_500, 6_000) : context.random.pick([64, 1_000, 10_000, 100_000]);
    const shape = context.random.pick(['array', 'object', 'mixed'] as const);
    // Nesting deeper only adds to what breaks: judge the same shape three levels deep.
    const shallow = replaceAt(cloneBody(draft.body!), site.path, JSON.parse(nested(3, shape)) as JsonBody);
    const mustRefuse = !context.schemas.validates(draft.operation.body!.schema, toPlainJson(shallow));
    draft.body = replaceAt(draft.body!, site.path, new RawJson(nested(depth, shape)));
    return { description: `${pointerText(site.path)} ← ${shape}s nested ${depth} deep`, mustRefuse };
  },
};

const INVALID_UTF8: number[][] = [
  [0xff],
  [0xfe],
  [0xc3, 0x28],
  [0x80],
  [0xbf],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xe2, 0x82],
  [0xc3],
];

const invalidUtf8: Mutator = {
  kind: 'body.invalid-utf8',
  weight: weightWithBody(2),
  apply(draft, context) {
    const bytes = Buffer.from(context.random.pick(INVALID_UTF8));
    const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
    const strings = sitesOf(draft, context).filter((site) => typeof site.value === 'string');
    if (strings.length === 0 || context.random.chance(0.25)) {
      // Outside any string: the body is no longer JSON at all.
      const text = bodyBytesOf(draft)!;
      draft.bodyBytes = Buffer.concat([text.subarray(0, 1), bytes, text.subarray(1)]);
      return { description: `bytes ${hex} after the body's first byte`, mustRefuse: true };
    }
    const site = context.random.pick(strings);
    const text = site.value as string;
    const cut = Math.floor(text.length / 2);
    draft.body = replaceAt(
      draft.body!,
      site.path,
      new RawStringBytes(Buffer.concat([Buffer.from(text.slice(0, cut)), bytes, Buffer.from(text.slice(cut))])),
    );
    // A server may refuse it or read it with U+FFFD: the contract does not say which.
    return { description: `${pointerText(site.path)}: bytes ${hex} inside the string ${preview(text)}`, mustRefuse: undefined };
  },
};

/** Rewrites of the body's text that leave it not JSON (or, for some, JSON the contract does not rule on). */
function malformations(text: string, context: MutationContext): Array<{ name: string; text: string; mustRefuse: boolean | undefined }> {
  const cut = context.random.int(1, Math.max(1, text.length - 1));
  const firstKey = /"([^"\\]+)":/.exec(text)?.[1];
  const list: Array<{ name: string; text: string; mustRefuse: boolean | undefined }> = [
    { name: `cut after ${cut} bytes`, text: text.slice(0, cut), mustRefuse: true },
    { name: 'trailing garbage', text: `${text}x`, mustRefuse: true },
    { name: 'two documents', text: `${text}${text}`, mustRefuse: true },
    { name: 'single quotes', text: text.replace(/"/g, "'"), mustRefuse: text.includes('"') ? true : undefined },
    { name: 'a comment', text: `/* c */${text}`, mustRefuse: true },
    { name: 'a trailing comma', text: text.replace(/}$/, ',}'), mustRefuse: true },
    { name: 'a byte order mark', text: `\ufeff${text}`, mustRefuse: undefined },
    { name: 'a NUL after it', text: `${text}\u0000`, mustRefuse: true },
    { name: 'whitespace around it', text: `\n\t ${text} \r\n`, mustRefuse: false },
  ];
  if (firstKey !== undefined) {
    list.push({ name: `the key ${firstKey} unquoted`, text: text.replace(`"${firstKey}":`, `${firstKey}:`), mustRefuse: true });
    list.push({ name: `the key ${firstKey} twice`, text: text.replace(/^\{/, `{"${firstKey}":null,`), mustRefuse: undefined });
  }
  return list;
}

const malformedJson: Mutator = {
  kind: 'body.malformed-json',
  weight: weightWithBody(3),
  apply(draft, context) {
    const original = encodeJson(draft.body!).toString('utf8');
    const chosen = context.random.pick(malformations(original, context));
    // Whitespace around a valid body keeps it valid only if the body itself was.
    const mustRefuse = chosen.mustRefuse === false ? bodyBreaksContract(draft, context) : chosen.mustRefuse;
    draft.bodyBytes = Buffer.from(chosen.text, 'utf8');
    return { description: chosen.name, mustRefuse };
  },
};

const notAnObject: Mutator = {
  kind: 'body.not-an-object',
  weight: weightWithBody(1),
  apply(draft, context) {
    const body = cloneBody(draft.body!);
    const value = context.random.pick<JsonBody>([null, [], 'text', 0, true, [body], { body }]);
    draft.body = value;
    return { description: `the body is ${preview(value)}`, mustRefuse: bodyBreaksContract(draft, context) };
  },
};

const absentBody: Mutator = {
  kind: 'body.absent',
  weight: weightWithBody(2),
  apply(draft, context) {
    const framing = context.random.pick(['length', 'chunked'] as const);
    draft.body = undefined;
    draft.bodyBytes = framing === 'chunked' ? Buffer.alloc(0) : undefined;
    draft.framing = framing;
    draft.contentType = undefined;
    const how = framing === 'chunked' ? 'an empty chunked body' : 'Content-Length: 0';
    return { description: `no body and no Content-Type (${how})`, mustRefuse: draft.operation.body!.required ? true : undefined };
  },
};

const emptyBody: Mutator = {
  kind: 'body.empty',
  weight: weightWithBody(2),
  apply(draft, context) {
    const text = context.random.pick(['', ' ', '\r\n', '\t\t']);
    draft.bodyBytes = Buffer.from(text);
    draft.contentType = 'application/json';
    return {
      description: `Content-Type: application/json with the body ${JSON.stringify(text)}`,
      mustRefuse: draft.operation.body!.required ? true : undefined,
    };
  },
};

const bodyOnBodylessOperation: Mutator = {
  kind: 'body.unexpected',
  weight: (operation) => (operation.body ? 0 : 1),
  apply(draft, context) {
    const value = context.random.pick<JsonBody>([{}, { x: 1 }, [], 'text', null]);
    draft.body = value;
    draft.contentType = 'application/json';
    return { description: `a body ${preview(value)} on an operation that takes none`, mustRefuse: undefined };
  },
};

export const bodyMutators: Mutator[] = [
  wrongType,
  missingRequired,
  unknownField,
  manyErrors,
  hugeString,
  controlCharacters,
  unicodeEdges,
  numberLiteral,
  deepNesting,
  invalidUtf8,
  malformedJson,
  notAnObject,
  absentBody,
  emptyBody,
  bodyOnBodylessOperation,
];
