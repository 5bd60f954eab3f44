// A lookup whose calls of one turn are answered by one query (server/db/batched-lookup.ts): what
// the engine reads for the attempts one claim starts together.
import { describe, expect, test } from 'vitest';
import { batchedCall, batchedLookup } from '../../../server/db/batched-lookup.ts';

describe('batchedLookup', () => {
  test('calls made in one turn are answered by one load, each with its own row (or undefined)', async () => {
    const loads: string[][] = [];
    const lookup = batchedLookup(async (keys: string[]) => {
      loads.push(keys);
      return new Map(keys.filter((key) => key !== 'missing').map((key) => [key, `row ${key}`]));
    });
    const answers = await Promise.all(['a', 'b', 'a', 'missing'].map((key) => lookup(key)));
    expect(answers).toEqual(['row a', 'row b', 'row a', undefined]);
    expect(loads).toEqual([['a', 'b', 'missing']]);
    // A later turn is a load of its own.
    expect(await lookup('c')).toBe('row c');
    expect(loads).toHaveLength(2);
  });

  test('a failed load fails every call it was to answer, and the next turn loads again', async () => {
    let fail = true;
    const lookup = batchedLookup(async (keys: string[]) => {
      if (fail) throw new Error('database unavailable');
      return new Map(keys.map((key) => [key, key]));
    });
    const failed = await Promise.allSettled([lookup('a'), lookup('b')]);
    expect(failed.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await lookup('a')).toBe('a');
  });
});

describe('batchedCall', () => {
  test('calls made in one turn are made as one, each answered with its own output', async () => {
    const runs: number[][] = [];
    const double = batchedCall(async (inputs: number[]) => {
      runs.push(inputs);
      return inputs.map((input) => input * 2);
    });
    expect(await Promise.all([1, 2, 3].map((input) => double(input)))).toEqual([2, 4, 6]);
    expect(await double(5)).toBe(10);
    expect(runs).toEqual([[1, 2, 3], [5]]);
  });
});
