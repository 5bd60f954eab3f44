// The next run of a repeating schedule, as a pure computation: wall-clock times kept in a time
// zone, across daylight-saving changes.
import { IANAZone } from 'luxon';
import { describe, expect, test } from 'vitest';
import {
  isKnownTimezone,
  nextRunAfter,
  normaliseTimeOfDay,
  wallClockInstant,
  type Recurrence,
} from '../../../../../server/areas/compute/schedules/schedule-time.ts';

const weekly = (dayOfWeek: number, timeOfDay: string, timezone = 'UTC'): Recurrence => ({ kind: 'weekly', dayOfWeek, timeOfDay, timezone });
const monthly = (dayOfMonth: number, timeOfDay: string, timezone = 'UTC'): Recurrence => ({
  kind: 'monthly',
  dayOfMonth,
  timeOfDay,
  timezone,
});
const next = (recurrence: Recurrence, after: string) => nextRunAfter(recurrence, new Date(after)).toISOString();

describe('weekly', () => {
  test('the next matching day at the time; strictly after', () => {
    // 2026-11-20 is a Friday; 6 = Sunday, 0 = Monday.
    expect(next(weekly(6, '03:00'), '2026-11-20T10:00:00Z')).toBe('2026-11-22T03:00:00.000Z');
    expect(next(weekly(0, '03:00'), '2026-11-20T10:00:00Z')).toBe('2026-11-23T03:00:00.000Z');
    expect(next(weekly(4, '10:00'), '2026-11-20T09:59:59Z')).toBe('2026-11-20T10:00:00.000Z');
    expect(next(weekly(4, '10:00'), '2026-11-20T10:00:00Z')).toBe('2026-11-27T10:00:00.000Z');
    expect(next(weekly(4, '10:00:30'), '2026-11-20T10:00:00Z')).toBe('2026-11-20T10:00:30.000Z');
  });

  test('kept in the time zone, not as a fixed offset: 03:00 Berlin in winter and in summer', () => {
    expect(next(weekly(6, '03:00', 'Europe/Berlin'), '2026-01-05T00:00:00Z')).toBe('2026-01-11T02:00:00.000Z');
    expect(next(weekly(6, '03:00', 'Europe/Berlin'), '2026-07-06T00:00:00Z')).toBe('2026-07-12T01:00:00.000Z');
    // The local day decides: Sunday 00:30 in Tokyo is still Saturday in UTC.
    expect(next(weekly(6, '00:30', 'Asia/Tokyo'), '2026-11-20T00:00:00Z')).toBe('2026-11-21T15:30:00.000Z');
  });

  test('spring forward: a time in the gap runs at the first instant after it', () => {
    // Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
    expect(next(weekly(6, '02:30', 'Europe/Berlin'), '2026-03-25T00:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    expect(next(weekly(6, '02:00', 'Europe/Berlin'), '2026-03-25T00:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    expect(next(weekly(6, '02:59:59', 'Europe/Berlin'), '2026-03-25T00:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    // 03:00 exists (it is the first instant after the gap) and 01:59 is before it.
    expect(next(weekly(6, '03:00', 'Europe/Berlin'), '2026-03-25T00:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    expect(next(weekly(6, '01:59', 'Europe/Berlin'), '2026-03-25T00:00:00Z')).toBe('2026-03-29T00:59:00.000Z');
    // The week after, 02:30 exists again (CEST).
    expect(next(weekly(6, '02:30', 'Europe/Berlin'), '2026-03-29T01:00:00Z')).toBe('2026-04-05T00:30:00.000Z');
    // New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
    expect(next(weekly(6, '02:30', 'America/New_York'), '2026-03-02T00:00:00Z')).toBe('2026-03-08T07:00:00.000Z');
    // Lord Howe Island moves by 30 minutes: 2026-10-04 02:00 (+10:30) jumps to 02:30 (+11).
    expect(next(weekly(6, '02:15', 'Australia/Lord_Howe'), '2026-09-28T00:00:00Z')).toBe('2026-10-03T15:30:00.000Z');
  });

  test('fall back: a time that occurs twice runs once, at the first occurrence', () => {
    // Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 is 00:30 UTC, then 01:30 UTC.
    expect(next(weekly(6, '02:30', 'Europe/Berlin'), '2026-10-20T00:00:00Z')).toBe('2026-10-25T00:30:00.000Z');
    // After the first occurrence, the next run is a week later, not the second occurrence.
    expect(next(weekly(6, '02:30', 'Europe/Berlin'), '2026-10-25T00:30:00Z')).toBe('2026-11-01T01:30:00.000Z');
    expect(next(weekly(6, '02:30', 'Europe/Berlin'), '2026-10-25T01:00:00Z')).toBe('2026-11-01T01:30:00.000Z');
    // New York, 2026-11-01: 01:30 occurs at 05:30 and 06:30 UTC.
    expect(next(weekly(6, '01:30', 'America/New_York'), '2026-10-30T00:00:00Z')).toBe('2026-11-01T05:30:00.000Z');
    expect(next(weekly(6, '01:30', 'America/New_York'), '2026-11-01T05:30:00Z')).toBe('2026-11-08T06:30:00.000Z');
  });
});

describe('monthly', () => {
  test('the day of the month at the time, into the next month when passed', () => {
    expect(next(monthly(1, '04:00'), '2026-11-20T00:00:00Z')).toBe('2026-12-01T04:00:00.000Z');
    expect(next(monthly(28, '04:00'), '2026-01-31T00:00:00Z')).toBe('2026-02-28T04:00:00.000Z');
    expect(next(monthly(20, '04:00'), '2026-11-20T03:00:00Z')).toBe('2026-11-20T04:00:00.000Z');
    expect(next(monthly(20, '04:00'), '2026-12-20T04:00:00Z')).toBe('2027-01-20T04:00:00.000Z');
  });

  test('across daylight-saving changes and in the gap', () => {
    expect(next(monthly(15, '03:00', 'Europe/Berlin'), '2026-02-20T00:00:00Z')).toBe('2026-03-15T02:00:00.000Z');
    expect(next(monthly(15, '03:00', 'Europe/Berlin'), '2026-03-20T00:00:00Z')).toBe('2026-04-15T01:00:00.000Z');
    // 2026-03-08 in New York: 02:30 does not exist.
    expect(next(monthly(8, '02:30', 'America/New_York'), '2026-02-10T00:00:00Z')).toBe('2026-03-08T07:00:00.000Z');
  });
});

describe('wall-clock instants and inputs', () => {
  test('an ordinary time has one instant', () => {
    const zone = IANAZone.create('Europe/Berlin');
    expect(wallClockInstant(zone, { year: 2026, month: 11, day: 22, hour: 3, minute: 0, second: 0 }).toISOString()).toBe(
      '2026-11-22T02:00:00.000Z',
    );
  });

  test('time zones and times of day', () => {
    expect(isKnownTimezone('Europe/Berlin')).toBe(true);
    expect(isKnownTimezone('UTC')).toBe(true);
    expect(isKnownTimezone('Mars/Olympus_Mons')).toBe(false);
    expect(normaliseTimeOfDay('03:00')).toBe('03:00');
    expect(normaliseTimeOfDay('03:00:00')).toBe('03:00');
    expect(normaliseTimeOfDay('23:59:30')).toBe('23:59:30');
    expect(normaliseTimeOfDay('24:00')).toBeUndefined();
  });
});
