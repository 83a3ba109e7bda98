// The default store: a bounded in-memory map that evicts the least recently used session, so a
// long-running server with many short conversations keeps a constant footprint.
import type { StateStore } from './store.ts';

export interface MemoryStoreOptions {
  /** Most sessions kept; the least recently used one is evicted beyond it. Default 10,000. */
  maxSessions?: number;
}

export class MemoryStore<T> implements StateStore<T> {
  readonly maxSessions: number;
  // A Map iterates in insertion order; re-inserting on every access keeps the oldest entry first.
  private readonly entries = new Map<string, T>();

  constructor(options: MemoryStoreOptions = {}) {
    const max = options.maxSessions ?? 10_000;
    if (!Number.isInteger(max) || max < 1) throw new RangeError('MemoryStore: maxSessions must be a whole number >= 1');
    this.maxSessions = max;
  }

  get size(): number {
    return this.entries.size;
  }

  async get(sessionId: string): Promise<T | undefined> {
    const value = this.entries.get(sessionId);
    if (value !== undefined) {
      this.entries.delete(sessionId);
      this.entries.set(sessionId, value);
    }
    return value;
  }

  async set(sessionId: string, value: T): Promise<void> {
    this.entries.delete(sessionId);
    this.entries.set(sessionId, value);
    while (this.entries.size > this.maxSessions) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  async delete(sessionId: string): Promise<void> {
    this.entries.delete(sessionId);
  }
}
