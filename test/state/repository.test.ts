// The session repository (state/repository.ts) over a fake store: load and commit, the merge by
// progress after an outage, a store that throws or stalls (one report and one wait per call),
// atomic update versus get-then-set, the cross-process compaction lock, and delete.
import { describe, expect, it } from 'vitest';
import type { StoreFailedEvent } from '../../src/events.ts';
import { LEASE_TTL_MS, SessionRepository } from '../../src/state/repository.ts';
import { emptySessionState, type SessionState } from '../../src/state/session.ts';
import { StaleLeaseError, type StateStore } from '../../src/state/store.ts';

type Mode = 'ok' | 'throw' | 'stall';

/** A store whose every operation can be made to throw or never answer; it counts its calls. */
class FakeStore implements StateStore<SessionState> {
  readonly values = new Map<string, SessionState>();
  readonly calls: string[] = [];
  mode: Mode = 'ok';

  protected async op<T>(name: string, run: () => T): Promise<T> {
    this.calls.push(name);
    if (this.mode === 'throw') throw new Error(`${name} failed`);
    if (this.mode === 'stall') return new Promise<T>(() => {});
    return run();
  }

  get(id: string) {
    return this.op('get', () => this.values.get(id));
  }

  set(id: string, value: SessionState) {
    return this.op('set', () => {
      this.values.set(id, value);
    });
  }

  delete(id: string) {
    return this.op('delete', () => {
      this.values.delete(id);
    });
  }
}

/** A store with an atomic update. */
class UpdatingStore extends FakeStore {
  update(id: string, fn: (current: SessionState | undefined) => SessionState) {
    return this.op('update', () => {
      const next = fn(this.values.get(id));
      this.values.set(id, next);
      return next;
    });
  }
}

/** A store with a lock: `answers` says whether each attempt in turn is granted; granted after them. */
class LockingStore extends FakeStore {
  readonly released: number[] = [];
  private attempts = 0;
  private readonly answers: boolean[];
  constructor(answers: boolean[] = []) {
    super();
    this.answers = answers;
  }

  lock(_id: string, _ttlMs: number) {
    return this.op('lock', () => {
      const n = this.attempts++;
      if (this.answers[n] === false) return undefined;
      return async () => {
        this.released.push(n);
      };
    });
  }
}

function repository(store: StateStore<SessionState> | undefined, storeTimeoutMs = 1_000) {
  const failures: Array<Omit<StoreFailedEvent, 'type'>> = [];
  const repo = new SessionRepository({
    store,
    maxSessions: 100,
    storeTimeoutMs,
    onStoreFailed: (e) => failures.push(e),
  });
  return { repo, failures };
}

const state = (calls: number, usageRecorded = 0): SessionState => ({ ...emptySessionState(), calls, usageRecorded });
const bump = (s: SessionState): SessionState => ({ ...s, calls: s.calls + 1 });
const yes = async () => true;

describe('SessionRepository: load and commit', () => {
  it('starts from an empty state and reads back what was committed (default store)', async () => {
    const { repo, failures } = repository(undefined);
    const loaded = await repo.load('s');
    expect(loaded).toEqual(emptySessionState());
    const next = await repo.commit('s', loaded, bump);
    expect(next.calls).toBe(1);
    expect(await repo.load('s')).toEqual(next);
    expect(failures).toEqual([]);
    expect(repo.locks).toBe(false);
  });

  it('writes with set, applied to the loaded state, when the store has no update', async () => {
    const store = new FakeStore();
    const { repo } = repository(store);
    const loaded = await repo.load('s');
    // Another process wrote in between: without update, this process's write wins.
    store.values.set('s', state(7));
    const next = await repo.commit('s', loaded, bump);
    expect(next.calls).toBe(1);
    expect(store.values.get('s')).toBe(next);
    expect(store.calls).toEqual(['get', 'set']);
  });

  it('writes with update, applied to the fresh stored state, when the store has one', async () => {
    const store = new UpdatingStore();
    const { repo } = repository(store);
    const loaded = await repo.load('s');
    store.values.set('s', state(7));
    const next = await repo.commit('s', loaded, bump);
    expect(next.calls).toBe(8);
    expect(store.calls).toEqual(['get', 'update']);
  });
});

describe('SessionRepository: a failing store', () => {
  it('goes on with the in-process copy when the store throws, reporting each failure', async () => {
    const store = new FakeStore();
    const { repo, failures } = repository(store);
    await repo.commit('s', await repo.load('s'), bump);
    store.mode = 'throw';
    const loaded = await repo.run('s', () => repo.load('s'));
    expect(loaded.calls).toBe(1);
    expect(failures).toMatchObject([{ sessionId: 's', operation: 'get', reason: 'error' }]);
    expect(failures[0]?.error).toBeInstanceOf(Error);
    const next = await repo.run('s', () => repo.commit('s', loaded, bump));
    expect(next.calls).toBe(2);
    expect(failures.map((f) => f.operation)).toEqual(['get', 'set']);
    // The store missed the write; the next load still sees it.
    expect(store.values.get('s')?.calls).toBe(1);
    store.mode = 'ok';
    expect((await repo.run('s', () => repo.load('s'))).calls).toBe(2);
  });

  it('asks a failing store once per call: the rest of the call uses the in-process copy', async () => {
    const store = new FakeStore();
    const { repo, failures } = repository(store);
    store.mode = 'throw';
    await repo.run('s', async () => {
      const loaded = await repo.load('s');
      await repo.commit('s', loaded, bump);
      await repo.load('s');
    });
    expect(store.calls).toEqual(['get']);
    expect(failures).toHaveLength(1);
    // The next call tries the store again.
    await repo.run('s', () => repo.load('s'));
    expect(store.calls).toEqual(['get', 'get']);
    expect(failures).toHaveLength(2);
  });

  it('gives up on a store that does not answer, once per call', async () => {
    const store = new FakeStore();
    const { repo, failures } = repository(store, 5);
    await repo.commit('s', await repo.load('s'), bump);
    store.mode = 'stall';
    const seen = await repo.run('s', async () => {
      const loaded = await repo.load('s');
      return repo.commit('s', loaded, bump);
    });
    expect(seen.calls).toBe(2);
    expect(failures).toMatchObject([{ operation: 'get', reason: 'timeout' }]);
    expect(store.calls).toEqual(['get', 'set', 'get']);
  });

  it('falls back to the in-process copy when an update fails', async () => {
    const store = new UpdatingStore();
    const { repo, failures } = repository(store);
    const loaded = await repo.load('s');
    await repo.commit('s', loaded, bump);
    store.mode = 'throw';
    const next = await repo.commit('s', state(0), bump);
    // Applied to what this process last committed, not to the stale `loaded` passed in.
    expect(next.calls).toBe(2);
    expect(failures.map((f) => f.operation)).toEqual(['update']);
  });
});

describe('SessionRepository: merge by progress after an outage', () => {
  /** A repository whose in-process copy went on to 5 calls while the store kept 2. */
  async function afterOutage(store: FakeStore) {
    const r = repository(store);
    let s = await r.repo.load('s');
    for (let i = 0; i < 2; i++) s = await r.repo.commit('s', s, bump);
    store.mode = 'throw';
    for (let i = 0; i < 3; i++) s = await r.repo.run('s', () => r.repo.commit('s', s, bump));
    store.mode = 'ok';
    expect(store.values.get('s')?.calls).toBe(2);
    return r;
  }

  it('loads the in-process copy when it has more progress than the store', async () => {
    const { repo } = await afterOutage(new FakeStore());
    expect((await repo.load('s')).calls).toBe(5);
  });

  it('loads the store’s state when another process went further', async () => {
    const store = new FakeStore();
    const { repo } = await afterOutage(store);
    store.values.set('s', state(4, 3));
    expect(await repo.load('s')).toEqual(state(4, 3));
  });

  it('prefers the store on a tie', async () => {
    const store = new FakeStore();
    const { repo } = await afterOutage(store);
    const other = { ...state(5), compactRequest: {} };
    store.values.set('s', other);
    expect(await repo.load('s')).toEqual(other);
  });

  it('commits onto the more advanced of the store’s state and the in-process copy', async () => {
    const store = new UpdatingStore();
    const { repo } = await afterOutage(store);
    const next = await repo.commit('s', state(0), bump);
    expect(next.calls).toBe(6);
    expect(store.values.get('s')?.calls).toBe(6);
    // Another process went further meanwhile: its state is the base.
    store.values.set('s', state(10, 2));
    expect((await repo.commit('s', state(0), bump)).calls).toBe(11);
  });
});

describe('SessionRepository: the compaction lock', () => {
  it('holds no lock when the store cannot lock', async () => {
    const { repo } = repository(new FakeStore());
    let asked = 0;
    const got = await repo.lockCompaction('s', 1_000, 1_000, async () => {
      asked++;
      return true;
    });
    expect(got).toEqual({});
    expect(asked).toBe(0);
    expect(repo.locks).toBe(false);
  });

  it('returns the release when granted and still needed', async () => {
    const store = new LockingStore();
    const { repo } = repository(store);
    expect(repo.locks).toBe(true);
    const got = await repo.lockCompaction('s', 1_000, 1_000, yes);
    expect(got.release).toBeTypeOf('function');
    expect(store.released).toEqual([]);
    await got.release?.();
    expect(store.released).toEqual([0]);
  });

  it('releases at once when the fresh state no longer needs a compaction', async () => {
    const store = new LockingStore();
    const { repo } = repository(store);
    const got = await repo.lockCompaction('s', 1_000, 1_000, async () => false);
    expect(got).toEqual({});
    expect(store.released).toEqual([0]);
  });

  it('waits while another process holds it, then takes it', async () => {
    const store = new LockingStore([false]);
    const { repo } = repository(store);
    let asked = 0;
    const got = await repo.lockCompaction('s', 10_000, 10_000, async () => {
      asked++;
      return true;
    });
    expect(store.calls).toEqual(['lock', 'lock']);
    // Once after the wait, once when granted.
    expect(asked).toBe(2);
    expect(got.release).toBeTypeOf('function');
  });

  it('stops waiting when the holder’s compaction covered this call', async () => {
    const store = new LockingStore([false, false]);
    const { repo } = repository(store);
    const got = await repo.lockCompaction('s', 10_000, 10_000, async () => false);
    expect(got).toEqual({});
    expect(store.calls).toEqual(['lock']);
  });

  it('gives up waiting at the deadline and compacts without the lock', async () => {
    const store = new LockingStore([false, false, false]);
    const { repo } = repository(store);
    expect(await repo.lockCompaction('s', 10_000, 0, yes)).toEqual({});
    expect(store.calls).toEqual(['lock']);
  });

  it('compacts without the lock when the store fails to lock', async () => {
    const store = new LockingStore();
    const { repo, failures } = repository(store);
    store.mode = 'throw';
    expect(await repo.lockCompaction('s', 1_000, 1_000, yes)).toEqual({});
    expect(failures.map((f) => f.operation)).toEqual(['lock']);
  });
});

describe('SessionRepository: a store failure costs one call at most', () => {
  it('releases the lock even after a store operation of the same call failed', async () => {
    const store = new LockingStore();
    const { repo } = repository(store);
    await repo.run('s', async () => {
      const { release } = await repo.lockCompaction('s', 30_000, 1_000, yes);
      store.mode = 'throw';
      await repo.commit('s', state(0), bump); // fails: later operations of the call skip the store...
      store.mode = 'ok';
      await repo.load('s');
      expect(store.calls.filter((c) => c === 'get')).toHaveLength(0);
      await release?.(); // ...but not the release
    });
    expect(store.released).toEqual([0]);
  });

  it('tries a release the store failed again, before the next lock of the session', async () => {
    // Releases go through the store like its other operations (and stall with it).
    const store = new (class extends LockingStore {
      override async lock(id: string, ttlMs: number) {
        const release = await super.lock(id, ttlMs);
        return release && (() => this.op('release', () => undefined).then(release));
      }
    })();
    const { repo } = repository(store, 50);
    const { release } = await repo.run('s', () => repo.lockCompaction('s', 30_000, 1_000, yes));
    store.mode = 'stall';
    await release?.();
    expect(store.released).toEqual([]);
    store.mode = 'ok';
    await repo.run('s', async () => (await repo.lockCompaction('s', 30_000, 1_000, yes)).release?.());
    expect(store.released).toEqual([0, 1]);
  });
});

/** A store with fenced leases: tokens grow with each grant; a write fenced by an older one is refused. */
class LeasingStore extends UpdatingStore {
  newest = 0;
  holder: number | undefined;
  readonly renewals: number[] = [];
  lease(_id: string, _ttlMs: number) {
    return this.op('lease', () => {
      if (this.holder !== undefined) return undefined;
      const token = ++this.newest;
      this.holder = token;
      return {
        token,
        renew: async () => {
          this.renewals.push(token);
          return this.holder === token;
        },
        release: async () => {
          if (this.holder === token) this.holder = undefined;
        },
      };
    });
  }
  override update(id: string, fn: (current: SessionState | undefined) => SessionState, options?: { fence?: number }) {
    if (options?.fence !== undefined && options.fence < this.newest)
      return Promise.reject(new StaleLeaseError(options.fence, this.newest));
    return super.update(id, fn);
  }
}

describe('SessionRepository: fenced leases', () => {
  it("renews a held lease while the compaction runs, and fences the call's state write with its token", async () => {
    const store = new LeasingStore();
    const fenced: unknown[] = [];
    const repo = new SessionRepository({
      store,
      maxSessions: 100,
      storeTimeoutMs: 1_000,
      onStoreFailed: () => {},
      onFenced: (e) => fenced.push(e),
    });
    await repo.run('s', async () => {
      const { release } = await repo.lockCompaction('s', 30_000, 1_000, yes);
      expect(repo.fence('s')).toBe(1);
      await new Promise((r) => setTimeout(r, LEASE_TTL_MS / 3 + 200));
      expect(store.renewals).toEqual([1]);
      // The holder paused past its lease: another process got the next one.
      store.holder = undefined;
      store.newest = 2;
      const next = await repo.commit('s', state(0), bump);
      expect(next.calls).toBe(1); // this call goes on with it...
      await release?.();
    });
    expect(store.values.get('s')).toBeUndefined(); // ...but nothing was written
    expect(fenced).toEqual([{ sessionId: 's', record: 'state', token: 1 }]);
    expect(repo.fence('s')).toBeUndefined();
    // Not kept in the in-process copy either: the next call does not write it back.
    expect((await repo.load('s')).calls).toBe(0);
  });
});

describe('SessionRepository: a lease is never left behind', () => {
  it('releases the lease (and stops renewing it) when deciding on the fresh state throws', async () => {
    const store = new LeasingStore();
    const { repo } = repository(store);
    const failing = async (): Promise<boolean> => {
      throw new Error('prepare failed');
    };
    await expect(repo.run('s', () => repo.lockCompaction('s', 30_000, 1_000, failing))).rejects.toThrow(
      'prepare failed',
    );
    expect(store.holder).toBeUndefined();
    expect(repo.fence('s')).toBeUndefined();
    await new Promise((r) => setTimeout(r, LEASE_TTL_MS / 3 + 200));
    expect(store.renewals).toEqual([]);
  });
});

describe('SessionRepository: delete', () => {
  it('forgets the session in the store and in the in-process copy', async () => {
    const store = new FakeStore();
    const { repo } = repository(store);
    await repo.commit('s', await repo.load('s'), bump);
    await repo.delete('s');
    expect(store.values.has('s')).toBe(false);
    // Even with the store down, nothing of the session is left.
    store.mode = 'throw';
    expect(await repo.load('s')).toEqual(emptySessionState());
  });

  it('forgets the in-process copy even when the store fails to delete', async () => {
    const store = new FakeStore();
    const { repo, failures } = repository(store);
    await repo.commit('s', await repo.load('s'), bump);
    store.mode = 'throw';
    await repo.delete('s');
    expect(failures.map((f) => f.operation)).toEqual(['delete']);
    expect(await repo.load('s')).toEqual(emptySessionState());
  });
});

describe('SessionRepository: a failure outside a call', () => {
  it('does not skip the store for later operations outside a call (status, then reset)', async () => {
    const store = new FakeStore();
    const { repo, failures } = repository(store);
    await repo.run('s', async () => repo.commit('s', await repo.load('s'), bump));
    store.mode = 'throw';
    await repo.load('s'); // guard.status() during a blip of the store
    store.mode = 'ok';
    await repo.delete('s'); // guard.reset() once the store is back
    expect(store.calls).toContain('delete');
    expect(store.values.has('s')).toBe(false);
    expect(failures.map((f) => f.operation)).toEqual(['get']);
  });

  it('reads the store again on the next status() after a failed one', async () => {
    const store = new FakeStore();
    const { repo } = repository(store);
    await repo.run('s', async () => repo.commit('s', await repo.load('s'), bump));
    store.mode = 'throw';
    await repo.load('s');
    store.mode = 'ok';
    store.values.set('s', state(9)); // another process went on
    expect((await repo.load('s')).calls).toBe(9);
  });
});

describe('SessionRepository: what a store may return or throw', () => {
  it('treats a stored state of the wrong shape as absent, reports it, and overwrites it on the next commit', async () => {
    const store = new FakeStore();
    store.values.set('s', { calls: 3, usageRecorded: 1 } as unknown as SessionState);
    const { repo, failures } = repository(store);
    const loaded = await repo.load('s');
    expect(loaded).toEqual(emptySessionState());
    expect(failures.map((f) => [f.operation, f.reason])).toEqual([['get', 'error']]);
    await repo.commit('s', loaded, bump);
    expect(store.values.get('s')?.calls).toBe(1);
    expect(store.values.get('s')?.calibration).toEqual({});
  });

  it('a lock that throws at once is a store failure, not a failed call', async () => {
    const store = new FakeStore() as FakeStore & { lock: StateStore<SessionState>['lock'] };
    store.lock = () => {
      throw new Error('redis not connected');
    };
    const { repo, failures } = repository(store);
    const got = await repo.run('s', () => repo.lockCompaction('s', 30_000, 1_000, async () => true));
    expect(got.release).toBeUndefined();
    expect(failures.map((f) => f.operation)).toEqual(['lock']);
  });
});
