// Where the guard reads and writes a session's state, and the rules that keep that safe: one call
// of a session at a time in this process (a keyed lock), one compaction at a time across processes
// (the store's lock, when it has one), and a store that fails or stalls never stalls the agent:
// the guard goes on with the state this process last saw, kept in a bounded in-process copy, and
// the next successful write brings the store up to date. Every failure is reported as an event.
import type { StoreFailedEvent } from '../events.ts';
import { recordKey } from './keys.ts';
import { KeyedLock } from './lock.ts';
import { MemoryStore } from './memory.ts';
import { emptySessionState, withReadableHidden, type SessionState } from './session.ts';
import { isStaleLease, type StateStore, type StoreLease } from './store.ts';
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
  /** A compaction's write refused by the store's fencing (a newer lease was granted). */
  onFenced?: (event: { sessionId: string; record: 'state' | 'archive'; token: number }) => void;
}

/** A store operation's outcome; `fenced`: refused because a newer compaction lease was granted. */
export type StoreOutcome<T> = { ok: true; value: T } | { ok: false; fenced?: true };

/**
 * A compaction lease lasts this long unless renewed; it is renewed every third of it while its
 * compaction runs. A holder that stops (crashed, or could not reach the store to release) holds
 * the other processes up this long at most.
 */
export const LEASE_TTL_MS = 5_000;
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

  /**
   * Runs `task` as the session's only call in this process. With the default in-memory store and
   * the session idle, a task that finishes synchronously answers its value at once, with no promise
   * (the per-call path waits for nothing; see KeyedLock.run).
   */
  run<T>(sessionId: string, task: () => T | Promise<T>): T | Promise<T> {
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

  /** The session's state: at once, without a promise, from the default in-memory store. */
  load(sessionId: string): SessionState | Promise<SessionState> {
    return this.memory ? (this.memory.getNow(sessionId) ?? emptySessionState()) : this.loadStored(sessionId);
  }

  private async loadStored(sessionId: string): Promise<SessionState> {
    const got = await this.withStore(sessionId, 'get', () =>
      this.checked(sessionId, this.store.get(recordKey('state', sessionId))),
    );
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
   * can (another process's update in between is kept), else onto `loaded`. At once, without a
   * promise, into the default in-memory store.
   */
  commit(
    sessionId: string,
    loaded: SessionState,
    change: (current: SessionState) => SessionState,
  ): SessionState | Promise<SessionState> {
    if (!this.memory) return this.commitStored(sessionId, loaded, change);
    const next = change(loaded);
    this.memory.setNow(sessionId, next);
    return next;
  }

  private async commitStored(
    sessionId: string,
    loaded: SessionState,
    change: (current: SessionState) => SessionState,
  ): Promise<SessionState> {
    const update = this.store.update?.bind(this.store);
    if (!update) {
      const next = change(loaded);
      await this.shadow?.set(sessionId, next);
      await this.withStore(sessionId, 'set', () => this.store.set(recordKey('state', sessionId), next));
      return next;
    }
    const local = await this.shadow?.get(sessionId);
    const fence = this.fence(sessionId);
    // After an outage the store may hold less than this process went on with: start from whichever
    // has recorded more progress, so the calls made meanwhile are not lost.
    const done = await this.withStore(sessionId, 'update', () =>
      update(
        recordKey('state', sessionId),
        (current) =>
          change(
            freshest(local, isSessionState(current) ? withReadableHidden(current) : undefined) ?? emptySessionState(),
          ),
        fence === undefined ? undefined : { fence },
      ),
    );
    if (!done.ok && done.fenced) {
      // A newer compaction of the session stands: nothing of this one is written, here or later.
      this.options.onFenced?.({ sessionId, record: 'state', token: fence as number });
      return change(loaded);
    }
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
    if (state === undefined || state === null) return undefined;
    if (isSessionState(state)) return withReadableHidden(state);
    this.options.onStoreFailed({ sessionId, operation: 'get', reason: 'error', error: new MalformedState() });
    return undefined;
  }

  async delete(sessionId: string): Promise<void> {
    await this.shadow?.delete(sessionId);
    await this.withStore(sessionId, 'delete', () => this.store.delete(recordKey('state', sessionId)));
  }

  /**
   * Takes the session's compaction lock, waiting while another process holds it, for at most
   * `waitMs` (a holder that crashed keeps a plain lock until it expires, and a lease until it is no
   * longer renewed, LEASE_TTL_MS: waiters then take it; a plain lock's waiters compact on their own
   * after its ttl, a duplicate summary at worst, never a stalled agent). `stillNeeded` reloads the
   * state: when the holder's compaction already covers this call, there is nothing left to do.
   * Never blocks on a failing store. `release` is undefined when no lock is held (none needed, or
   * given up); it never throws, and is tried even after the store failed earlier in the call.
   */
  async lockCompaction(
    sessionId: string,
    ttlMs: number,
    waitMs: number,
    stillNeeded: () => Promise<boolean>,
  ): Promise<{ release?: () => Promise<void> }> {
    const lease = this.store.lease?.bind(this.store);
    const lock = this.store.lock?.bind(this.store);
    if (!lease && !lock) return {};
    // A release this process could not make earlier goes first: its own next call never waits for it.
    await this.releaseLeftover(sessionId);
    const ttl = lease ? LEASE_TTL_MS : ttlMs;
    // A lease is renewed while its holder works: wait for it as long as a compaction may take.
    const deadline = Date.now() + (lease ? waitMs : Math.min(ttlMs, waitMs));
    const take = async (): Promise<Held | undefined> => {
      if (lease) return (await lease(sessionId, ttl)) ?? undefined;
      const release = lock ? await lock(sessionId, ttl) : undefined;
      return release ? { release } : undefined;
    };
    for (let wait = 25; ; wait = Math.min(wait * 2, 500)) {
      // A lock that throws at once (not connected) is a failing store like any other.
      const attempt = Promise.resolve().then(take);
      const got = await this.withStore(sessionId, 'lock', () => attempt);
      if (!got.ok) {
        // Given up on (the store stalled): if the lock is granted late, nobody would hold it.
        attempt.then((held) => held?.release()).catch(() => {});
        return {};
      }
      if (got.value) {
        const release = this.hold(sessionId, got.value, ttl);
        // Another process may have finished just before: decide again on the fresh state.
        let needed: boolean;
        try {
          needed = await stillNeeded();
        } catch (error) {
          await release(); // never a lease renewed for a call that is gone
          throw error;
        }
        if (needed) return { release };
        await release();
        return {};
      }
      if (Date.now() >= deadline) return {};
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (!(await stillNeeded())) return {};
    }
  }

  /** The fencing token of the session's lease held by this call, if any. */
  fence(sessionId: string): number | undefined {
    return this.held.get(sessionId)?.token;
  }

  /** Leases held by calls of this process (one per session: calls of a session never overlap). */
  private readonly held = new Map<string, Held>();
  /** Releases the store failed, per session: tried again until they pass or the lease is over. */
  private readonly leftover = new Map<string, { release: () => Promise<void>; until: number }>();

  /**
   * Starts holding a granted lock: a lease is renewed while held, and its token fences the call's
   * writes. Answers the release, which always tries the store (whatever failed before in the call),
   * and leaves a release the store failed to be tried again.
   */
  private hold(sessionId: string, held: Held, ttl: number): () => Promise<void> {
    const renew = held.renew?.bind(held);
    let timer: ReturnType<typeof setInterval> | undefined;
    if (held.token !== undefined) this.held.set(sessionId, held);
    if (renew) {
      timer = setInterval(() => {
        // A renewal that fails is not reported: a lost lease shows when its writes are refused.
        withTimeout(
          Promise.resolve().then(() => renew(ttl)),
          this.options.storeTimeoutMs,
        ).catch(() => {});
      }, ttl / 3);
      (timer as { unref?: () => void }).unref?.();
    }
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      clearInterval(timer);
      if (this.held.get(sessionId) === held) this.held.delete(sessionId);
      const release = () => held.release();
      const done = await this.withStore(sessionId, 'lock', release, { evenAfterFailure: true });
      if (!done.ok) this.leaveRelease(sessionId, release, Date.now() + ttl);
    };
  }

  /** Keeps a failed release to try again: in the background, and before the session's next lock. */
  private leaveRelease(sessionId: string, release: () => Promise<void>, until: number): void {
    const entry = { release, until };
    this.leftover.set(sessionId, entry);
    const retry = (delay: number) => {
      const timer = setTimeout(async () => {
        if (this.leftover.get(sessionId) !== entry) return;
        if (await this.tryRelease(sessionId, entry)) return;
        if (Date.now() < until) retry(Math.min(delay * 2, 1_000));
      }, delay);
      (timer as { unref?: () => void }).unref?.();
    };
    retry(100);
  }

  private async releaseLeftover(sessionId: string): Promise<void> {
    const entry = this.leftover.get(sessionId);
    if (entry) await this.tryRelease(sessionId, entry);
  }

  /** One more try of a left-over release; true once it is done with (released, or the lease is over). */
  private async tryRelease(
    sessionId: string,
    entry: { release: () => Promise<void>; until: number },
  ): Promise<boolean> {
    const ok = await withTimeout(Promise.resolve().then(entry.release), this.options.storeTimeoutMs).then(
      () => true,
      () => false,
    );
    if (ok || Date.now() >= entry.until) {
      if (this.leftover.get(sessionId) === entry) this.leftover.delete(sessionId);
      return true;
    }
    return false;
  }

  /** Whether the store can lock a session across processes. */
  get locks(): boolean {
    return typeof this.store.lock === 'function' || typeof this.store.lease === 'function';
  }

  /**
   * The store's answer, or a `store-failed` report when it throws or is too slow. Other state kept in
   * the same store (the session's archive) goes through here too, so a call waits for a failing
   * store once at most, whatever it reads or writes. `evenAfterFailure`: tried even when the store
   * failed earlier in the call (a lock's release).
   */
  async withStore<T>(
    sessionId: string,
    operation: StoreFailedEvent['operation'],
    run: () => Promise<T>,
    options?: { evenAfterFailure: boolean },
  ): Promise<Outcome<T>> {
    if (options?.evenAfterFailure !== true && this.inCall.has(sessionId) && this.failedInCall.has(sessionId))
      return { ok: false };
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
      // Not a failure of the store: it answered, and refused a stale compaction's write.
      if (isStaleLease(error)) return { ok: false, fenced: true };
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

/** A lock held: a plain one (`lock`) has only its release; a lease has a token and can be renewed. */
type Held = { release: () => Promise<void>; token?: number; renew?: StoreLease['renew'] };
