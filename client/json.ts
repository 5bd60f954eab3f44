// JSON that keeps big integers exact. The API sends integers up to 2^63-1 (the spend budget) as
// plain JSON numbers; JSON.parse would round them, so every body goes through lossless-json.
import { parse, stringify } from 'lossless-json';

const maxSafe = BigInt(Number.MAX_SAFE_INTEGER);

/** An integer beyond ±(2^53-1) becomes a bigint; every other number an ordinary number. */
function parseNumber(text: string): number | bigint {
  if (!/^-?\d+$/.test(text)) return Number(text);
  const value = BigInt(text);
  return value > maxSafe || value < -maxSafe ? value : Number(value);
}

/** Parses a response body: exact integers beyond 2^53 as `bigint`. Throws on invalid JSON. */
export function parseJson(text: string): unknown {
  return parse(text, null, parseNumber);
}

/** Serializes a request body: a `bigint` is written as its exact digits (`space` indents, as JSON.stringify's). */
export function stringifyJson(value: unknown, space?: number): string | undefined {
  return stringify(value, undefined, space);
}
