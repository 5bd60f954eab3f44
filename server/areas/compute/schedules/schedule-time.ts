import { DateTime, IANAZone } from 'luxon';

/** A repeating schedule's wall-clock rule. */
export type Recurrence =
  | { kind: 'weekly'; dayOfWeek: number; timeOfDay: string; timezone: string }
  | { kind: 'monthly'; dayOfMonth: number; timeOfDay: string; timezone: string };

const TIME_OF_DAY = /^([01][0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]))?$/;

export function isKnownTimezone(name: string): boolean {
  return IANAZone.isValidZone(name);
}

/** `HH:MM`, or `HH:MM:SS` when the seconds are not zero (the contract's output form); undefined if malformed. */
export function normaliseTimeOfDay(text: string): string | undefined {
  const match = TIME_OF_DAY.exec(text);
  if (!match) return undefined;
  const seconds = match[3] ?? '00';
  return seconds === '00' ? `${match[1]}:${match[2]}` : `${match[1]}:${match[2]}:${seconds}`;
}

/**
 * The first run strictly after `after`. Wall-clock times are kept in the schedule's time zone:
 * a time skipped by a spring-forward change runs at the first instant after the gap; a time that
 * occurs twice on a fall-back day runs once, at its first occurrence.
 */
export function nextRunAfter(recurrence: Recurrence, after: Date): Date {
  const zone = IANAZone.create(recurrence.timezone);
  const [hour, minute, second = 0] = recurrence.timeOfDay.split(':').map(Number) as [number, number, number?];
  const start = DateTime.fromJSDate(after, { zone }).startOf('day');
  if (recurrence.kind === 'weekly') {
    // Luxon's weekday is 1 = Monday … 7 = Sunday; the contract's day_of_week is 0 = Monday … 6 = Sunday.
    for (let days = 0; days <= 8; days++) {
      const date = start.plus({ days });
      if (date.weekday - 1 !== recurrence.dayOfWeek) continue;
      const run = wallClockInstant(zone, { year: date.year, month: date.month, day: date.day, hour, minute, second });
      if (run.getTime() > after.getTime()) return run;
    }
  } else {
    for (let months = 0; months <= 2; months++) {
      const month = start.startOf('month').plus({ months });
      const run = wallClockInstant(zone, { year: month.year, month: month.month, day: recurrence.dayOfMonth, hour, minute, second });
      if (run.getTime() > after.getTime()) return run;
    }
  }
  throw new Error(`no run found after ${after.toISOString()} for ${JSON.stringify(recurrence)}`);
}

export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/**
 * The instant a wall-clock time names in a zone. Offsets near it are tried; among the instants
 * whose local time is the wall-clock time, the first wins (fall back: the first occurrence). If
 * none has it, the time falls in a gap (spring forward), and the answer is the first instant
 * whose local time is past it: the end of the gap.
 */
export function wallClockInstant(zone: IANAZone, wall: WallClock): Date {
  const naive = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  const day = 86_400_000;
  const offsets = [
    ...new Set([
      zone.offset(naive - 2 * day),
      zone.offset(naive - day),
      zone.offset(naive),
      zone.offset(naive + day),
      zone.offset(naive + 2 * day),
    ]),
  ];
  const matches = offsets.map((offset) => naive - offset * 60_000).filter((instant) => zone.offset(instant) * 60_000 === naive - instant);
  if (matches.length > 0) return new Date(Math.min(...matches));

  // The local time (as a naive UTC number) only increases across a gap: search for the first
  // instant at or past the wall-clock time, between the two offsets' readings of it.
  const localAt = (instant: number) => instant + zone.offset(instant) * 60_000;
  let low = naive - Math.max(...offsets) * 60_000 - day;
  let high = naive - Math.min(...offsets) * 60_000 + day;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (localAt(middle) >= naive) high = middle;
    else low = middle;
  }
  return new Date(high);
}
