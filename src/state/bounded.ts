// Caches bounded by a number of entries (sessions, models, labels), on lru-cache.
import type { LRUCache } from 'lru-cache';

/**
 * lru-cache options that keep at most `entries` entries, the least recently used dropped first.
 * Counted as a size of 1 per entry rather than with lru-cache's `max`: `max` allocates the cache's
 * arrays for all its entries when it is made (about 160 KiB and milliseconds for 10,000), and a guard
 * makes several caches of `maxSessions` each; this way a cache takes memory as it fills.
 */
export function atMostEntries<K extends {}, V extends {}>(entries: number): LRUCache.Options<K, V, unknown> {
  return { maxSize: entries, sizeCalculation: () => 1 };
}
