import { readFileSync } from 'node:fs';
import { isSafeNumber, parse, stringify } from 'lossless-json';
import { bundlePath } from './bundle.ts';
import { forEachObject } from './json-walk.ts';

/**
 * The document the docs page renders: the bundle, with one adaptation. The page parses the
 * document with JavaScript numbers, so it would print the spend budget's maximum,
 * 9223372036854775807, as 9223372036854776000. A bound beyond ±2^53-1 is therefore left out of
 * the rendered constraints; the schema's description states it exactly.
 */
export function docsDocument(): string {
  const document = parse(readFileSync(bundlePath, 'utf8'));
  dropWideBounds(document);
  return `${stringify(document, undefined, 2)}\n`;
}

function dropWideBounds(document: unknown): void {
  forEachObject(document, (schema) => {
    for (const bound of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) {
      const value = schema[bound];
      if (value === undefined || typeof value !== 'object' || isSafeNumber(String(value))) continue;
      if (typeof schema.description !== 'string' || !schema.description.includes(String(value))) {
        throw new Error(`a schema with ${bound} ${String(value)} must state it in its description, which the docs show instead`);
      }
      delete schema[bound];
    }
  });
}
