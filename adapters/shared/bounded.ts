// What an adapter remembers per session, run or tool call (the model of a session's latest call, a
// run's metadata until it ends...) must not grow without end in a server that sees millions of them:
// lru-cache maps bounded by count, read with `peek` so that the order is the order of writes (every
// adapter writes on each call it sees). The same options as the core's (src/state/bounded.ts).
import type { LRUCache } from 'lru-cache';

/**
 * lru-cache options that keep at most `entries` entries, the least recently used dropped first.
 * Counted as a size of 1 per entry rather than with lru-cache's `max`: `max` allocates the cache's
 * arrays for all its entries when it is made (about 160 KiB and milliseconds for 10,000), and each
 * guard an adapter serves has several; this way a cache takes memory as it fills.
 */
export function atMostEntries<K extends {}, V extends {}>(entries: number): LRUCache.Options<K, V, unknown> {
  return { maxSize: entries, sizeCalculation: () => 1 };
}
