import type { NextFunction, Request, Response } from 'express';
import { isInteger, isLosslessNumber, isSafeNumber, parse } from 'lossless-json';
import { fieldInvalid, malformedJson, payloadTooLarge, unsupportedMediaType } from './errors.ts';
import { stateOf } from './request-state.ts';

const LIMIT_BYTES = 1024 * 1024;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Reads a JSON request body without losing integers. `JSON.parse` would round
 * 9223372036854775807 to 9223372036854775808; here every number is read from its digits. An
 * integer beyond 2^53 reaches the validator as a (rounded) number, and is put back exactly after
 * validation (see restoreExactIntegers). No field of this API goes beyond a signed 64-bit
 * integer, so one that does is refused here, exactly, with a pointer to it.
 */
export async function jsonBody(req: Request, res: Response, next: NextFunction): Promise<void> {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody) return next();
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (mediaType !== 'application/json' && !mediaType.endsWith('+json')) throw unsupportedMediaType(mediaType);
  const text = await readText(req);
  if (text.trim() === '') return next();
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (error) {
    throw malformedJson(error instanceof Error ? error.message.replace(/\.$/, '') : 'unreadable');
  }
  const exactIntegers: Array<{ path: Array<string | number>; value: bigint }> = [];
  req.body = toNumbers(parsed, [], exactIntegers);
  stateOf(res).exactIntegers = exactIntegers;
  next();
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

function toNumbers(value: unknown, path: Array<string | number>, exact: Array<{ path: Array<string | number>; value: bigint }>): unknown {
  if (isLosslessNumber(value)) return toNumber(value.value, path, exact);
  if (Array.isArray(value)) return value.map((item, index) => toNumbers(item, [...path, index], exact));
  if (value !== null && typeof value === 'object') {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) result[key] = toNumbers(item, [...path, key], exact);
    return result;
  }
  return value;
}

function toNumber(digits: string, path: Array<string | number>, exact: Array<{ path: Array<string | number>; value: bigint }>): number {
  if (!isInteger(digits) || isSafeNumber(digits)) return Number(digits);
  const value = BigInt(digits);
  if (value > INT64_MAX) throw fieldInvalid(pointerOf(path), 'must be at most 9223372036854775807');
  if (value < INT64_MIN) throw fieldInvalid(pointerOf(path), 'must be at least -9223372036854775808');
  exact.push({ path, value });
  return Number(digits);
}

export function pointerOf(path: Array<string | number>): string {
  return path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

async function readText(req: Request): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > LIMIT_BYTES) throw payloadTooLarge('1 MiB');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
