// Bounds beyond ±2^53-1 (the spend budget's 9223372036854775807). The docs page parses the contract
// with JavaScript numbers and would print such a bound rounded, so it leaves the bound out and the
// schema's description must state it exactly; spec:lint holds every schema to that, so a new one
// fails the lint in seconds rather than the docs build in the system tier.
import { isSafeNumber } from 'lossless-json';
import { forEachObject } from './json-walk.ts';

const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;

export interface WideBound {
  schema: Record<string, unknown>;
  bound: (typeof BOUNDS)[number];
  value: string;
  /** Whether the schema's description states the bound, digit for digit. */
  stated: boolean;
}

/** Every bound of `document` (parsed with lossless-json, so bounds are LosslessNumbers) that a double cannot hold exactly. */
export function wideBounds(document: unknown): WideBound[] {
  const found: WideBound[] = [];
  forEachObject(document, (schema) => {
    for (const bound of BOUNDS) {
      const value = schema[bound];
      if (value === undefined || typeof value !== 'object' || isSafeNumber(String(value))) continue;
      const stated = typeof schema.description === 'string' && schema.description.includes(String(value));
      found.push({ schema, bound, value: String(value), stated });
    }
  });
  return found;
}
