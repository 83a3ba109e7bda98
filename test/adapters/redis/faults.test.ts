// The fault matrix with a real Redis behind the guard: Redis stopped mid-run and restarted (empty),
// Redis unreachable and back with its old data (a partition, through a proxy), Redis stalled beyond
// the store timeout, a lock request that timed out during a stall and ran later, and a summarizer
// that throws, hangs, returns nothing or returns far too much. Whatever fails, every beforeModel
// resolves within its time bound with valid messages under the window; failures are events
// (`store-failed`, `summarizer-failed`), never `error` events and never throws; and once the store
// answers again it gets this process's state, not an older one.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { RedisStore } from '../../../adapters/redis/index.ts';
import { redisKey } from '../../../adapters/redis/keys.ts';
import {
  createContextGuard,
  type ContextGuard,
  type ContextGuardOptions,
  type GuardMessage,
  type SessionState,
} from '../../../src/index.ts';
import { expectInvariants } from '../../compaction/invariants.ts';
import { recorder } from '../../helpers.ts';
import { deletePrefix, skipRedisTests, startProxy, startRedis, uniquePrefix, type RedisHandle } from './server.ts';

const skip = skipRedisTests('test/adapters/redis/faults.test.ts');

const WINDOW = 8_000;
/**
 * Long enough that a loaded CI machine (the whole suite on two cores) does not time out a Redis that
 * is up, short enough that the outage phases stay quick; every stall below is longer.
 */
const STORE_TIMEOUT_MS = 500;
const SUMMARIZER_TIMEOUT_MS = 300;
/**
 * What a call may take on top of its timeout: the guard's own work on an 8k-token prompt is a
 * few milliseconds; the rest is room for a busy CI machine.
 */
const SLACK_MS = 400;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FILLER = 'The service restarted and the queue drained; the next batch of files needs the same edit. ';
const text = (label: string, chars: number) =>
  `${label}: ${FILLER.repeat(Math.ceil(chars / FILLER.length))}`.slice(0, chars).trimEnd();

/** Grows a stateless host's history by one call's worth (~2,000 characters, a tool step every third call). */
function grow(history: GuardMessage[], i: number): GuardMessage[] {
  const out = [...history];
  if (i % 3 === 2) {
    const id = `call-${i}`;
    out.push(
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: `lib/${i}.ts` } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: id,
            toolName: 'read_file',
            output: { type: 'text', value: text(`lib/${i}.ts`, 1_200) },
          },
        ],
      },
    );
  }
  out.push({ role: 'assistant', content: [{ type: 'text', text: text(`answer ${i}`, 900) }] });
  out.push({ role: 'user', content: text(`request ${i + 1}`, 700) });
  return out;
}

const initial = (): GuardMessage[] => [
  { role: 'system', content: 'You are an operations agent. Keep going until every batch is done.' },
  { role: 'user', content: 'request 0: migrate every service to the new queue.' },
];

const realCount = (messages: readonly GuardMessage[]) => Math.ceil(JSON.stringify(messages).length / 4);

/** A guard on a RedisStore with every event recorded. */
function guardOn(url: string, prefix: string, options: ContextGuardOptions = {}) {
  const events = recorder();
  const store = new RedisStore({ url, prefix });
  const guard = createContextGuard({
    contextWindow: WINDOW,
    store,
    storeTimeoutMs: STORE_TIMEOUT_MS,
    summarizerTimeoutMs: SUMMARIZER_TIMEOUT_MS,
    summarizer: async ({ messages }) => `## Task state\n${messages.length} messages summarized.\n## Next steps\nGo on.`,
    ...options,
    onEvent: events.onEvent,
  });
  return { guard, store, events };
}

/** One host call: beforeModel (timed, invariants checked), then afterModel with a real count (timed). */
async function step(
  guard: ContextGuard,
  events: ReturnType<typeof recorder>,
  sessionId: string,
  history: GuardMessage[],
  boundMs: number,
  label: string,
) {
  const snapshot = structuredClone(history);
  const overflowsBefore = events.of('overflow').length;
  const t0 = performance.now();
  const r = await guard.beforeModel({ sessionId, messages: history });
  const beforeMs = performance.now() - t0;
  // Soft: a slow call is reported, and the test goes on to check everything else.
  expect
    .soft(beforeMs, `${label}: beforeModel took ${beforeMs.toFixed(0)} ms (bound ${boundMs} ms)`)
    .toBeLessThanOrEqual(boundMs);
  expect(r.threshold).toBeLessThan(WINDOW);
  // The irreducible part of these conversations is small: no overflow, so under the threshold always.
  expect(events.of('overflow').length).toBe(overflowsBefore);
  expectInvariants(history, r, { snapshot });
  const t1 = performance.now();
  await guard.afterModel({ sessionId, usage: { inputTokens: realCount(r.messages), outputTokens: 225 } });
  const afterMs = performance.now() - t1;
  expect
    .soft(afterMs, `${label}: afterModel took ${afterMs.toFixed(0)} ms (bound ${boundMs} ms)`)
    .toBeLessThanOrEqual(boundMs);
  return { r, beforeMs, afterMs };
}

/** One session's conversation, grown and called through `step` a number of calls at a time. */
function conversation(guard: ContextGuard, events: ReturnType<typeof recorder>, sessionId: string) {
  let history = initial();
  let calls = 0;
  return {
    /** The calls made so far (each recorded its real count). */
    get calls() {
      return calls;
    },
    async steps(n: number, phase: string): Promise<void> {
      for (const end = calls + n; calls < end; calls++) {
        history = grow(history, calls);
        await step(guard, events, sessionId, history, STORE_TIMEOUT_MS + SLACK_MS, `${phase}, call ${calls}`);
      }
    },
  };
}

/** Waits until the store answers again (ioredis reconnects with a back-off). */
async function untilStoreAnswers(store: RedisStore, sessionId: string, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await Promise.race([store.get(sessionId), sleep(300).then(() => Promise.reject(new Error('slow')))]);
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`the store did not come back within ${timeoutMs} ms: ${String(error)}`);
      await sleep(100);
    }
  }
}

describe.skipIf(skip)('faults with a Redis store', () => {
  let redis: RedisHandle;
  const prefix = uniquePrefix('faults');
  const stores: RedisStore[] = [];

  /** Closes a store without waiting on a connection that is down. */
  const closeStore = (store: RedisStore) => Promise.race([store.close().catch(() => {}), sleep(1_000)]);

  beforeAll(async () => {
    redis = await startRedis({ controllable: true });
  }, 30_000);
  // Whatever a test did to the server, the next one starts with it up and unpaused.
  beforeEach(async () => {
    await redis.start();
    await redis.unpause();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await redis.start();
    await redis.unpause();
    await Promise.all(stores.splice(0).map(closeStore));
  });
  afterAll(async () => {
    if (redis) {
      await redis.start().catch(() => {});
      await deletePrefix(redis, prefix).catch(() => {});
      await redis.close();
    }
  });

  it('Redis stopped mid-run: every call resolves within the store timeout with valid messages; state flows again after a restart', async () => {
    // ioredis prints every connection error of a client without an 'error' listener to the
    // console; an outage must not flood the host's logs (the guard reports it as events).
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => {});
    const { guard, store, events } = guardOn(redis.url, prefix);
    stores.push(store);
    const session = 'outage';
    const run = conversation(guard, events, session);
    // Up: the state is in Redis.
    await run.steps(8, 'up');
    expect(events.of('store-failed')).toEqual([]);
    expect((await store.get(session))?.calls).toBe(run.calls);

    // Down: the guard goes on with its in-process copy, compacting when needed.
    await redis.stop();
    const compactionsBefore = events.of('compaction-end').length;
    // This conversation crosses the threshold around its 12th call (see the compaction check below).
    await run.steps(6, 'down');
    expect(events.of('store-failed').length).toBeGreaterThan(0);
    expect(events.of('compaction-end').length).toBeGreaterThan(compactionsBefore); // it compacted while Redis was down
    expect(events.of('error')).toEqual([]);

    // Restarted (empty: no persistence). The next calls save again, and what the store gets is
    // this process's state, not a fresh one: calls, real counts and the summary made meanwhile.
    await redis.start();
    await untilStoreAnswers(store, session);
    const failedBefore = events.of('store-failed').length;
    await run.steps(3, 'restarted');
    expect(events.of('store-failed').slice(failedBefore)).toEqual([]);
    const stored = (await store.get(session)) as SessionState;
    expect(stored, 'nothing was written to the restarted Redis').toBeDefined();
    // Soft, so that each independent failure below is reported.
    expect
      .soft(
        stored.calls,
        'the restarted store got a fresh state instead of the one this process kept during the outage',
      )
      .toBe(run.calls);
    expect.soft(stored.usageRecorded, 'real counts recorded during the outage were lost').toBe(run.calls);
    expect.soft(stored.memo?.summary, 'the summary made during the outage was lost').toBeDefined();
    expect(events.of('error')).toEqual([]);
    const unhandled = consoleError.mock.calls.filter((args) =>
      String(args[0]).includes('[ioredis] Unhandled error event'),
    );
    consoleError.mockRestore();
    expect(
      unhandled.length,
      'RedisStore left its ioredis client without an error listener: the outage was logged on the console',
    ).toBe(0);
  });

  it('Redis unreachable (partition) and back with its old data: the calls made meanwhile are not lost', async () => {
    // The store comes back with the state it had before the outage, older than this process's
    // copy: the progress made meanwhile (calls, real counts, the summary) must win.
    const proxy = await startProxy(redis.url);
    try {
      const { guard, store, events } = guardOn(proxy.url, prefix);
      stores.push(store);
      const session = 'partition';
      const run = conversation(guard, events, session);
      await run.steps(8, 'up');
      expect((await store.get(session))?.memo?.summary).toBeUndefined();
      await proxy.stop();
      await run.steps(6, 'partitioned');
      expect(events.of('store-failed').length).toBeGreaterThan(0);
      expect(events.of('compaction-end').length).toBeGreaterThan(0);
      await proxy.start();
      await untilStoreAnswers(store, session);
      const failedBefore = events.of('store-failed').length;
      await run.steps(2, 'healed');
      expect(events.of('store-failed').slice(failedBefore)).toEqual([]);
      const stored = (await store.get(session)) as SessionState;
      expect
        .soft(stored.calls, 'calls made while Redis was unreachable were dropped from the shared state')
        .toBe(run.calls);
      expect
        .soft(stored.usageRecorded, 'real counts recorded while Redis was unreachable were dropped')
        .toBe(run.calls);
      expect.soft(stored.memo?.summary, 'the summary made while Redis was unreachable was dropped').toBeDefined();
      expect(events.of('error')).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('Redis slow beyond the store timeout (paused): every call resolves within storeTimeoutMs + slack', async () => {
    const { guard, store, events } = guardOn(redis.url, prefix);
    stores.push(store);
    const session = 'slow';
    let history = initial();
    let i = 0;
    for (; i < 9; i++) {
      history = grow(history, i);
      await step(guard, events, session, history, STORE_TIMEOUT_MS + SLACK_MS, `fast, call ${i}`);
    }
    // Past the threshold during the pause too, so the compaction lock is asked for while slow.
    await redis.pause(2_000);
    const pausedAt = Date.now();
    for (; Date.now() - pausedAt < 1_500; i++) {
      history = grow(history, i);
      await step(guard, events, session, history, STORE_TIMEOUT_MS + SLACK_MS, `slow, call ${i}`);
    }
    const failed = events.of('store-failed');
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((e) => e.reason === 'timeout')).toBe(true);
    expect(events.of('error')).toEqual([]);
    await redis.unpause();
  });

  it('a compaction lock request that timed out during a stall does not hold up later compactions', async () => {
    // During a stall the guard gives up on its lock request after storeTimeoutMs and compacts
    // without the lock; but Redis still holds the SET NX, and runs it when the stall ends. The lock
    // is then taken by a token nobody knows and lives for its whole ttl (30 s here). The next
    // compaction of the session, in this process or any other, must not wait for it.
    const { guard, store, events } = guardOn(redis.url, prefix);
    stores.push(store);
    const session = 'orphan-lock';
    let history = initial();
    for (let i = 0; i < 14; i++) history = grow(history, i); // over the threshold from the first call

    await redis.pause(1_000);
    const first = await step(guard, events, session, history, 3 * STORE_TIMEOUT_MS + SLACK_MS, 'stalled compaction');
    expect(first.r.compaction).toBeDefined();
    await redis.unpause();
    await untilStoreAnswers(store, session);
    await sleep(200); // the held commands run now

    for (let i = 14; i < 26; i++) history = grow(history, i); // over the threshold again
    const t0 = performance.now();
    const second = await Promise.race([
      guard.beforeModel({ sessionId: session, messages: history }),
      sleep(3_000).then(() => undefined),
    ]);
    const ms = performance.now() - t0;
    const orphan = await redis.command('PTTL', redisKey(prefix, session, 'lock'));
    expect(
      second,
      `the next compaction waited for an orphaned lock (still held, PTTL ${orphan} ms) for more than 3 s`,
    ).toBeDefined();
    expect(ms).toBeLessThanOrEqual(STORE_TIMEOUT_MS + SLACK_MS);
    if (second) expectInvariants(history, second);
    expect(events.of('error')).toEqual([]);
  });

  it('a 1.5 s Redis pause during a compaction costs that call only: the next compaction, in another process or this one, does not wait for its lock', async () => {
    // The holder's store operations time out during the pause (the first one marks the store as
    // failing for the rest of the call). Its lock must still be released (or its lease end soon):
    // waiters wait for a held lock up to twice the summarizer timeout (60 s by default here).
    let pauses = 1;
    const summarizer: NonNullable<ContextGuardOptions['summarizer']> = async ({ messages }) => {
      if (pauses-- > 0) {
        await redis.pause(1_500);
        await sleep(300);
      }
      return `## Task state\n${messages.length} messages summarized.\n## Next steps\nGo on.`;
    };
    const a = guardOn(redis.url, prefix, { summarizerTimeoutMs: 30_000, summarizer });
    const b = guardOn(redis.url, prefix, { summarizerTimeoutMs: 30_000, summarizer });
    stores.push(a.store, b.store);
    const session = 'paused-holder';
    let history = initial();
    for (let i = 0; i < 14; i++) history = grow(history, i); // over the threshold from the first call
    const pausedAt = performance.now();
    const first = await a.guard.beforeModel({ sessionId: session, messages: history });
    expect(first.compaction).toBeDefined();
    expect(a.events.of('store-failed').length).toBeGreaterThan(0);
    await sleep(Math.max(0, 1_600 - (performance.now() - pausedAt)));
    await untilStoreAnswers(a.store, session);

    for (const [name, g, until] of [
      ['another process', b, 26],
      ['the same process', a, 38],
    ] as const) {
      for (let i = until - 12; i < until; i++) history = grow(history, i); // over the threshold again
      const t0 = performance.now();
      const next = await Promise.race([
        g.guard.beforeModel({ sessionId: session, messages: history }),
        sleep(5_000).then(() => undefined),
      ]);
      const ms = performance.now() - t0;
      expect(
        next,
        `${name}: the next compaction waited more than 5 s for the lock of a call that gave up`,
      ).toBeDefined();
      expect(next?.compaction, name).toBeDefined();
      expect(ms, name).toBeLessThanOrEqual(1_500);
      if (next) expectInvariants(history, next);
    }
    expect([...a.events.of('error'), ...b.events.of('error')]).toEqual([]);
  });

  describe('summarizer faults (Redis store up)', () => {
    const cases: Array<{ name: string; summarizer: NonNullable<ContextGuardOptions['summarizer']>; reason: string }> = [
      {
        name: 'throwing',
        reason: 'error',
        summarizer: () => {
          throw new Error('provider 500');
        },
      },
      { name: 'rejecting', reason: 'error', summarizer: async () => Promise.reject(new Error('rate limited')) },
      // Ignores its abort signal entirely: the guard must not wait for it.
      { name: 'hanging', reason: 'timeout', summarizer: () => new Promise<string>(() => {}) },
      { name: 'returning empty text', reason: 'empty', summarizer: async () => '   ' },
      {
        name: 'returning huge text',
        reason: 'too-large',
        summarizer: async () => `## Task state\n${'x'.repeat(400_000)}`,
      },
    ];

    for (const c of cases) {
      it(`${c.name}: every call resolves within the summarizer timeout with valid messages under the window`, async () => {
        const { guard, store, events } = guardOn(redis.url, prefix, {
          summarizer: c.summarizer,
          circuitBreaker: { failures: 1_000 },
        });
        stores.push(store);
        const session = `summarizer-${c.name}`;
        let history = initial();
        for (let i = 0; i < 24; i++) {
          history = grow(history, i);
          await step(guard, events, session, history, SUMMARIZER_TIMEOUT_MS + SLACK_MS, `${c.name}, call ${i}`);
        }
        const ends = events.of('compaction-end');
        expect(ends.length).toBeGreaterThanOrEqual(2);
        expect(ends.every((e) => e.strategy !== 'summary')).toBe(true);
        expect(ends.some((e) => e.strategy === 'mechanical' || e.steps.includes('mechanical'))).toBe(true);
        const failures = events.of('summarizer-failed');
        expect(failures.length).toBeGreaterThan(0);
        expect(failures.every((e) => e.reason === c.reason)).toBe(true);
        expect(events.of('error')).toEqual([]);
        expect(events.of('store-failed')).toEqual([]);
        // The mechanical summary is in the shared state, like a real one.
        expect((await store.get(session))?.memo?.summary).toBeDefined();
      });
    }
  });
});
