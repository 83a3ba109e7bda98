// The amortized input check (`historyCheck: 'amortized'`, the default): a long history is not
// compared whole on every call, only what was added, its first and last known messages and a
// rotating slice of the others. An old message the host edits in place is found within a bounded
// number of calls, at once before a compaction decides anything and after a real count that
// disagrees with the estimate; in the meantime it may skew the estimate, but the provider always
// receives the host's current messages. `historyCheck: 'full'` finds it at once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createContextGuard,
  MemoryStore,
  type ContextGuardOptions,
  type GuardMessage,
  type SessionState,
  type StateStore,
} from '../../src/index.ts';
import {
  BOUNDARY_MESSAGES,
  CheckedInputs,
  type CheckedInput,
  HEAD_MESSAGES,
  REBUILT_SLICE_MESSAGES,
  SLICE_MESSAGES,
} from '../../src/call/history.ts';
import { system, toolStep, user } from '../helpers.ts';

type Host = 'same objects' | 'rebuilt objects';
const HOSTS: Host[] = ['same objects', 'rebuilt objects'];

/** What the AI SDK does on every step: new message and part objects around the same values. */
const rebuild = (messages: readonly GuardMessage[]): GuardMessage[] =>
  messages.map(
    (m) => ({ ...m, content: Array.isArray(m.content) ? m.content.map((p) => ({ ...p })) : m.content }) as GuardMessage,
  );

const send = (host: Host, messages: GuardMessage[]): GuardMessage[] =>
  host === 'rebuilt objects' ? rebuild(messages) : messages;

/** A history of `steps` tool steps (two messages each) after a system message and a request. */
function history(steps: number, from = 0): GuardMessage[] {
  const out: GuardMessage[] = from === 0 ? [system('You are a coding agent.'), user('Read the repository.')] : [];
  for (let i = from; i < from + steps; i++)
    out.push(...toolStep(`call_${i}`, { path: `f${i}.ts` }, `file ${i} `.repeat(30)));
  return out;
}

/** The tool message at `index` with a new output (a new object: the host replaced it in place in its array). */
function edited(messages: GuardMessage[], index: number, value: string): GuardMessage[] {
  const out = messages.slice();
  const old = out[index] as Extract<GuardMessage, { role: 'tool' }>;
  const part = old.content[0] as Extract<(typeof old.content)[number], { type: 'tool-result' }>;
  out[index] = { role: 'tool', content: [{ ...part, output: { type: 'text', value } }] };
  return out;
}

/** Index of an old tool message, outside the first and last messages compared on every call. */
function oldToolIndex(messages: GuardMessage[], near: number): number {
  let i = near;
  while (messages[i]?.role !== 'tool') i++;
  expect(i).toBeGreaterThan(HEAD_MESSAGES);
  expect(i).toBeLessThan(messages.length - BOUNDARY_MESSAGES);
  return i;
}

/** A guard that reports the heuristic size of each prompt it estimates. */
function guarded(options: ContextGuardOptions = {}) {
  const seen: { heuristic: number; estimates: number } = { heuristic: 0, estimates: 0 };
  const guard = createContextGuard({
    contextWindow: 2_000_000,
    ...options,
    onEvent: (e) => {
      if (e.type === 'estimate') {
        seen.heuristic = e.heuristicTokens;
        seen.estimates++;
      }
      options.onEvent?.(e);
    },
  });
  return { guard, seen };
}

/** The heuristic size a guard that never saw the session gives these messages (it compares nothing). */
async function freshHeuristic(messages: GuardMessage[]): Promise<number> {
  const { guard, seen } = guarded();
  await guard.beforeModel({ sessionId: 'fresh', messages });
  return seen.heuristic;
}

/**
 * Calls after which an edit anywhere in a history of `n` messages has been compared: the rotating
 * slice is smaller for a host that rebuilds its messages (each comparison reads its new objects).
 */
const bound = (n: number, host: Host): number =>
  Math.ceil(n / (host === 'rebuilt objects' ? REBUILT_SLICE_MESSAGES : SLICE_MESSAGES)) + 1;

describe('historyCheck: amortized', () => {
  for (const host of HOSTS) {
    it(`sends the host's current content at once, and finds an old edit within ceil(N / slice) calls (${host})`, async () => {
      const { guard, seen } = guarded();
      let messages = history(150);
      await guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      const index = oldToolIndex(messages, 120);
      messages = edited(messages, index, 'edited in place '.repeat(400));
      let found = -1;
      for (let call = 0; call < bound(messages.length + 40, host) + 2 && found < 0; call++) {
        messages = [...messages, ...history(1, 1_000 + call)];
        const sent = send(host, messages);
        const r = await guard.beforeModel({ sessionId: 's', messages: sent });
        // Found or not, the provider receives the host's own (current) message at that place.
        expect(r.messages[index]).toBe(sent[index]);
        expect(JSON.stringify(r.messages[index])).toContain('edited in place');
        if (seen.heuristic === (await freshHeuristic(sent))) found = call;
      }
      expect(found).toBeGreaterThanOrEqual(0);
      expect(found).toBeLessThanOrEqual(bound(messages.length, host));
    });

    it(`finds an edit among the last known messages on the next call (${host})`, async () => {
      const { guard, seen } = guarded();
      let messages = history(150);
      await guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      messages = edited(messages, messages.length - 1, 'the last result, retried');
      messages = [...messages, ...history(1, 1_000)];
      const sent = send(host, messages);
      await guard.beforeModel({ sessionId: 's', messages: sent });
      expect(seen.heuristic).toBe(await freshHeuristic(sent));
    });

    it(`compares everything before a compaction decides, and estimates again (${host})`, async () => {
      const summaries: GuardMessage[][] = [];
      const { guard, seen } = guarded({
        summarizer: async ({ messages }) => {
          summaries.push(messages);
          return 'Summary of the work so far.';
        },
      });
      let messages = history(150);
      await guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      // Outside the slice of older messages the next call compares on its own (they start at the head).
      const index = oldToolIndex(messages, HEAD_MESSAGES + SLICE_MESSAGES + 20);
      messages = edited(messages, index, 'grown in place '.repeat(2_000));
      // A manual compaction: the call that runs it must not decide on the stale view.
      await guard.compact('s');
      const sent = send(host, messages);
      const estimates = seen.estimates;
      const r = await guard.beforeModel({ sessionId: 's', messages: sent });
      expect(seen.estimates).toBe(estimates + 1);
      expect(seen.heuristic).toBe(await freshHeuristic(sent));
      expect(r.compaction?.tokensBefore).toBeGreaterThan(0);
      // What the compaction worked on is the host's current history.
      expect(JSON.stringify(summaries.at(-1) ?? r.messages)).toContain('grown in place');
    });

    it(`decides to compact on the whole history, not on what it took on trust (${host})`, async () => {
      // An old tool output shrunk in place, then a step added: on what the last call knew the prompt
      // is over the threshold; on the host's current messages it is not.
      let messages = history(150);
      const index = oldToolIndex(messages, HEAD_MESSAGES + SLICE_MESSAGES + 20);
      const next = [...edited(messages, index, 'x'), ...history(1, 1_000)];
      const tokensOf = async (guard: ReturnType<typeof guarded>['guard'], calls: GuardMessage[][]) => {
        let tokens = 0;
        for (const m of calls) tokens = (await guard.beforeModel({ sessionId: 's', messages: send(host, m) })).tokens;
        return tokens;
      };
      const stale = await tokensOf(guarded().guard, [messages, next]);
      const current = await tokensOf(guarded().guard, [next]);
      expect(stale).toBeGreaterThan(current + 2);
      // A window whose threshold (80% below 200k) lies between the two.
      const threshold = Math.floor((stale + current) / 2);
      const contextWindow = Math.ceil(threshold / 0.8);
      const summaries: unknown[] = [];
      const guard = createContextGuard({
        summarizer: async () => {
          summaries.push(1);
          return 'Summary.';
        },
      });
      await guard.beforeModel({ sessionId: 's', messages: send(host, messages), contextWindow });
      messages = next;
      const r = await guard.beforeModel({ sessionId: 's', messages: send(host, messages), contextWindow });
      expect(r.threshold).toBeGreaterThan(current);
      expect(r.threshold).toBeLessThan(stale);
      expect(r.compaction).toBeUndefined();
      expect(r.tokens).toBe(current);
      expect(summaries).toEqual([]);
    });

    it(`compares everything on the call after a real count that disagrees with the estimate (${host})`, async () => {
      const { guard, seen } = guarded();
      let messages = history(150);
      // Real counts that agree with the estimate (the same ratio every call): no full comparison.
      for (let call = 0; call < 3; call++) {
        messages = [...messages, ...history(1, 1_000 + call)];
        const r = await guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
        await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(seen.heuristic * 1.2) } });
        expect(r.tokens).toBeGreaterThan(0);
      }
      // Past the slices the calls so far compared (they rotate up from the head), before the last messages.
      const index = oldToolIndex(messages, messages.length - BOUNDARY_MESSAGES - 40);
      messages = edited(messages, index, 'grown in place '.repeat(3_000));
      // This call may not see the edit yet; the provider's count of it does.
      messages = [...messages, ...history(1, 2_000)];
      let sent = send(host, messages);
      await guard.beforeModel({ sessionId: 's', messages: sent });
      const stale = seen.heuristic;
      const truth = await freshHeuristic(sent);
      expect(stale).toBeLessThan(truth); // not yet found: the edit is outside what this call compared
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(truth * 1.2) } });
      messages = [...messages, ...history(1, 2_001)];
      sent = send(host, messages);
      await guard.beforeModel({ sessionId: 's', messages: sent });
      expect(seen.heuristic).toBe(await freshHeuristic(sent));
    });

    it(`compares everything after a real count off the estimate recorded by another process (${host})`, async () => {
      // Two processes sharing a store: the real count lands on the one that did not send the prompt.
      const store = new MemoryStore<SessionState>();
      const a = guarded({ store });
      const b = guarded({ store });
      let messages = history(150);
      for (let call = 0; call < 3; call++) {
        messages = [...messages, ...history(1, 1_000 + call)];
        await a.guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
        await a.guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(a.seen.heuristic * 1.2) } });
      }
      const index = oldToolIndex(messages, messages.length - BOUNDARY_MESSAGES - 40);
      messages = edited(messages, index, 'grown in place '.repeat(3_000));
      messages = [...messages, ...history(1, 2_000)];
      let sent = send(host, messages);
      await a.guard.beforeModel({ sessionId: 's', messages: sent });
      const truth = await freshHeuristic(sent);
      expect(a.seen.heuristic).toBeLessThan(truth); // not yet found by process a
      await b.guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(truth * 1.2) } });
      expect((await store.get('s'))?.historyStale).toBeDefined();
      messages = [...messages, ...history(1, 2_001)];
      sent = send(host, messages);
      await a.guard.beforeModel({ sessionId: 's', messages: sent });
      expect(a.seen.heuristic).toBe(await freshHeuristic(sent));
      // The mark is cleared by the call that compared everything.
      expect((await store.get('s'))?.historyStale).toBeUndefined();
    });

    it(`keeps a stale-history mark recorded while another process's call was in flight (${host})`, async () => {
      // One store, updated atomically; process b's commit waits until process a has recorded a real
      // count far off its estimate (the mark), as two processes interleave.
      const data = new Map<string, SessionState>();
      let beforeUpdate: (() => Promise<void>) | undefined;
      const store: StateStore<SessionState> = {
        get: async (id) => structuredClone(data.get(id)),
        set: async (id, value) => void data.set(id, structuredClone(value)),
        delete: async (id) => void data.delete(id),
        update: async (id, change) => {
          const hook = beforeUpdate;
          beforeUpdate = undefined;
          await hook?.();
          const next = change(structuredClone(data.get(id)));
          data.set(id, structuredClone(next));
          return structuredClone(next);
        },
      };
      const a = guarded({ store });
      const b = guarded({ store });
      let messages = history(150);
      await a.guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      beforeUpdate = async () => {
        await a.guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(a.seen.heuristic * 3) } });
        expect(data.get('s')?.historyStale).toBeDefined();
      };
      messages = [...messages, ...history(1, 1_000)];
      await b.guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      expect(beforeUpdate).toBeUndefined();
      // b loaded the state before the mark: it compared nothing for it, and leaves it for the next call.
      expect(data.get('s')?.historyStale).toBeDefined();
      messages = [...messages, ...history(1, 1_001)];
      await b.guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      expect(data.get('s')?.historyStale).toBeUndefined();
    });

    it(`compares everything when the history got shorter (${host})`, async () => {
      const { guard, seen } = guarded();
      let messages = history(150);
      await guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      const index = oldToolIndex(messages, 120);
      messages = edited(messages, index, 'edited in place '.repeat(400)).slice(0, -2);
      const sent = send(host, messages);
      await guard.beforeModel({ sessionId: 's', messages: sent });
      expect(seen.heuristic).toBe(await freshHeuristic(sent));
    });
  }
});

describe("historyCheck: 'full'", () => {
  for (const host of HOSTS) {
    it(`finds an old edit at once (${host})`, async () => {
      const { guard, seen } = guarded({ historyCheck: 'full' });
      let messages = history(150);
      await guard.beforeModel({ sessionId: 's', messages: send(host, messages) });
      messages = edited(messages, oldToolIndex(messages, 120), 'edited in place '.repeat(400));
      messages = [...messages, ...history(1, 1_000)];
      const sent = send(host, messages);
      await guard.beforeModel({ sessionId: 's', messages: sent });
      expect(seen.heuristic).toBe(await freshHeuristic(sent));
    });
  }

  it('is validated', () => {
    expect(() => createContextGuard({ historyCheck: 'sometimes' as 'full' })).toThrow(/historyCheck/);
  });
});

describe('CheckedInputs, amortized', () => {
  /** Message `i` of the canonical form a check handed over for its input. */
  const formAt = (checked: CheckedInput, i: number) => checked.canonical?.messages[i];

  it('finds any edit of an old message within ceil(N / slice) + 1 calls, for any place and host', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 60, max: 400 }),
        fc.nat(),
        fc.constantFrom(...HOSTS),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 200 }),
        (steps, at, host, perCall, warm) => {
          const c = new CheckedInputs(10);
          let messages = history(steps);
          c.check('s', send(host, messages));
          // Some calls first, so that the rotation is anywhere.
          for (let k = 0; k < warm % 50; k++) c.check('s', send(host, messages));
          const index = at % messages.length;
          const changed = structuredClone(messages[index]) as GuardMessage;
          (changed as { providerOptions?: unknown }).providerOptions = { edited: { at: index } };
          messages = messages.slice();
          messages[index] = changed;
          const limit = bound(messages.length + perCall * 2 * bound(messages.length, host), host);
          for (let call = 1; call <= limit; call++) {
            messages = [...messages, ...history(perCall, 10_000 + call * 4)];
            const sent = send(host, messages);
            if (formAt(c.check('s', sent), index) === sent[index]) return true;
          }
          return false;
        },
      ),
      { numRuns: 150 },
    );
  });

  for (const host of HOSTS)
    it(`comes round within ceil(N / slice) + 1 calls however many messages each call adds (${host})`, () => {
      // 80 messages a call, more than either slice: the rotation must not fall behind the growth.
      const c = new CheckedInputs(10);
      let messages = history(300);
      c.check('s', send(host, messages));
      c.check('s', send(host, messages));
      const index = 30; // behind the rotation (the second check compared from the head on)
      const changed = structuredClone(messages[index]) as GuardMessage;
      (changed as { providerOptions?: unknown }).providerOptions = { edited: true };
      messages = messages.slice();
      messages[index] = changed;
      const limit = bound(messages.length, host);
      let found = -1;
      for (let call = 1; call <= limit + 40 && found < 0; call++) {
        messages = [...messages, ...history(40, 10_000 + call * 40)];
        const sent = send(host, messages);
        if (formAt(c.check('s', sent), index) === sent[index]) found = call;
      }
      expect(found).toBeGreaterThan(0);
      expect(found).toBeLessThanOrEqual(limit);
    });

  it('compares a bounded number of old messages per call, however long the history', () => {
    const reads = { n: 0 };
    const watched = (m: GuardMessage): GuardMessage =>
      new Proxy(m, {
        get(target, key, receiver) {
          reads.n++;
          return Reflect.get(target, key, receiver);
        },
      });
    const c = new CheckedInputs(10);
    const messages = history(1_000);
    c.check('s', rebuild(messages));
    reads.n = 0;
    c.check('s', [...rebuild(messages).map(watched), user('next')]);
    const compared = HEAD_MESSAGES + BOUNDARY_MESSAGES + SLICE_MESSAGES + 1;
    // A few fields of each compared message (role, options, content), none of the others.
    expect(reads.n).toBeLessThan(compared * 4);
    expect(reads.n).toBeGreaterThan(0);
  });
});
