/**
 * A map that keeps at most `capacity` entries in this process's memory, the least recently used
 * going first (reading or writing an entry makes it the most recent): the caches of derived keys,
 * opened secrets and kept connections. `evicted` is told of each entry that goes, so that what it
 * holds can be released (a connection closed).
 */
export class LruMap<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly capacity: number;
  private readonly evicted: ((key: K, value: V) => void) | undefined;

  constructor(capacity: number, evicted?: (key: K, value: V) => void) {
    this.capacity = capacity;
    this.evicted = evicted;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      // A Map keeps insertion order: the most recent last.
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const [oldestKey, oldest] = this.entries.entries().next().value!;
      this.entries.delete(oldestKey);
      this.evicted?.(oldestKey, oldest);
    }
  }

  /** Empties the map, telling `evicted` of each entry. */
  clear(): void {
    const all = [...this.entries];
    this.entries.clear();
    for (const [key, value] of all) this.evicted?.(key, value);
  }
}
