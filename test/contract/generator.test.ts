// The bundle's exact integers and the generator's determinism.
import { describe, expect, test } from 'vitest';
import { bundleSpec } from '../../scripts/lib/bundle.ts';
import { restoreExactIntegers } from '../../scripts/lib/exact-integers.ts';
import { generateOperationsModule } from '../../scripts/lib/codegen/operations.ts';
import { generateTypes } from '../../scripts/lib/codegen/types.ts';

describe('restoreExactIntegers', () => {
  test('puts back the literal a double rounded, and only in number tokens', () => {
    const rounded = '{"maximum": 9223372036854776000, "description": "up to 9223372036854776000", "minimum": 1}';
    expect(restoreExactIntegers(rounded, [9223372036854775807n])).toBe(
      '{"maximum": 9223372036854775807, "description": "up to 9223372036854776000", "minimum": 1}',
    );
  });

  test('refuses two literals that round to the same double', () => {
    expect(() => restoreExactIntegers('{"a": 9223372036854776000}', [9223372036854775807n, 9223372036854775806n])).toThrow(/both round/);
  });

  test('refuses an integer beyond 2^53 that no source literal explains', () => {
    expect(() => restoreExactIntegers('{"a": 18014398509481984}', [])).toThrow(/no source literal/);
  });
});

describe('npm run generate', () => {
  test('is deterministic: the same spec gives the same files', async () => {
    const [first, second] = [await bundleSpec(), await bundleSpec()];
    expect(second).toBe(first);
    const document = JSON.parse(first);
    expect(await generateTypes(document)).toBe(await generateTypes(document));
    expect(generateOperationsModule(document)).toBe(generateOperationsModule(document));
  }, 60_000);
});
