// A map that keeps at most `max` keys and forgets the least recently set one beyond. Map order is
// insertion order, so a key set again is moved to the end; the key set last is left in place (the
// session of every call, in a busy loop): deleting and inserting it again on every call would
// reallocate a small map's table each time.

export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly max: number;
  /** The key set last, while it is still the last in `entries`. */
  private newest: K | undefined;
  private hasNewest = false;

  constructor(max: number) {
    this.max = max;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Sets `key` as the most recently used, forgetting the least recently used keys beyond `max`. */
  set(key: K, value: V): void {
    if (!(this.hasNewest && this.newest === key)) this.entries.delete(key);
    this.entries.set(key, value);
    this.newest = key;
    this.hasNewest = true;
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.entries.delete(key);
    if (this.hasNewest && this.newest === key) {
      this.newest = undefined;
      this.hasNewest = false;
    }
  }
}
