/** The time, given to services so that tests and the scheduler can reason about it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const iso = (value: Date): string => value.toISOString();
export const isoOrNull = (value: Date | null | undefined): string | null => (value ? value.toISOString() : null);
