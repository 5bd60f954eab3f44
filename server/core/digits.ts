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
