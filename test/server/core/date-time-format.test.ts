// The contract's date-time format decides which timestamps a request may carry and which an
// answer may hold. Its fast path for the API's own form (server/core/date-time-format.ts) must
// agree with ajv-formats' full RFC 3339 check on every string, valid or not (year 0000 included:
// RFC 3339's, and PostgreSQL's 1 BC; test/server/areas/audit/audit.test.ts filters by it).
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { describe, expect, test } from 'vitest';
import { isRfc3339DateTime } from '../../../server/core/date-time-format.ts';

const rfc3339 = (fullFormats['date-time'] as { validate: (value: string) => boolean }).validate;
const expected = rfc3339;

/** Every day of a leap year and of a common year, at several times, with and without a fraction. */
function calendar(): string[] {
  const strings: string[] = [];
  for (const year of [2024, 2026, 1900, 2000, 2100, 1970, 9999]) {
    for (let month = 1; month <= 12; month++) {
      for (let day = 28; day <= 32; day++) {
        const date = `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
        strings.push(`${date}T00:00:00Z`, `${date}T23:59:59.999Z`, `${date}T12:30:45.123456Z`);
      }
    }
  }
  return strings;
}

const EDGES = [
  '2026-11-24T01:02:03.123Z',
  '2026-11-24T01:02:03Z',
  '2026-11-24T01:02:03.Z',
  '2026-11-24T01:02:03.1Z',
  '2026-11-24T24:00:00Z',
  '2026-11-24T23:60:00Z',
  '2026-11-24T23:59:60Z',
  '2026-11-24T23:59:60.5Z',
  '2026-11-24T22:59:60Z',
  '2026-11-24T01:02:61Z',
  '2026-00-10T01:02:03Z',
  '2026-13-10T01:02:03Z',
  '2026-11-00T01:02:03Z',
  '2026-02-29T01:02:03Z',
  '2024-02-29T01:02:03Z',
  '2026-04-31T01:02:03Z',
  '2026-11-24t01:02:03z',
  '2026-11-24 01:02:03Z',
  '2026-11-24T01:02:03+05:30',
  '2026-11-24T01:02:03.5-08:00',
  '2026-11-24T01:02:03',
  '2026-11-24T1:02:03Z',
  '2026-11-24T01:02:3Z',
  '2026-11-24T01-02-03Z',
  '2026/11/24T01:02:03Z',
  '2026-11-24X01:02:03Z',
  '2026-11-24T01:02:03.12a3Z',
  '2026-11-24T01:02:03,123Z',
  '２０２６-11-24T01:02:03Z',
  '2026-1１-24T01:02:03Z',
  '+2026-11-24T01:02:03Z',
  '12026-11-24T01:02:03Z',
  ' 2026-11-24T01:02:03Z',
  '2026-11-24T01:02:03Z ',
  '2026-11-24T01:02:03Z\n',
  '2026-11-24TT01:02:03Z',
  '0000-01-01T00:00:00Z',
  '0000-01-01T00:00:00+01:00',
  '0001-01-01T00:00:00Z',
  '0000-02-29T00:00:00Z',
  '0000-02-30T00:00:00Z',
  '',
  'Z',
];

describe('the date-time format', () => {
  test.each(EDGES)('%j: as ajv-formats decides', (value) => {
    expect(isRfc3339DateTime(value)).toBe(expected(value));
  });

  test('agrees with ajv-formats on every day of several years, valid days and impossible ones', () => {
    const strings = calendar();
    const disagreements = strings.filter((value) => isRfc3339DateTime(value) !== expected(value));
    expect(disagreements).toEqual([]);
    // The sample holds both answers: impossible days (February 30th, April 31st, day 32) and real ones.
    expect(strings.filter(expected).length).toBeGreaterThan(800);
    expect(strings.filter((value) => !expected(value)).length).toBeGreaterThan(300);
  });

  test('agrees with ajv-formats on every instant toISOString writes, and on each one altered by a character', () => {
    const disagreements: string[] = [];
    let instant = Date.UTC(1600, 0, 1);
    for (let step = 0; step < 4000; step++) {
      instant += 86_400_000 * 37 + 3_723_456;
      const written = new Date(instant).toISOString();
      if (!isRfc3339DateTime(written)) disagreements.push(written);
      const at = step % written.length;
      for (const replacement of ['9', '0', 'x', ':', '-', '.', 'T', 'Z']) {
        const altered = written.slice(0, at) + replacement + written.slice(at + 1);
        if (isRfc3339DateTime(altered) !== expected(altered)) disagreements.push(altered);
      }
    }
    expect(disagreements).toEqual([]);
  });
});
