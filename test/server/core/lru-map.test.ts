// The bounded caches' map (server/core/lru-map.ts): at most its capacity, the least recently used
// entry going first, and what goes handed to `evicted` (a kept connection is closed).
import { expect, test } from 'vitest';
import { LruMap } from '../../../server/core/lru-map.ts';

test('keeps its capacity, evicting the least recently used; a read makes an entry recent', () => {
  const evicted: string[] = [];
  const map = new LruMap<string, number>(2, (key) => evicted.push(key));
  map.set('a', 1);
  map.set('b', 2);
  expect(map.get('a')).toBe(1);
  map.set('c', 3);
  expect(evicted).toEqual(['b']);
  expect(map.get('b')).toBeUndefined();
  expect([map.get('a'), map.get('c')]).toEqual([1, 3]);
  // Writing a key again replaces it and makes it recent, without evicting anything.
  map.set('a', 10);
  expect(evicted).toEqual(['b']);
  map.set('d', 4);
  expect(evicted).toEqual(['b', 'c']);
  expect(map.get('a')).toBe(10);
});

test('clear empties it and hands over every entry', () => {
  const evicted: Array<[string, number]> = [];
  const map = new LruMap<string, number>(5, (key, value) => evicted.push([key, value]));
  map.set('a', 1);
  map.set('b', 2);
  map.clear();
  expect(evicted).toEqual([
    ['a', 1],
    ['b', 2],
  ]);
  expect(map.get('a')).toBeUndefined();
});
