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
  /** The key last moved to the end of `entries` (the most recently used), while it is there. */
  private newest: string | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    const max = options.maxSessions ?? 10_000;
    if (!Number.isInteger(max) || max < 1) throw new RangeError('MemoryStore: maxSessions must be a whole number >= 1');
    this.maxSessions = max;
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
    const value = this.entries.get(sessionId);
    // Moved to the end unless it is there already (the session of every call, in a busy loop).
    if (value !== undefined && sessionId !== this.newest) {
      this.entries.delete(sessionId);
      this.entries.set(sessionId, value);
      this.newest = sessionId;
    }
    return value;
  }

  /** `set` without a promise. */
  setNow(sessionId: string, value: T): void {
    // A key set again keeps its place in the map: moved to the end only when not there already.
    if (sessionId !== this.newest) this.entries.delete(sessionId);
    this.entries.set(sessionId, value);
    this.newest = sessionId;
    while (this.entries.size > this.maxSessions) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  async delete(sessionId: string): Promise<void> {
    this.entries.delete(sessionId);
    if (sessionId === this.newest) this.newest = undefined;
  }
}
