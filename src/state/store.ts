// Where per-session state lives. The interface is deliberately tiny (async get / set / delete) so
// that a Redis, SQL or KV store is a few lines; the guard treats stored values as immutable and
// always writes a new object, so stores may keep values by reference or serialize them. Optional
// methods make a store safe to share between processes. Keys are made by `recordKey` (keys.ts): a
// session's state under its id, its other records under keys no session id can stand for.

export interface StateStore<T> {
  get(sessionId: string): Promise<T | undefined>;
  set(sessionId: string, value: T): Promise<void>;
  delete(sessionId: string): Promise<void>;
  /**
   * Atomic read-modify-write: `fn` gets the stored value and returns the new one; when another
   * writer got in between, the store calls `fn` again on the fresh value. Without it the guard
   * uses get then set, which is enough within one process (it serializes each session's calls).
   */
  update?(sessionId: string, fn: (current: T | undefined) => T, options?: StoreWriteOptions): Promise<T>;
  /**
   * A lock on the session's compaction, held for at most `ttlMs`, shared by every process: the
   * release function when acquired, undefined when another holder has it. With it, processes that
   * see the same over-threshold history run the summarizer once and all use its result.
   */
  lock?(sessionId: string, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
  /**
   * A fenced lease on the session's compaction (preferred to `lock` when present): like `lock`, and
   * each grant carries a fencing token, a number that grows with every grant of the session. The
   * guard renews the lease while it compacts, and writes the compaction's records with
   * `update(key, fn, { fence: token })`: the store refuses that write (rejects with
   * `StaleLeaseError`) when a newer lease of the session was granted since.
   */
  lease?(sessionId: string, ttlMs: number): Promise<StoreLease | undefined>;
}

/** How `update` writes. */
export interface StoreWriteOptions {
  /** The fencing token of the writer's lease: refuse the write if a newer lease was granted since. */
  fence?: number;
}

/** A granted compaction lease (see `StateStore.lease`). */
export interface StoreLease {
  /** The fencing token: greater than every token granted before for the session. */
  readonly token: number;
  /** Extends the lease to `ttlMs` from now; false when it was lost (expired and taken, or released). */
  renew(ttlMs: number): Promise<boolean>;
  /** Ends the lease if this holder still has it. */
  release(): Promise<void>;
}

/** What a store's `update` rejects with when a write's fencing token is older than the newest granted. */
export class StaleLeaseError extends Error {
  readonly token: number;
  constructor(token: number, newest?: number) {
    super(
      `a newer compaction lease${newest !== undefined ? ` (token ${newest})` : ''} was granted since this one (token ${token}): write refused`,
    );
    this.name = 'StaleLeaseError';
    this.token = token;
  }
}

/** Whether `error` is a StaleLeaseError (by name too: a second copy of this module may have made it). */
export const isStaleLease = (error: unknown): boolean =>
  error instanceof StaleLeaseError || (error as { name?: unknown } | null)?.name === 'StaleLeaseError';
