import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../src/index.ts';
import { CHARACTER_MEASURE, type TextMeasure } from '../../src/tokens/exact.ts';
import { measureMessage } from '../../src/tokens/heuristic.ts';
import { extendsPrompt, PromptMeasurer } from '../../src/tokens/prompt-measure.ts';
import { assistant, toolStep, user } from '../helpers.ts';
import { pngBase64 } from '../png.ts';

/** Wraps a message so that every read of its content is counted. */
function watched(message: GuardMessage, reads: { n: number }): GuardMessage {
  return new Proxy(message, {
    get(target, key, receiver) {
      if (key === 'content') reads.n++;
      return Reflect.get(target, key, receiver);
    },
  });
}

function history(turns: number): GuardMessage[] {
  const out: GuardMessage[] = [user('start')];
  for (let i = 0; i < turns; i++) out.push(...toolStep(`call-${i}`, { path: `f${i}.ts` }, `content ${i} `.repeat(50)));
  return out;
}

describe('PromptMeasurer', () => {
  it('sums the per-message measures and the tool definitions', () => {
    const m = new PromptMeasurer(10);
    const messages = history(3);
    const tools = [{ name: 'read_file', description: 'Reads a file', inputSchema: { type: 'object' } }];
    const r = m.measure('s', messages, tools, 'generic', CHARACTER_MEASURE);
    const expected = messages.reduce((sum, msg) => sum + measureMessage(msg, 'generic').chars, 0);
    expect(r.chars - r.toolChars).toBe(expected);
    expect(r.toolChars).toBe('read_file'.length + 'Reads a file'.length + JSON.stringify({ type: 'object' }).length);
    expect(r.prompt.messages).toBe(messages.length);
  });

  it('does not read old messages again when the history only grew (same objects)', () => {
    const m = new PromptMeasurer(10);
    const reads = { n: 0 };
    const old = history(50).map((msg) => watched(msg, reads));
    m.measure('s', old, undefined, 'generic', CHARACTER_MEASURE);
    reads.n = 0;
    m.measure('s', [...old, user('next')], undefined, 'generic', CHARACTER_MEASURE);
    expect(reads.n).toBe(0);
  });

  it('reuses measures for shallow copies that share their strings (as the AI SDK rebuilds prompts)', () => {
    const m = new PromptMeasurer(10);
    const messages = history(20);
    const first = m.measure('s', messages, undefined, 'generic', CHARACTER_MEASURE);
    const firstChars = first.chars;
    const fifth = first.entries[5]!;
    const copies = messages.map(
      (msg) =>
        ({
          ...msg,
          content: Array.isArray(msg.content) ? msg.content.map((p) => ({ ...p })) : msg.content,
        }) as GuardMessage,
    );
    const second = m.measure('s', copies, undefined, 'generic', CHARACTER_MEASURE);
    expect(second.chars).toBe(firstChars);
    expect(second.entries[5]).not.toBe(fifth);
    expect(second.entries[5]!.message).toBe(copies[5]);
    expect(second.entries[5]!.chars).toBe(fifth.chars);
  });

  it('re-measures a message that changed in place of an old one', () => {
    const m = new PromptMeasurer(10);
    const a = [user('hello'), assistant('short')];
    const first = m.measure('s', a, undefined, 'generic', CHARACTER_MEASURE).chars;
    const b = [user('hello'), assistant('a much longer answer than before')];
    const second = m.measure('s', b, undefined, 'generic', CHARACTER_MEASURE);
    expect(second.chars - first).toBe('a much longer answer than before'.length - 'short'.length);
  });

  it('re-measures a tool result whose output changed behind the same ids', () => {
    const m = new PromptMeasurer(10);
    const first = m.measure('s', toolStep('c1', {}, 'short'), undefined, 'generic', CHARACTER_MEASURE).chars;
    const second = m.measure('s', toolStep('c1', {}, 'much longer output'), undefined, 'generic', CHARACTER_MEASURE);
    expect(second.chars - first).toBe('much longer output'.length - 'short'.length);
  });

  it('recognises messages that moved position (kept after a compaction) by identity', () => {
    const m = new PromptMeasurer(10);
    const reads = { n: 0 };
    const messages = history(10);
    const kept = messages.slice(5).map((msg) => watched(msg, reads));
    m.measure('s', [...messages.slice(0, 5), ...kept], undefined, 'generic', CHARACTER_MEASURE);
    reads.n = 0;
    m.measure('s', [user('summary'), ...kept], undefined, 'generic', CHARACTER_MEASURE);
    expect(reads.n).toBe(0);
  });

  it('finds messages measured under another key (a prompt measured apart) or another session', () => {
    const m = new PromptMeasurer(100);
    const reads = { n: 0 };
    const messages = history(10).map((msg) => watched(msg, reads));
    m.measure('s', messages, undefined, 'generic', CHARACTER_MEASURE);
    // Past the bound of caches waiting to be published: the queue is published on the way.
    for (let i = 0; i < 70; i++) m.measure(`other-${i}`, [user(`hello ${i}`)], undefined, 'generic', CHARACTER_MEASURE);
    m.measure('s', [...messages, user('next')], undefined, 'generic', CHARACTER_MEASURE);
    reads.n = 0;
    m.measure('s\u0000apart', messages.slice(3), undefined, 'generic', CHARACTER_MEASURE);
    m.measure('t', [user('summary'), ...messages.slice(5)], undefined, 'generic', CHARACTER_MEASURE);
    expect(reads.n).toBe(0);
  });

  it('leaves the per-object table alone while the history only grows', () => {
    const m = new PromptMeasurer(10);
    const table = (m as unknown as { byObject: WeakMap<object, unknown> }).byObject;
    const calls = { set: 0, get: 0 };
    const { set, get } = table;
    table.set = function (this: WeakMap<object, unknown>, key, value) {
      calls.set++;
      return set.call(this, key, value);
    };
    table.get = function (this: WeakMap<object, unknown>, key) {
      calls.get++;
      return get.call(this, key);
    };
    let messages = history(5);
    m.measure('s', messages, undefined, 'generic', CHARACTER_MEASURE);
    const first = { ...calls };
    for (let i = 0; i < 20; i++) {
      messages = [...messages, user(`more ${i}`)];
      m.measure('s', messages, undefined, 'generic', CHARACTER_MEASURE);
    }
    expect(calls).toEqual(first);
    // The first lookup publishes every entry measured since, once.
    m.measure('s', [user('summary'), ...messages.slice(4)], undefined, 'generic', CHARACTER_MEASURE);
    expect(calls.set - first.set).toBe(messages.length);
  });

  it('judges two messages the same only when they hash the same (a measure kept is a fresh one)', () => {
    const call = (input: unknown): GuardMessage =>
      ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 't', input }] }) as GuardMessage;
    const result = (output: unknown): GuardMessage =>
      ({ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 't', output }] }) as GuardMessage;
    const pairs: Array<[GuardMessage, GuardMessage]> = [
      [result({ type: 'text', value: 'x', providerOptions: { p: { q: 1 } } }), result({ type: 'text', value: 'x' })],
      [result(['a']), result(['b'])],
      [call({ a: 1, b: 2 }), call({ b: 2, a: 1 })],
      [call({ a: undefined }), call({ b: undefined })],
    ];
    for (const [first, second] of pairs) {
      const m = new PromptMeasurer(10);
      m.measure('s', [user('u'), first], undefined, 'generic', CHARACTER_MEASURE);
      const kept = m.measure('s', [user('u'), second], undefined, 'generic', CHARACTER_MEASURE).prompt.hash;
      const fresh = new PromptMeasurer(10).measure('s', [user('u'), second], undefined, 'generic', CHARACTER_MEASURE);
      expect(kept).toBe(fresh.prompt.hash);
    }
  });

  it('keeps a measure only for a message that hashes as the kept one does (property)', () => {
    const leaf = fc.constantFrom<unknown>(1, '1', 'a', null, undefined, true, 1n);
    const value = fc.oneof(
      leaf,
      fc.array(leaf, { maxLength: 2 }),
      fc.dictionary(fc.constantFrom('a', 'b', 'value'), leaf, { maxKeys: 2 }),
    );
    const output = fc.oneof(
      value,
      fc.record(
        {
          type: fc.constantFrom('text', 'json'),
          value,
          reason: leaf,
          providerOptions: fc.constantFrom(undefined, { p: { q: 1 } }),
        },
        { requiredKeys: ['type'] },
      ),
    );
    const message = fc.oneof(
      value.map(
        (input) =>
          ({
            role: 'assistant',
            content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input }],
          }) as GuardMessage,
      ),
      output.map(
        (out) =>
          ({
            role: 'tool',
            content: [{ type: 'tool-result', toolCallId: 'c', toolName: 't', output: out }],
          }) as GuardMessage,
      ),
    );
    fc.assert(
      fc.property(message, message, (first, second) => {
        const m = new PromptMeasurer(10);
        m.measure('s', [first], undefined, 'generic', CHARACTER_MEASURE);
        const kept = m.measure('s', [second], undefined, 'generic', CHARACTER_MEASURE);
        const fresh = new PromptMeasurer(10).measure('s', [second], undefined, 'generic', CHARACTER_MEASURE);
        expect(kept.prompt.hash).toBe(fresh.prompt.hash);
        expect(kept.chars).toBe(fresh.chars);
      }),
      { numRuns: 3_000 },
    );
  });

  it('measures as a fresh measurer does, whatever came before under any key (property)', () => {
    const pool: GuardMessage[] = [];
    for (let i = 0; i < 6; i++) pool.push(user(`message ${i} `.repeat(1 + (i % 4))));
    for (let i = 0; i < 2; i++)
      pool.push({
        role: 'user',
        content: [{ type: 'image', image: pngBase64(100 * (i + 1), 300), mediaType: 'image/png' }],
      });
    pool.push(...toolStep('c1', { path: 'a.ts' }, 'x'.repeat(120)), assistant('done'));
    // A second text measure (as a tokenizer would be): measures of different kinds never mix.
    const half = { key: 'o200k_base', length: (text: string) => Math.ceil(text.length / 2) } as TextMeasure;
    const copy = (m: GuardMessage): GuardMessage =>
      ({ ...m, content: Array.isArray(m.content) ? m.content.map((p) => ({ ...p })) : m.content }) as GuardMessage;
    const op = fc.record({
      key: fc.constantFrom('a', 'b', 'c'),
      picks: fc.array(fc.nat({ max: pool.length - 1 }), { maxLength: 8 }),
      copies: fc.array(fc.boolean(), { maxLength: 8 }),
      provider: fc.constantFrom('generic', 'anthropic', 'openai'),
      half: fc.boolean(),
      mode: fc.constantFrom('measure', 'grow', 'shrink', 'canonical', 'forget'),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const m = new PromptMeasurer(2);
        const last = new Map<string, GuardMessage[]>();
        const canon = new Map<string, GuardMessage[]>();
        for (const o of ops) {
          if (o.mode === 'forget') {
            m.forget(o.key);
            continue;
          }
          const picked = o.picks.map((p, i) =>
            o.copies[i] ? copy(pool[p] as GuardMessage) : (pool[p] as GuardMessage),
          );
          const before = last.get(o.key) ?? [];
          let messages =
            o.mode === 'grow' ? [...before, ...picked] : o.mode === 'shrink' ? before.slice(0, o.picks.length) : picked;
          const text = o.half ? half : CHARACTER_MEASURE;
          const provider = o.provider as 'generic';
          let r: ReturnType<PromptMeasurer['measure']>;
          if (o.mode === 'canonical') {
            const grown = canon.get(o.key) ?? [];
            grown.push(...picked);
            canon.set(o.key, grown);
            messages = grown.slice();
            r = m.measureCanonical(
              o.key,
              { messages: grown, length: grown.length, rebuilt: false },
              undefined,
              provider,
              text,
            );
          } else r = m.measure(o.key, messages, undefined, provider, text);
          last.set(o.key, messages);
          const fresh = new PromptMeasurer(10).measure('x', messages, undefined, provider, text);
          expect([r.chars, r.mediaTokens, r.prompt.hash]).toEqual([fresh.chars, fresh.mediaTokens, fresh.prompt.hash]);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('bounds the sessions it caches', () => {
    const m = new PromptMeasurer(2);
    for (const id of ['a', 'b', 'c']) m.measure(id, [user(id)], undefined, 'generic', CHARACTER_MEASURE);
    expect((m as unknown as { sessions: Map<string, unknown> }).sessions.size).toBe(2);
  });
});

describe('extendsPrompt', () => {
  const m = new PromptMeasurer(10);
  const base = history(3);
  const earlier = m.measure('x', base, undefined, 'generic', CHARACTER_MEASURE).prompt;

  it('accepts a prompt that starts with the earlier one', () => {
    expect(
      extendsPrompt(m.measure('y', [...base, user('more')], undefined, 'generic', CHARACTER_MEASURE), earlier),
    ).toBe(true);
    expect(extendsPrompt(m.measure('y', base, undefined, 'generic', CHARACTER_MEASURE), earlier)).toBe(true);
  });

  it('rejects a shorter prompt, an edited tail, and an edit of the same size', () => {
    expect(extendsPrompt(m.measure('y', base.slice(0, -1), undefined, 'generic', CHARACTER_MEASURE), earlier)).toBe(
      false,
    );
    const editedTail = [...base.slice(0, -1), user('different'), user('more')];
    expect(extendsPrompt(m.measure('y', editedTail, undefined, 'generic', CHARACTER_MEASURE), earlier)).toBe(false);
    const last = base[base.length - 1]!;
    const sameSize = JSON.parse(JSON.stringify(last).replace('content 2', 'content 9')) as GuardMessage;
    expect(
      extendsPrompt(m.measure('y', [...base.slice(0, -1), sameSize], undefined, 'generic', CHARACTER_MEASURE), earlier),
    ).toBe(false);
  });
});
