// A lookup whose calls of one turn are answered by one query (server/db/batched-lookup.ts): what
// the engine reads for the attempts one claim starts together.
import { describe, expect, test } from 'vitest';
import { batchedCall, batchedLookup, groupedCall } from '../../../server/db/batched-lookup.ts';

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

describe('groupedCall', () => {
  /** A run that waits to be let go, as a statement waits for its WAL flush. */
  function heldRuns() {
    const runs: Array<{ inputs: string[]; finish: (error?: Error) => void }> = [];
    const run = (inputs: string[]) =>
      new Promise<string[]>((resolve, reject) => {
        runs.push({ inputs, finish: (error) => (error ? reject(error) : resolve(inputs.map((input) => `done ${input}`))) });
      });
    return { runs, run };
  }
  const settled = () => new Promise((resolve) => setImmediate(resolve));

  test('a call at rest runs at once, alone; calls arriving while the leaders run go together in the next run', async () => {
    const { runs, run } = heldRuns();
    const call = groupedCall(run, { leaders: 2, maxBatch: 3 });
    const first = call('a');
    const second = call('b');
    // Two leaders: each of the first two calls is a run of its own, started before any returns.
    expect(runs.map((r) => r.inputs)).toEqual([['a'], ['b']]);
    const waiting = ['c', 'd', 'e', 'f'].map((input) => call(input));
    await settled();
    expect(runs).toHaveLength(2);
    runs[0]!.finish();
    expect(await first).toBe('done a');
    await settled();
    // The waiting calls went together, at most maxBatch of them; the rest with the next leader free.
    expect(runs.map((r) => r.inputs)).toEqual([['a'], ['b'], ['c', 'd', 'e']]);
    runs[1]!.finish();
    expect(await second).toBe('done b');
    await settled();
    expect(runs[3]!.inputs).toEqual(['f']);
    runs[2]!.finish();
    runs[3]!.finish();
    expect(await Promise.all(waiting)).toEqual(['done c', 'done d', 'done e', 'done f']);
  });

  test('a failed run fails its own calls only; the next run is made', async () => {
    const { runs, run } = heldRuns();
    const call = groupedCall(run, { leaders: 1 });
    const first = call('a');
    const grouped = [call('b'), call('c')];
    runs[0]!.finish(new Error('database unavailable'));
    await expect(first).rejects.toThrow('database unavailable');
    await settled();
    expect(runs[1]!.inputs).toEqual(['b', 'c']);
    runs[1]!.finish();
    expect(await Promise.all(grouped)).toEqual(['done b', 'done c']);
  });
});
