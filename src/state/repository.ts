// Where the guard reads and writes a session's state, and the rules that keep that safe: one call
// of a session at a time in this process (a keyed lock), one compaction at a time across processes
// (the store's lock, when it has one), and a store that fails or stalls never stalls the agent:
// the guard goes on with the state this process last saw, kept in a bounded in-process copy, and
// the next successful write brings the store up to date. Every failure is reported as an event.
import type { StoreFailedEvent } from '../events.ts';
import { KeyedLock } from './lock.ts';
import { MemoryStore } from './memory.ts';
import { emptySessionState, type SessionState } from './session.ts';
import type { StateStore } from './store.ts';
import { StoreTimeout, withTimeout } from './timeout.ts';

/** How far a session has gone: calls seen plus real counts recorded, which only grow. */
const progress = (state: SessionState): number => state.calls + state.usageRecorded;

class MalformedState extends Error {
  constructor() {
    super('the store returned a session state of the wrong shape; it is treated as absent and overwritten');
    this.name = 'MalformedState';
  }
}

/** Whether a stored value has the shape the guard reads (a partial write, another schema version). */
function isSessionState(value: unknown): value is SessionState {
  if (typeof value !== 'object' || value === null) return false;
  const s = value as Partial<SessionState>;
  return (
    typeof s.calibration === 'object' &&
    s.calibration !== null &&
    Number.isFinite(s.calls) &&
    Number.isFinite(s.usageRecorded)
  );
}

/** The more advanced of two states (`local` on a tie only when there is no `remote`). */
const freshest = (local: SessionState | undefined, remote: SessionState | undefined): SessionState | undefined =>
  local && (!remote || progress(local) > progress(remote)) ? local : remote;

export interface SessionRepositoryOptions {
  /** The user's store; undefined for the default in-memory one. */
  store: StateStore<SessionState> | undefined;
  maxSessions: number;
  storeTimeoutMs: number;
  onStoreFailed: (event: Omit<StoreFailedEvent, 'type'>) => void;
}

export type StoreOutcome<T> = { ok: true; value: T } | { ok: false };
type Outcome<T> = StoreOutcome<T>;

export class SessionRepository {
  private readonly store: StateStore<SessionState>;
  /** The default in-memory store, when the user gave none: read and written without a promise. */
  private readonly memory: MemoryStore<SessionState> | undefined;
  /** The in-process copy kept beside a user's store (the default in-memory store needs none). */
  private readonly shadow: MemoryStore<SessionState> | undefined;
  private readonly calls = new KeyedLock();
  /**
   * Sessions whose store failed during the current call: the rest of that call uses the in-process
   * copy at once, so a call waits for a failing store once at most. Calls of one session never
   * overlap (the keyed lock), so the mark is cleared by each new call.
   */
  private readonly failedInCall = new Set<string>();
  private readonly options: SessionRepositoryOptions;

  constructor(options: SessionRepositoryOptions) {
    this.options = options;
    this.memory = options.store ? undefined : new MemoryStore<SessionState>({ maxSessions: options.maxSessions });
    this.store = options.store ?? (this.memory as MemoryStore<SessionState>);
    this.shadow = options.store ? new MemoryStore<SessionState>({ maxSessions: options.maxSessions }) : undefined;
  }

  /** Sessions inside run(): only a call's operations skip a store that failed earlier in that call. */
  private readonly inCall = new Set<string>();

  /** Runs `task` as the session's only call in this process. */
  run<T>(sessionId: string, task: () => Promise<T>): Promise<T> {
    // The default in-memory store never fails: nothing to mark per call.
    if (this.memory) return this.calls.run(sessionId, task);
    return this.calls.run(sessionId, async () => {
      this.failedInCall.delete(sessionId);
      this.inCall.add(sessionId);
      try {
        return await task();
      } finally {
        this.inCall.delete(sessionId);
        this.failedInCall.delete(sessionId);
      }
    });
  }

  /**
   * The session's state at once when the default in-memory store holds it (what `load` would
   * answer, without a promise: the per-call path waits for nothing); undefined with a user's store.
   */
  loadNow(sessionId: string): SessionState | undefined {
    return this.memory ? (this.memory.getNow(sessionId) ?? emptySessionState()) : undefined;
  }

  /**
   * `commit` at once with the default in-memory store (the new state, without a promise); undefined
   * with a user's store, which `commit` must be used for.
   */
  commitNow(
    sessionId: string,
    loaded: SessionState,
    change: (current: SessionState) => SessionState,
  ): SessionState | undefined {
    if (!this.memory) return undefined;
    const next = change(loaded);
    this.memory.setNow(sessionId, next);
    return next;
  }

  /**
   * Runs a synchronous `task` at once as the session's only call, when the default in-memory store
   * is in use and the session is idle: what it returns (undefined when the task gives up, and
   * the caller goes the asynchronous way). Undefined without running it otherwise.
   */
  runNow<T>(sessionId: string, task: () => T | undefined): T | undefined {
    return this.memory ? this.calls.runNow(sessionId, task) : undefined;
  }

  async load(sessionId: string): Promise<SessionState> {
    const got = await this.withStore(sessionId, 'get', () => this.checked(sessionId, this.store.get(sessionId)));
    const local = await this.shadow?.get(sessionId);
    if (!got.ok) return local ?? emptySessionState();
    // After an outage this process may be ahead of the store (it went on alone), or another
    // process may be: the state with more recorded progress wins.
    if (local && freshest(local, got.value) === local) return local;
    if (got.value) await this.shadow?.set(sessionId, got.value);
    return got.value ?? emptySessionState();
  }

  /**
   * Writes what a call changed, applied to the freshest stored state: atomically with a store that
   * can (another process's update in between is kept), else onto `loaded`.
   */
  async commit(
    sessionId: string,
    loaded: SessionState,
    change: (current: SessionState) => SessionState,
  ): Promise<SessionState> {
    const update = this.store.update?.bind(this.store);
    if (!update) {
      const next = change(loaded);
      await this.shadow?.set(sessionId, next);
      await this.withStore(sessionId, 'set', () => this.store.set(sessionId, next));
      return next;
    }
    const local = await this.shadow?.get(sessionId);
    // After an outage the store may hold less than this process went on with: start from whichever
    // has recorded more progress, so the calls made meanwhile are not lost.
    const done = await this.withStore(sessionId, 'update', () =>
      update(sessionId, (current) =>
        change(freshest(local, isSessionState(current) ? current : undefined) ?? emptySessionState()),
      ),
    );
    const next = done.ok ? done.value : change((await this.shadow?.get(sessionId)) ?? loaded);
    await this.shadow?.set(sessionId, next);
    return next;
  }

  /** What the store returned, undefined (reported) when it is not a session state. */
  private async checked(
    sessionId: string,
    value: Promise<SessionState | undefined>,
  ): Promise<SessionState | undefined> {
    const state = await value;
    if (state === undefined || state === null || isSessionState(state)) return state ?? undefined;
    this.options.onStoreFailed({ sessionId, operation: 'get', reason: 'error', error: new MalformedState() });
    return undefined;
  }

  async delete(sessionId: string): Promise<void> {
    await this.shadow?.delete(sessionId);
    await this.withStore(sessionId, 'delete', () => this.store.delete(sessionId));
  }

  /**
   * Takes the session's compaction lock, waiting while another process holds it, for at most
   * `waitMs` (a holder that crashed keeps the lock until it expires: waiters then compact on their
   * own, a duplicate summary at worst, never a stalled agent). `stillNeeded` reloads the state: when
   * the holder's compaction already covers this call, there is nothing left to do. Never blocks on
   * a failing store. `release` is undefined when no lock is held (none needed, or given up).
   */
  async lockCompaction(
    sessionId: string,
    ttlMs: number,
    waitMs: number,
    stillNeeded: () => Promise<boolean>,
  ): Promise<{ release?: () => Promise<void> }> {
    const lock = this.store.lock?.bind(this.store);
    if (!lock) return {};
    const deadline = Date.now() + Math.min(ttlMs, waitMs);
    for (let wait = 25; ; wait = Math.min(wait * 2, 500)) {
      // A lock that throws at once (not connected) is a failing store like any other.
      const attempt = Promise.resolve().then(() => lock(sessionId, ttlMs));
      const got = await this.withStore(sessionId, 'lock', () => attempt);
      if (!got.ok) {
        // Given up on (the store stalled): if the lock is granted late, nobody would hold it.
        attempt.then((release) => release?.()).catch(() => {});
        return {};
      }
      if (got.value) {
        // Another process may have finished just before: decide again on the fresh state.
        const release = got.value;
        if (await stillNeeded())
          return { release: () => this.withStore(sessionId, 'lock', release).then(() => undefined) };
        await this.withStore(sessionId, 'lock', release);
        return {};
      }
      if (Date.now() >= deadline) return {};
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (!(await stillNeeded())) return {};
    }
  }

  /** Whether the store can lock a session across processes. */
  get locks(): boolean {
    return typeof this.store.lock === 'function';
  }

  /**
   * The store's answer, or a `store-failed` report when it throws or is too slow. Other state kept in
   * the same store (the session's archive) goes through here too, so a call waits for a failing
   * store once at most, whatever it reads or writes.
   */
  async withStore<T>(
    sessionId: string,
    operation: StoreFailedEvent['operation'],
    run: () => Promise<T>,
  ): Promise<Outcome<T>> {
    if (this.inCall.has(sessionId) && this.failedInCall.has(sessionId)) return { ok: false };
    if (!this.options.store) {
      // The default in-memory store answers at once: no timer on the per-call path.
      try {
        return { ok: true, value: await run() };
      } catch (error) {
        this.options.onStoreFailed({ sessionId, operation, reason: 'error', error });
        return { ok: false };
      }
    }
    try {
      return { ok: true, value: await withTimeout(Promise.resolve().then(run), this.options.storeTimeoutMs) };
    } catch (error) {
      if (this.inCall.has(sessionId)) this.failedInCall.add(sessionId);
      this.options.onStoreFailed({
        sessionId,
        operation,
        reason: error instanceof StoreTimeout ? 'timeout' : 'error',
        error,
      });
      return { ok: false };
    }
  }
}
