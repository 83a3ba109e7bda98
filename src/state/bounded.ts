// Caches bounded by a number of entries (sessions, models, labels), on lru-cache.
import { LRUCache } from 'lru-cache';

/**
 * lru-cache options that keep at most `entries` entries, the least recently used dropped first.
 * Counted as a size of 1 per entry rather than with lru-cache's `max`: `max` allocates the cache's
 * arrays for all its entries when it is made (about 160 KiB and milliseconds for 10,000), and a guard
 * makes several caches of `maxSessions` each; this way a cache takes memory as it fills.
 */
export function atMostEntries<K extends {}, V extends {}>(entries: number): LRUCache.Options<K, V, unknown> {
  return { maxSize: entries, sizeCalculation: () => 1 };
}

/**
 * A map of at most `entries` entries, the least recently used dropped first: lru-cache, with the
 * entry touched last kept in a slot in front of it.
 *
 * Why the slot: one guard call reads and writes the same session's entry several times, and an
 * agent's calls mostly follow one another in the same session, while every lru-cache `set` pays for
 * its size accounting and options. The entry touched last is always the cache's most recently used
 * one, so reading it from the slot, or replacing its value there, changes no order: the cache is
 * given the new value when another key comes (`flush`), before anything can evict or list it.
 */
export class BoundedMap<K extends {}, V extends {}> {
  private readonly cache: LRUCache<K, V>;
  private slotKey: K | undefined;
  private slotValue: V | undefined;
  /** The slot holds a value the cache does not have yet. */
  private slotAhead = false;

  constructor(entries: number) {
    this.cache = new LRUCache(atMostEntries(entries));
  }

  get size(): number {
    return this.cache.size; // the slot's key is always in the cache
  }

  /** The value, which becomes the most recently used. */
  get(key: K): V | undefined {
    if (key === this.slotKey) return this.slotValue;
    this.flush();
    const value = this.cache.get(key);
    if (value !== undefined) this.hold(key, value);
    return value;
  }

  /** The value, its recency unchanged. */
  peek(key: K): V | undefined {
    if (key === this.slotKey) return this.slotValue;
    // Nothing to find in an empty cache (the windows learned from rejections, peeked on every call).
    return this.cache.size === 0 ? undefined : this.cache.peek(key);
  }

  has(key: K): boolean {
    return key === this.slotKey || (this.cache.size > 0 && this.cache.has(key));
  }

  set(key: K, value: V): void {
    if (key === this.slotKey) {
      this.slotValue = value;
      this.slotAhead = true;
      return;
    }
    this.flush();
    this.cache.set(key, value);
    this.hold(key, value);
  }

  delete(key: K): void {
    if (key === this.slotKey) this.release();
    this.cache.delete(key);
  }

  private hold(key: K, value: V): void {
    this.slotKey = key;
    this.slotValue = value;
    this.slotAhead = false;
  }

  private release(): void {
    this.slotKey = undefined;
    this.slotValue = undefined;
    this.slotAhead = false;
  }

  /** Gives the cache the slot's value: its key is already the most recently used, so no order changes. */
  private flush(): void {
    if (this.slotAhead) this.cache.set(this.slotKey as K, this.slotValue as V);
    this.slotAhead = false;
  }
}
