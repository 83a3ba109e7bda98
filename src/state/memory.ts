// The default store: a bounded in-memory map that evicts the least recently used session, so a
// long-running server with many short conversations keeps a constant footprint.
import { BoundedMap } from './bounded.ts';
import type { StateStore } from './store.ts';

export interface MemoryStoreOptions {
  /** Most sessions kept; the least recently used one is evicted beyond it. Default 10,000. */
  maxSessions?: number;
}

export class MemoryStore<T> implements StateStore<T> {
  readonly maxSessions: number;
  // A read and a write both make the session the most recently used.
  private readonly entries: BoundedMap<string, T & {}>;

  constructor(options: MemoryStoreOptions = {}) {
    const max = options.maxSessions ?? 10_000;
    if (!Number.isInteger(max) || max < 1) throw new RangeError('MemoryStore: maxSessions must be a whole number >= 1');
    this.maxSessions = max;
    this.entries = new BoundedMap(max);
  }

  get size(): number {
    return this.entries.size;
  }

  async get(sessionId: string): Promise<T | undefined> {
    return this.getNow(sessionId);
  }

  async set(sessionId: string, value: T): Promise<void> {
    this.setNow(sessionId, value);
  }

  /** `get` without a promise: the guard's per-call path reads its default store synchronously. */
  getNow(sessionId: string): T | undefined {
    return this.entries.get(sessionId);
  }

  /** `set` without a promise. */
  setNow(sessionId: string, value: T): void {
    // A store holds values; `undefined` (which the cache would take as a delete) is not one.
    this.entries.set(sessionId, value as T & {});
  }

  async delete(sessionId: string): Promise<void> {
    this.entries.delete(sessionId);
  }
}
