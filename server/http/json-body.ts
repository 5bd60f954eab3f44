import type { NextFunction, Request, Response } from 'express';
import { isLosslessNumber, parse } from 'lossless-json';
import { malformedJson, payloadTooLarge, unsupportedMediaType } from './errors.ts';
import { fieldInvalid, validationFailed } from '../core/errors.ts';
import { readJsonNumber } from './json-number.ts';
import { pointerOf } from './pointer.ts';
import { stateOf, type ExactInteger } from './request-state.ts';

/** The largest request body read (the contract's introduction states it). */
const LIMIT_BYTES = 1024 * 1024;
/**
 * Past the limit, the rest of a body is read and thrown away up to this much, so that the client
 * (still sending) reads the 413 instead of a reset connection; beyond it the connection is cut.
 */
const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;
/** The deepest nesting of arrays and objects accepted (the contract's introduction states it). */
export const MAX_JSON_DEPTH = 32;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the JSON body of an operation that takes one, without losing integers: `JSON.parse` would
 * round 9223372036854775807 to 2^63. Every number is read from its digits (json-number.ts); an
 * integer beyond 2^53 reaches the validator as a (rounded) number and is put back exactly after
 * validation (restoreExactIntegers). Bodies sent to an operation that takes none are not read.
 */
export async function jsonBody(req: Request, res: Response, next: NextFunction): Promise<void> {
  const state = stateOf(res);
  const expected = state.route!.route.requestBody;
  if (expected === 'none') return next();
  const declaredLength = Number(req.headers['content-length'] ?? 0);
  const hasBody = declaredLength > 0 || req.headers['transfer-encoding'] !== undefined;
  const noBody = (): void => {
    if (expected === 'required') throw validationFailed([{ pointer: '', detail: 'a JSON body is required' }]);
    next();
  };
  if (!hasBody) return noBody();
  const bytes = await readBody(req, declaredLength);
  // An empty chunked body is no body, whatever its Content-Type says.
  if (bytes.length === 0) return noBody();
  if (!isJson(req)) throw unsupportedMediaType(mediaTypeOf(req));
  const text = decode(bytes);
  if (text.trim() === '') return noBody();
  // Checked before parsing: the parser recurses, and a deep enough body exhausts the stack.
  if (nestingDepth(text) > MAX_JSON_DEPTH) throw malformedJson(`it nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (error) {
    throw malformedJson(error instanceof Error ? error.message.replace(/\.$/, '') : 'unreadable');
  }
  const exactIntegers: ExactInteger[] = [];
  req.body = withExactNumbers(parsed, [], exactIntegers);
  state.exactIntegers = exactIntegers;
  next();
}

const mediaTypeOf = (req: Request): string => (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

function isJson(req: Request): boolean {
  const mediaType = mediaTypeOf(req);
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/** After validation: the body's big integers become exact bigints for the handler. */
export function restoreExactIntegers(req: Request, res: Response, next: NextFunction): void {
  for (const { path, value } of stateOf(res).exactIntegers ?? []) {
    let container = req.body as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) container = container[key] as Record<string | number, unknown>;
    container[path[path.length - 1]!] = value;
  }
  next();
}

/** The parsed body with every number read exactly; `path` is the place being walked. */
function withExactNumbers(value: unknown, path: Array<string | number>, exact: ExactInteger[]): unknown {
  if (isLosslessNumber(value)) {
    const number = readJsonNumber(value.value);
    if (number.kind === 'refused') throw fieldInvalid(pointerOf(path), number.detail);
    if (number.kind === 'bigint') {
      exact.push({ path: [...path], value: number.value });
      return Number(number.value);
    }
    return number.value;
  }
  if (value === null || typeof value !== 'object') return value;
  const walk = (key: string | number, item: unknown): unknown => {
    path.push(key);
    const read = withExactNumbers(item, path, exact);
    path.pop();
    return read;
  };
  if (Array.isArray(value)) return value.map((item, index) => walk(index, item));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(key, item)]));
}

/** How deep arrays and objects nest in a JSON text (brackets inside strings do not count). */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c)
        index++; // backslash: the next character is escaped
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) {
      inString = true;
    } else if (char === 0x5b || char === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (char === 0x5d || char === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

function decode(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw malformedJson('it is not valid UTF-8');
  }
}

async function readBody(req: Request, declaredLength: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = declaredLength > LIMIT_BYTES;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > LIMIT_BYTES) tooLarge = true;
    if (tooLarge) {
      chunks.length = 0;
      if (size > DRAIN_LIMIT_BYTES) break;
    } else {
      chunks.push(chunk);
    }
  }
  if (tooLarge) throw payloadTooLarge('1 MiB');
  return Buffer.concat(chunks);
}
