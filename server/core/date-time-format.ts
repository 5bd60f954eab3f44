import { fullFormats } from 'ajv-formats/dist/formats.js';
import { digitsAt, isDigitAt } from '../db/timestamps.ts';

const rfc3339DateTime = fullFormats['date-time'] as { validate: (value: string) => boolean };

/**
 * The contract's `date-time` format, as the validator checks it in requests and in responses: an
 * RFC 3339 date-time, as ajv-formats' full check decides. Year 0000 included: it is RFC 3339's
 * (the year before 1), and refusing it told a client that a valid bound was invalid; where one
 * reaches PostgreSQL, `timestamptzInput` (db/timestamps.ts) writes it as PostgreSQL spells it.
 *
 * Every timestamp the API answers with is written by `toISOString` (`2026-11-24T01:02:03.123Z`),
 * and a list of 100 instances has 300 of them to check. ajv-formats splits each around its `T` and
 * runs two regular expressions on the halves (about 360 ns and a dozen short-lived objects each;
 * a tenth of a millisecond of every such list). That one form is recognized here character by
 * character, allocating nothing; only a string the fast path *accepts* skips the full check, which
 * it accepts too (same digits, same calendar), so anything else (offsets, a lower-case `t`, leap
 * seconds, any doubt) is decided by ajv-formats exactly as before.
 */
export function isRfc3339DateTime(value: string): boolean {
  return isUtcInstant(value) || rfc3339DateTime.validate(value);
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `YYYY-MM-DDTHH:MM:SS[.fraction]Z` naming a real calendar day, an hour, minute and second (no leap second). */
function isUtcInstant(value: string): boolean {
  const length = value.length;
  if (length < 20 || value.charCodeAt(length - 1) !== 90 /* Z */) return false;
  if (value.charCodeAt(4) !== 45 /* - */ || value.charCodeAt(7) !== 45 || value.charCodeAt(10) !== 84 /* T */) return false;
  if (value.charCodeAt(13) !== 58 /* : */ || value.charCodeAt(16) !== 58) return false;
  if (length > 20) {
    // A fraction: a dot and at least one digit, up to the Z.
    if (value.charCodeAt(19) !== 46 /* . */ || length === 21) return false;
    for (let index = 20; index < length - 1; index++) if (!isDigitAt(value, index)) return false;
  }
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 7);
  const day = digitsAt(value, 8, 10);
  const hour = digitsAt(value, 11, 13);
  const minute = digitsAt(value, 14, 16);
  const second = digitsAt(value, 17, 19);
  // NaN (a character that is not a digit) fails every comparison.
  if (!(year >= 0 && month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 59)) return false;
  const leapYear = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leapYear ? 29 : DAYS_IN_MONTH[month]!);
}
