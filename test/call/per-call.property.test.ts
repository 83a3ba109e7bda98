// The per-call fast path (the input check's canonical form, the measures kept from earlier calls)
// never changes what a call reports: over random histories that grow, get edited, lose or swap old
// messages, or get junk in old places, sent by a host that resends its objects, rebuilds them
// around the same values (the AI SDK), mixes both, or mutates one array in place, a guard that saw
// every earlier call estimates, reports and returns exactly what a new guard does for the same input.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createContextGuard,
  type ContextGuardEvent,
  type GuardMessage,
  type SessionState,
  type StateStore,
} from '../../src/index.ts';

type Host = 'same' | 'rebuilt' | 'mixed' | 'in-place';

const word = fc.string({ minLength: 0, maxLength: 60 });
const longText = fc.string({ minLength: 48, maxLength: 400 });
const text = fc.oneof(word, longText);
const id = fc.constantFrom('c1', 'c2', 'c3', 'c4');

const message: fc.Arbitrary<GuardMessage> = fc.oneof(
  text.map((t): GuardMessage => ({ role: 'user', content: t })),
  text.map((t): GuardMessage => ({ role: 'system', content: t })),
  fc
    .array(
      fc.oneof(
        text.map((t) => ({ type: 'text' as const, text: t })),
        text.map((t) => ({ type: 'reasoning' as const, text: t })),
        fc.record({ type: fc.constant('tool-call' as const), toolCallId: id, toolName: word, input: fc.jsonValue() }),
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((content): GuardMessage => ({ role: 'assistant', content })),
  fc.record({ toolCallId: id, toolName: word, value: text }).map(
    ({ toolCallId, toolName, value }): GuardMessage => ({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId, toolName, output: { type: 'text', value } }],
    }),
  ),
);

/** A tool call and its result, under an id given when it is added (unique in the history). */
const toolStep = fc.record({ toolName: word, input: fc.jsonValue(), value: text, note: fc.option(word) });
type ToolStep = typeof toolStep extends fc.Arbitrary<infer T> ? T : never;
const added = fc.array(fc.oneof(message, toolStep, toolStep), { minLength: 1, maxLength: 4 });

let nextId = 0;
/** The items as messages, each tool result's text `repeat` times over. */
function expand(items: Array<GuardMessage | ToolStep>, repeat = 1): GuardMessage[] {
  return items.flatMap((item): GuardMessage[] => {
    if ('role' in item) return [item];
    const toolCallId = `call_${nextId++}`;
    const { toolName, input, value, note } = item;
    return [
      {
        role: 'assistant',
        content: [
          ...(note !== null ? [{ type: 'text' as const, text: note }] : []),
          { type: 'tool-call', toolCallId, toolName, input },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId, toolName, output: { type: 'text', value: value.repeat(repeat) } }],
      },
    ];
  });
}

/** What the host does to its history before a call. */
const op = fc.oneof(
  fc.record({ kind: fc.constant('append' as const), added }),
  fc.record({ kind: fc.constant('append' as const), added }),
  fc.record({ kind: fc.constant('resend' as const) }),
  fc.record({ kind: fc.constant('edit-text' as const), at: fc.nat(), text, sameLength: fc.boolean() }),
  fc.record({ kind: fc.constant('edit-output' as const), at: fc.nat(), text }),
  fc.record({ kind: fc.constant('edit-id' as const), at: fc.nat(), id }),
  fc.record({ kind: fc.constant('edit-input' as const), at: fc.nat(), input: fc.jsonValue() }),
  fc.record({ kind: fc.constant('edit-role' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('options' as const), at: fc.nat(), part: fc.boolean() }),
  fc.record({ kind: fc.constant('drop-part' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), with: fc.nat() }),
  fc.record({
    kind: fc.constant('junk' as const),
    at: fc.nat(),
    junk: fc.constantFrom<unknown>(null, 42, 'text', { role: 'wizard', content: 'x' }, { content: 'no role' }),
  }),
  fc.record({ kind: fc.constant('null-part' as const), at: fc.nat() }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

type Entry = unknown;
type Parts = Array<Record<string, unknown> | null>;

/** The message at `at` (modulo the history), as a new object: hosts that edit make copies. */
function edited(history: Entry[], at: number, change: (m: Record<string, unknown>) => void): void {
  if (history.length === 0) return;
  const i = at % history.length;
  const m = history[i];
  if (typeof m !== 'object' || m === null) return;
  const copy = { ...(m as Record<string, unknown>) };
  const content = copy['content'];
  if (Array.isArray(content)) copy['content'] = content.map((p) => (p && typeof p === 'object' ? { ...p } : p));
  change(copy);
  history[i] = copy;
}

function apply(history: Entry[], o: Op, repeat = 1): void {
  const n = history.length;
  switch (o.kind) {
    case 'append':
      history.push(...expand(o.added, repeat));
      return;
    case 'resend':
      return;
    case 'edit-text':
      edited(history, o.at, (m) => {
        const replace = (old: unknown) =>
          o.sameLength && typeof old === 'string' && old.length > 0
            ? (old[0] === 'x' ? 'y' : 'x') + old.slice(1)
            : o.text;
        if (typeof m['content'] === 'string') m['content'] = replace(m['content']);
        else
          for (const p of m['content'] as Parts)
            if (p && (p['type'] === 'text' || p['type'] === 'reasoning')) p['text'] = replace(p['text']);
      });
      return;
    case 'edit-output':
      edited(history, o.at, (m) => {
        for (const p of Array.isArray(m['content']) ? (m['content'] as Parts) : [])
          if (p?.['type'] === 'tool-result') p['output'] = { type: 'text', value: o.text };
      });
      return;
    case 'edit-id':
      edited(history, o.at, (m) => {
        for (const p of Array.isArray(m['content']) ? (m['content'] as Parts) : [])
          if (p && 'toolCallId' in p) p['toolCallId'] = o.id;
      });
      return;
    case 'edit-input':
      edited(history, o.at, (m) => {
        for (const p of Array.isArray(m['content']) ? (m['content'] as Parts) : [])
          if (p?.['type'] === 'tool-call') p['input'] = o.input;
      });
      return;
    case 'edit-role':
      edited(history, o.at, (m) => {
        if (typeof m['content'] === 'string') m['role'] = m['role'] === 'user' ? 'system' : 'user';
      });
      return;
    case 'options':
      edited(history, o.at, (m) => {
        const parts = Array.isArray(m['content']) ? (m['content'] as Parts) : [];
        const target = o.part && parts[0] ? parts[0] : m;
        target['providerOptions'] = { anthropic: { cacheControl: { type: 'ephemeral' } } };
      });
      return;
    case 'drop-part':
      edited(history, o.at, (m) => {
        if (Array.isArray(m['content']) && m['content'].length > 1) m['content'] = m['content'].slice(1);
      });
      return;
    case 'null-part':
      edited(history, o.at, (m) => {
        if (Array.isArray(m['content']) && m['role'] === 'assistant') m['content'] = [...m['content'], null];
      });
      return;
    case 'remove':
      if (n > 0) history.splice(o.at % n, 1);
      return;
    case 'swap':
      if (n > 1) {
        const a = o.at % n;
        const b = o.with % n;
        [history[a], history[b]] = [history[b], history[a]];
      }
      return;
    case 'junk':
      if (n > 0) history[o.at % n] = o.junk;
  }
}

/** The array a host of kind `host` sends for `history` (its own, for `in-place`). */
function sent(history: Entry[], host: Host, flip: boolean[]): Entry[] {
  const rebuild = (m: Entry): Entry =>
    m && typeof m === 'object'
      ? {
          ...m,
          content: Array.isArray((m as { content?: unknown }).content)
            ? ((m as { content: unknown[] }).content as unknown[]).map((p) =>
                p && typeof p === 'object' ? { ...p } : p,
              )
            : (m as { content?: unknown }).content,
        }
      : m;
  switch (host) {
    case 'same':
      return history.slice();
    case 'in-place':
      return history;
    case 'rebuilt':
      return history.map(rebuild);
    case 'mixed':
      return history.map((m, i) => (flip[i % flip.length] ? rebuild(m) : m));
  }
}

/** A guard whose stored session state can be read: the fingerprint of each prompt it sends. */
function observedGuard() {
  const events: ContextGuardEvent[] = [];
  const states = new Map<string, SessionState>();
  const store: StateStore<SessionState> = {
    get: async (id) => states.get(id),
    set: async (id, value) => {
      states.set(id, value);
    },
    delete: async (id) => {
      states.delete(id);
    },
  };
  const guard = createContextGuard({ contextWindow: 10_000_000, store, onEvent: (e) => events.push(e) });
  /** What a call reports and stores that depends on how its input was checked and measured. */
  const observe = async (input: Entry[]) => {
    events.length = 0;
    const r = await guard.beforeModel({ sessionId: 's', messages: input as GuardMessage[] });
    const estimate = events.find((e) => e.type === 'estimate');
    const invalid = events.find((e) => e.type === 'invalid-messages');
    return {
      tokens: r.tokens,
      heuristic: estimate?.type === 'estimate' ? estimate.heuristicTokens : undefined,
      invalid: invalid?.type === 'invalid-messages' ? invalid.indices : [],
      repaired: events.find((e) => e.type === 'tool-pairing-repaired'),
      messages: r.messages,
      // Count, characters and content hash of the prompt sent, as the next real count will anchor it.
      sent: states.get('s')?.calibration.pending,
      errors: events.filter((e) => e.type === 'error').length,
    };
  };
  return { guard, observe };
}

describe('per-call fast path', () => {
  it('a guard that saw every earlier call reports what a new guard reports for the same input', async () => {
    await fc.assert(
      fc.asyncProperty(
        added,
        fc.array(op, { minLength: 1, maxLength: 14 }),
        fc.constantFrom<Host>('same', 'rebuilt', 'mixed', 'in-place'),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        async (start, ops, host, flip) => {
          const { observe } = observedGuard();
          const history: Entry[] = expand(start);
          await observe(sent(history, host, flip));
          for (const o of ops) {
            apply(history, o);
            const input = sent(history, host, flip);
            const seen = await observe(input);
            const fresh = await observedGuard().observe(input.slice());
            expect(seen).toEqual(fresh);
            expect(seen.errors).toBe(0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a host that rebuilds its objects, or mixes, gets what a host resending them gets, through compactions', async () => {
    await fc.assert(
      fc.asyncProperty(
        added,
        fc.array(op, { minLength: 1, maxLength: 16 }),
        fc.constantFrom<Host>('rebuilt', 'mixed', 'in-place'),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom(1_000, 1_500, 2_500),
        fc.integer({ min: 1, max: 12 }),
        async (start, ops, host, flip, summaries, window, repeat) => {
          // A small window, so that the memo (summary, pruned outputs, clips) applies on most calls;
          // no archive and a summarizer that answers at once, so both guards write the same prompts.
          const make = () => {
            const events: ContextGuardEvent[] = [];
            let calls = 0;
            const guard = createContextGuard({
              contextWindow: window,
              archive: false,
              summarizer: () => (calls++ < summaries ? `Summary ${calls}.` : ''),
              onEvent: (e) => events.push(e),
            });
            return { guard, events };
          };
          const a = make();
          const b = make();
          const history: Entry[] = expand(start, repeat);
          for (const o of [{ kind: 'resend' } as Op, ...ops]) {
            apply(history, o, repeat);
            const input = sent(history, host, flip);
            const reference = sent(history, 'same', flip);
            a.events.length = 0;
            b.events.length = 0;
            const ra = await a.guard.beforeModel({ sessionId: 's', messages: input as GuardMessage[] });
            const rb = await b.guard.beforeModel({ sessionId: 's', messages: reference as GuardMessage[] });
            const estimate = (events: ContextGuardEvent[]) => events.filter((e) => e.type === 'estimate');
            expect(estimate(a.events)).toEqual(estimate(b.events));
            const timeless = (r: typeof ra) => ({
              ...r,
              compaction: r.compaction && { ...r.compaction, durationMs: 0 },
            });
            expect(timeless(ra)).toEqual(timeless(rb));
            const usage = { inputTokens: Math.max(1, Math.round(ra.tokens * 1.1)) };
            await a.guard.afterModel({ sessionId: 's', usage });
            await b.guard.afterModel({ sessionId: 's', usage });
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
