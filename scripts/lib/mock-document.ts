import { readFileSync } from 'node:fs';
import { isSafeNumber, parse, stringify } from 'lossless-json';
import { bundlePath } from './bundle.ts';
import { forEachObject } from './json-walk.ts';

/**
 * The document Prism serves: the bundle, with one adaptation. Prism checks `format: int64`
 * against JavaScript's safe range (±2^53-1), so it would refuse a spend budget of
 * 9223372036854775807 that the real server accepts. Where an int64 schema's own bounds go beyond
 * that range, the format is dropped for the mock; `minimum`/`maximum` still apply.
 */
export function mockDocument(): string {
  const document = parse(readFileSync(bundlePath, 'utf8'));
  relaxWideInt64(document);
  return `${stringify(document, undefined, 2)}\n`;
}

function relaxWideInt64(document: unknown): void {
  forEachObject(document, (schema) => {
    if (schema.format === 'int64' && [schema.maximum, schema.minimum].some(isBeyondSafeRange)) delete schema.format;
  });
}

function isBeyondSafeRange(bound: unknown): boolean {
  return bound !== undefined && !isSafeNumber(String(bound));
}
