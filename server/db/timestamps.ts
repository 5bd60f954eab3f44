import pg from 'pg';

export const TIMESTAMPTZ_OID = 1184;
const defaultTimestampParser = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => Date | number | null;

const ZERO = 48;

/** The number the ASCII digits at [from, to) of `text` spell; NaN at any other character. Allocates nothing. */
export function digitsAt(text: string, from: number, to: number): number {
  let value = 0;
  for (let index = from; index < to; index++) {
    const digit = text.charCodeAt(index) - ZERO;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

/** Whether the character at `index` of `text` is an ASCII digit. */
export function isDigitAt(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= ZERO && code <= ZERO + 9;
}

/**
 * An RFC 3339 date-time (as the contract's `date-time` format accepts it) as `timestamptz` input.
 * RFC 3339's year 0000 is the year before 1 (proleptic Gregorian, as ISO 8601 counts), which
 * PostgreSQL has (it holds dates back to 4713 BC) but names `0001 BC`: its input refuses a year 0.
 * Every other date-time is PostgreSQL's own input, to the microsecond, unchanged.
 */
export function timestamptzInput(dateTime: string): string {
  return dateTime.startsWith('0000-') ? `0001-${dateTime.slice(5)} BC` : dateTime;
}

/**
 * A `timestamptz` as PostgreSQL writes it in its default ISO style (`2026-11-24 01:35:15.123456+00`,
 * the offset that of the session's TimeZone: `+05:30`, `-08`, ...), read by position. A list of a
 * hundred instances reads several hundred of them, and pg's general parser (regular expressions
 * for every form PostgreSQL can write) was a twentieth of that request's CPU. Anything else (years
 * before 1000 or after 9999, BC, infinity, another DateStyle) goes to pg's parser, as before.
 * Milliseconds are the first three digits of the fraction: the instant truncated to the
 * millisecond, as JavaScript dates hold it.
 */
export function parseTimestamptz(text: string): Date | number | null {
  const instant = instantOf(text);
  return instant === undefined ? defaultTimestampParser(text) : new Date(instant);
}

function instantOf(text: string): number | undefined {
  if (text.length < 22 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32) return undefined;
  if (text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return undefined;
  const year = digitsAt(text, 0, 4);
  if (!(year >= 1000)) return undefined;
  const month = digitsAt(text, 5, 7);
  const day = digitsAt(text, 8, 10);
  const hour = digitsAt(text, 11, 13);
  const minute = digitsAt(text, 14, 16);
  const second = digitsAt(text, 17, 19);
  let at = 19;
  let milliseconds = 0;
  if (text.charCodeAt(at) === 46) {
    const fractionStart = ++at;
    while (at < text.length && isDigitAt(text, at)) at++;
    const digits = at - fractionStart;
    if (digits === 0) return undefined;
    milliseconds = digitsAt(text, fractionStart, fractionStart + Math.min(digits, 3)) * 10 ** (3 - Math.min(digits, 3));
  }
  const offsetSeconds = offsetOf(text, at);
  if (offsetSeconds === undefined) return undefined;
  const instant = Date.UTC(year, month - 1, day, hour, minute, second, milliseconds) - offsetSeconds * 1000;
  return Number.isNaN(instant) ? undefined : instant;
}

/** `+HH`, `+HH:MM` or `+HH:MM:SS` (or `-`) from `at` to the end, in seconds east of UTC. */
function offsetOf(text: string, at: number): number | undefined {
  const sign = text.charCodeAt(at);
  if (sign !== 43 && sign !== 45) return undefined;
  const rest = text.length - at - 1;
  if (rest !== 2 && rest !== 5 && rest !== 8) return undefined;
  let seconds = digitsAt(text, at + 1, at + 3) * 3600;
  if (rest >= 5) {
    if (text.charCodeAt(at + 3) !== 58) return undefined;
    seconds += digitsAt(text, at + 4, at + 6) * 60;
  }
  if (rest === 8) {
    if (text.charCodeAt(at + 6) !== 58) return undefined;
    seconds += digitsAt(text, at + 7, at + 9);
  }
  if (Number.isNaN(seconds)) return undefined;
  return sign === 43 ? seconds : -seconds;
}
