/**
 * The exact value of a JSON number literal, read from its digits. `Number(text)` is not enough:
 * `9223372036854775807` rounds up to 2^63, and `1e-400` underflows to 0, which a schema would then
 * accept as an integer. Every field of this API that takes a number takes an integer of at most
 * 64 bits, so a literal is one of:
 *
 * - an exact integer (`42`, `-7`, `1.0`, `2e3`), as a number when it is safe in a double and as a
 *   bigint beyond ±(2^53−1), and refused beyond the int64 range;
 * - a number that is not an integer and that a double represents as a non-integer (`0.5`):
 *   passed on as a number, for the schema to refuse where an integer is due;
 * - anything else (`1e-400`, `1.0000000000000000001`): refused here, since no double says what
 *   was sent.
 */
export type JsonNumber = { kind: 'number'; value: number } | { kind: 'bigint'; value: bigint } | { kind: 'refused'; detail: string };

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** The digits of 2^63: an integer with more digits is beyond int64 whatever they are. */
const INT64_DIGITS = 19;
const LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

export function readJsonNumber(literal: string): JsonNumber {
  const match = LITERAL.exec(literal);
  if (!match) return { kind: 'refused', detail: `is not a JSON number` };
  const [, sign, whole, fraction = '', exponent = '0'] = match;
  // The value is ±digits × 10^scale, with digits free of leading and trailing zeros.
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  let scale = Number(exponent) - fraction.length;
  if (digits === '') return { kind: 'number', value: 0 };
  const trailingZeros = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailingZeros);
  scale += trailingZeros;

  if (scale < 0) {
    const approximate = Number(literal);
    return Number.isFinite(approximate) && !Number.isInteger(approximate)
      ? { kind: 'number', value: approximate }
      : { kind: 'refused', detail: `must be an integer; ${abbreviate(literal)} is not one` };
  }
  if (digits.length + scale > INT64_DIGITS) return outOfRange(sign === '-');
  const value = BigInt(`${sign}${digits}`) * 10n ** BigInt(scale);
  if (value > INT64_MAX || value < INT64_MIN) return outOfRange(value < 0n);
  return value > MAX_SAFE || value < -MAX_SAFE ? { kind: 'bigint', value } : { kind: 'number', value: Number(value) };
}

function outOfRange(negative: boolean): JsonNumber {
  return { kind: 'refused', detail: negative ? 'must be at least -9223372036854775808' : 'must be at most 9223372036854775807' };
}

/** A literal quoted in a problem detail: a long one is cut, so the detail stays short. */
function abbreviate(literal: string): string {
  return literal.length <= 40 ? literal : `${literal.slice(0, 37)}...`;
}
