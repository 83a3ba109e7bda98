// Where per-session state lives. The interface is deliberately tiny (async get / set / delete) so
// that a Redis, SQL or KV store is a few lines; the guard treats stored values as immutable and
// always writes a new object, so stores may keep values by reference or serialize them. Two
// optional methods make a store safe to share between processes.

export interface StateStore<T> {
  get(sessionId: string): Promise<T | undefined>;
  set(sessionId: string, value: T): Promise<void>;
  delete(sessionId: string): Promise<void>;
  /**
   * Atomic read-modify-write: `fn` gets the stored value and returns the new one; when another
   * writer got in between, the store calls `fn` again on the fresh value. Without it the guard
   * uses get then set, which is enough within one process (it serializes each session's calls).
   */
  update?(sessionId: string, fn: (current: T | undefined) => T): Promise<T>;
  /**
   * A lock on the session's compaction, held for at most `ttlMs`, shared by every process: the
   * release function when acquired, undefined when another holder has it. With it, processes that
   * see the same over-threshold history run the summarizer once and all use its result.
   */
  lock?(sessionId: string, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
}
