// Hostile and unlucky input through the core guard: implausible usage, media and giant
// system prompts on small windows, malformed entries, reused tool-call ids, user text that looks
// like the guard's own markers. Each case reproduces a defect found by probing the guard from the
// outside; the assertions are the promises of DESIGN.md (never over, never lose the user's words,
// never throw, fail closed).
import { describe, expect, it } from 'vitest';
import { createContextGuard, type GuardMessage, type UserMessage } from '../src/index.ts';
import { ContextGuardConfigError } from '../src/config.ts';
import { expectInvariants, userText } from './compaction/invariants.ts';
import { text } from './compaction/builders.ts';
import { assistant, recorder, system, toolStep, user } from './helpers.ts';
import { pngBase64 } from './png.ts';

function history(pairs: number, chars = 400): GuardMessage[] {
  const messages: GuardMessage[] = [system('You are a coding agent.')];
  for (let i = 0; i < pairs; i++) {
    messages.push(user(text(`U${i} fact-${i}`, chars)));
    messages.push(assistant(text(`A${i}`, chars)));
  }
  messages.push(user('latest request: finish the migration'));
  return messages;
}

describe('implausible usage never drives a compaction', () => {
  const outliers: Array<[string, Record<string, number>]> = [
    ['1e12', { inputTokens: 1e12 }],
    ['1e308', { inputTokens: 1e308 }],
    ['2**53 + 10', { inputTokens: 2 ** 53 + 10 }],
    [
      'cache counts that sum to Infinity',
      { inputTokens: 1_000, cacheReadInputTokens: 1e308, cacheWriteInputTokens: 1e308 },
    ],
    ['1 token for a 10k-character prompt', { inputTokens: 1 }],
  ];
  for (const [name, usage] of outliers) {
    it(`${name}: rejected with an event, every message still sent`, async () => {
      const ev = recorder();
      const guard = createContextGuard({ contextWindow: 32_000, onEvent: ev.onEvent });
      const messages = history(21);
      expect(messages.length).toBe(44);
      const first = await guard.beforeModel({ sessionId: 's', messages });
      expect(first.messages).toHaveLength(44);
      await guard.afterModel({ sessionId: 's', usage: usage as never });
      expect(ev.of('usage-ignored').map((e) => e.reason)).toEqual(['implausible']);
      expect(ev.of('usage-recorded')).toHaveLength(0);
      const next = [...messages, assistant('done with step 1'), user('and now step 2')];
      const second = await guard.beforeModel({ sessionId: 's', messages: next });
      expect(second.messages).toHaveLength(46);
      expect(second.compaction).toBeUndefined();
      expect(second.tokens).toBeLessThan(second.threshold);
      // Normal usage afterwards is accepted.
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(second.tokens * 1.1) } });
      expect(ev.of('usage-recorded')).toHaveLength(1);
      const third = await guard.beforeModel({ sessionId: 's', messages: [...next, assistant('ok'), user('step 3')] });
      expect(third.messages).toHaveLength(48);
    });
  }

  it('a plausible count well above the estimate (a hidden system prompt) is still accepted', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 200_000, onEvent: ev.onEvent });
    const r = await guard.beforeModel({ sessionId: 's', messages: history(3) });
    // A 26k-token hidden prompt over a ~1k-token conversation.
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: r.tokens + 26_000 } });
    expect(ev.of('usage-recorded')).toHaveLength(1);
  });
});

describe('media are replaced by placeholders when the prompt cannot fit otherwise', () => {
  it('eight 1500×1500 PNGs in the latest user message on an 8k window', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const image = pngBase64(1500, 1500, 2_000);
    const latest: UserMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'What differs between these screenshots?' },
        ...Array.from({ length: 8 }, (_, i) => ({
          type: 'image' as const,
          image,
          mediaType: 'image/png',
          providerOptions: { test: { i } },
        })),
      ],
    };
    const messages: GuardMessage[] = [system('You review UI changes.'), user('hello'), assistant('hi'), latest];
    // No model id: each image is priced at the most any provider bills (1,600 tokens): 12.8k in all.
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    const sent = r.messages[r.messages.length - 1] as UserMessage;
    expect(userText(sent)).toContain('What differs between these screenshots?');
    const parts = sent.content as Array<{ type: string; text?: string }>;
    const images = parts.filter((p) => p.type === 'image');
    const placeholders = parts.filter((p) => p.type === 'text' && /image\/png/.test(p.text ?? ''));
    expect(images.length).toBeGreaterThan(0);
    expect(images.length + placeholders.length).toBe(8);
    // Oldest first: the kept images are the last ones.
    expect(parts[parts.length - 1]?.type).toBe('image');
    expect(ev.of('overflow')).toHaveLength(0);
  });

  it('screenshots in the tool results of the latest turn, oldest replaced first', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const shot = (i: number): GuardMessage[] => [
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: `s${i}`, toolName: 'screenshot', input: {} }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: `s${i}`,
            toolName: 'screenshot',
            output: {
              type: 'content',
              value: [
                { type: 'text', text: `screen ${i}` },
                { type: 'image-data', data: pngBase64(1500, 1500, 500 + i), mediaType: 'image/png' },
              ],
            },
          },
        ],
      },
    ];
    const messages: GuardMessage[] = [
      system('You operate a browser.'),
      user('Open the settings page and enable dark mode.'),
    ];
    for (let i = 0; i < 8; i++) messages.push(...shot(i));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expectInvariants(messages, r);
    const sent = JSON.stringify(r.messages);
    expect(sent).toContain('Open the settings page and enable dark mode.');
    // The newest screenshot is still an image; the oldest went first.
    const last = r.messages[r.messages.length - 1] as GuardMessage;
    expect(JSON.stringify(last.content)).toContain('image-data');
    expect(r.compaction?.overflow).toBe(false);
  });

  it('a 2 MB base64 PDF in the latest user message on an 8k window', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const pdf = Buffer.alloc(1_500_000, 'x').toString('base64');
    const latest: UserMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'Summarize the attached report.' },
        { type: 'file', data: `%PDF-1.7 ${pdf}`, mediaType: 'application/pdf', filename: 'report.pdf' },
      ],
    };
    const r = await guard.beforeModel({ sessionId: 's', messages: [system('s'), latest] });
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    const sent = userText(r.messages[r.messages.length - 1] as GuardMessage);
    expect(sent).toContain('Summarize the attached report.');
    expect(sent).toMatch(/application\/pdf/);
    expect(sent).toMatch(/report\.pdf/);
  });
});

describe('the latest user request stays whole when a large fixed part leaves room for it', () => {
  it('a system prompt near the threshold: the request is sent whole, and small additions do not compact on every call', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const sys = system(text('SYSTEM', 14_000)); // ~5.3k of the 6.4k threshold at the default 1.5 correction
    const request = text('REQUEST keep every word of this request', 1_500);
    let messages: GuardMessage[] = [sys];
    for (let i = 0; i < 6; i++) messages.push(user(text(`U${i}`, 500)), assistant(text(`A${i}`, 500)));
    messages.push(user(request));
    let compactions = 0;
    const calls = 12;
    for (let call = 0; call < calls; call++) {
      if (call > 0)
        messages = [...messages, assistant(text(`step${call}`, 120)), user(`${call}: ${text('go on', 120)}`)];
      const r = await guard.beforeModel({ sessionId: 's', messages });
      if (r.compaction) compactions++;
      const latest = userText(messages[messages.length - 1] as GuardMessage);
      expect(r.messages.some((m) => m.role === 'user' && userText(m).includes(latest))).toBe(true);
      expect(r.tokens).toBeLessThanOrEqual(r.threshold);
      if (call === 0) expect(r.messages.some((m) => userText(m).includes(request))).toBe(true);
    }
    expect(compactions).toBeLessThanOrEqual(calls / 2);
  });

  it('a request cut when it alone exceeded the window is sent whole again once the real counts say it fits', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, calibration: { default: 3 }, onEvent: ev.onEvent });
    const request = text('LONG-REQUEST', 12_000); // 3k heuristic tokens: 9k at the default 3, 3k at the real 1
    const messages = [system('s'), user('earlier'), assistant('ok'), user(request)];
    const first = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('overflow')).toHaveLength(1);
    expect(first.messages.some((m) => userText(m) === request)).toBe(false);
    // The provider counts one token per four characters: the cut prompt cost far less than feared.
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.ceil(first.tokens / 3) } });
    const second = await guard.beforeModel({ sessionId: 's', messages });
    expect(second.messages.some((m) => userText(m) === request)).toBe(true);
    expect(second.tokens).toBeLessThanOrEqual(second.threshold);
  });

  it('a system prompt over the threshold alone: reported once, the prompt held under the window, no compaction loop', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const sys = system(text('SYSTEM', 20_000)); // over the threshold alone
    const input = [sys, user('first'), assistant('answer'), user('second request')];
    const a = await guard.beforeModel({ sessionId: 's', messages: input });
    const fixed = ev.of('fixed-over-threshold');
    expect(fixed).toHaveLength(1);
    expect(a.tokens).toBeLessThanOrEqual(fixed[0]?.limit as number);
    expect(a.tokens).toBeLessThan(8_000);
    expect(a.overflow).toBe(true);
    expect(userText(a.messages[a.messages.length - 1] as GuardMessage)).toBe('second request');
    const b = await guard.beforeModel({ sessionId: 's', messages: input });
    expect(b.compaction).toBeUndefined();
    expect(ev.of('fixed-over-threshold')).toHaveLength(1);
    expect(b.messages).toEqual(a.messages);
  });
});

describe('malformed entries: dropped with an event, never the raw prompt', () => {
  it('a null message among 202: the rest is guarded as usual', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const messages = history(100) as unknown[];
    messages.splice(50, 0, null);
    const r = await guard.beforeModel({ sessionId: 's', messages: messages as GuardMessage[] });
    expect(r.threshold).toBeLessThan(8_000);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expect(r.messages).not.toContain(null);
    expect(ev.of('invalid-messages')[0]?.indices).toEqual([50]);
    expect(ev.of('error')).toHaveLength(0);
  });

  it('a tool input with a cycle: the message is left out (no provider can serialize it), the rest guarded', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const cyclic: Record<string, unknown> = { path: 'a.ts', nested: { list: [] as unknown[] } };
    (cyclic['nested'] as { list: unknown[] }).list.push(cyclic);
    const messages = [...history(100).slice(0, -1), ...toolStep('c1', cyclic, 'file body'), user('latest')];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.threshold).toBeLessThan(8_000);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expect(userText(r.messages[r.messages.length - 1] as GuardMessage)).toBe('latest');
    expect(ev.of('invalid-messages')[0]?.indices).toEqual([messages.length - 3]);
    expect(() => JSON.stringify(r.messages)).not.toThrow();
    expect(ev.of('error')).toHaveLength(0);
  });

  it('a tool output with a cycle keeps its place as a note of why, its call answered, a prompt ending on it too', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const cyclic: Record<string, unknown> = { ok: true, rows: [1, 2, 3] };
    cyclic['parent'] = { child: cyclic };
    const [call] = toolStep('c1', { path: 'a.ts' }, 'x') as [GuardMessage];
    const output: GuardMessage = {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'json', value: cyclic } },
      ],
    };
    // Last (the host's prompt ends on it), and in the middle of the history.
    for (const after of [[], [assistant('Read it.'), user('latest')]]) {
      const messages = [...history(4), call, output, ...after];
      const r = await guard.beforeModel({ sessionId: `s${after.length}`, messages });
      expectInvariants(messages, r);
      expect(() => JSON.stringify(r.messages)).not.toThrow();
      const at = r.messages.indexOf(call);
      expect(at).toBeGreaterThan(0);
      // The call keeps its input and a result, in the tool's voice, that says why its output is not there.
      const stand = r.messages[at + 1] as GuardMessage;
      expect(stand.role).toBe('tool');
      expect(stand.content).toEqual([
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'read_file',
          output: { type: 'text', value: expect.stringMatching(/could not be sent.*cycle/) },
        },
      ]);
      if (after.length === 0) expect(r.messages[r.messages.length - 1]).toBe(stand);
      expect(ev.last('invalid-messages').indices).toEqual([messages.indexOf(output)]);
    }
    expect(ev.of('error')).toHaveLength(0);
  });

  it('a tool input whose shared values expand past what JSON can hold is left out, like a cycle', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    // No cycle, but each level refers twice to the one below: 2^40 objects once serialized.
    let bomb: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) bomb = { left: bomb, right: bomb };
    // Shared values that expand modestly are fine.
    const shared = { schema: 'x' };
    const messages = [
      ...history(100).slice(0, -1),
      ...toolStep('c1', bomb, 'file body'),
      ...toolStep('c2', { a: shared, b: shared, c: [shared, shared] }, 'other body'),
      user('latest'),
    ];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('invalid-messages')[0]?.indices).toEqual([messages.length - 5]);
    expect(ev.of('invalid-messages')[0]?.reasons[0]).toMatch(/same objects so many times/);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expect(userText(r.messages[r.messages.length - 1] as GuardMessage)).toBe('latest');
    expect(ev.of('error')).toHaveLength(0);
  });

  it('parts whose text, tool name, id or media type is not a string are left out and reported', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent, summarizer: () => 'S' });
    const unprintable = Object.create(null) as object;
    const messages = history(100).slice(0, -1) as unknown[];
    messages.splice(10, 0, { role: 'assistant', content: [{ type: 'text', text: unprintable }] });
    messages.splice(20, 0, {
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'x1', toolName: unprintable, input: {} }],
    });
    messages.splice(30, 0, {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: unprintable, toolName: 'read', output: { type: 'text', value: 'v' } },
      ],
    });
    // Numbers print, but no provider takes them there, and the guard compares ids as strings.
    messages.splice(40, 0, { role: 'user', content: [{ type: 'text', text: 20_240_101 }] });
    messages.splice(50, 0, {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 105, toolName: 'read', output: { type: 'text', value: 'v' } }],
    });
    messages.splice(60, 0, { role: 'user', content: [{ type: 'image', image: 'aGk=', mediaType: unprintable }] });
    messages.push(user('latest'));
    const r = await guard.beforeModel({ sessionId: 's', messages: messages as GuardMessage[] });
    expect(ev.of('invalid-messages')[0]?.indices).toEqual([10, 20, 30, 40, 50, 60]);
    expect(ev.of('error')).toHaveLength(0);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expect(() => JSON.stringify(r.messages)).not.toThrow();
  });

  it('a cycle or a bomb first reached past the depth limit is still found where it is reached again', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const x: Record<string, unknown> = { name: 'x' };
    x['y'] = { back: x };
    let bomb: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) bomb = { left: bomb, right: bomb };
    const deepUnder = (value: unknown): Record<string, unknown> => {
      let deep: Record<string, unknown> = { value };
      for (let i = 0; i < 61; i++) deep = { d: deep };
      return deep;
    };
    const messages = [
      ...history(100).slice(0, -1),
      ...toolStep('c1', { a: deepUnder(x), b: x }, 'one'),
      ...toolStep('c2', { a: deepUnder(bomb), b: bomb }, 'two'),
      user('latest'),
    ];
    await guard.beforeModel({ sessionId: 's', messages });
    const left = ev.of('invalid-messages')[0];
    expect(left?.indices).toEqual([messages.length - 5, messages.length - 3]);
    expect(left?.reasons[0]).toMatch(/cycle/);
    expect(left?.reasons[1]).toMatch(/same objects so many times/);
  });

  it('an entry whose role cannot even be printed is left out; beforeModel still answers', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const messages = [
      system('s'),
      { role: Object.create(null), content: 'x' },
      user('hello'),
    ] as unknown as GuardMessage[];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.messages).toEqual([system('s'), user('hello')]);
    expect(ev.of('invalid-messages')[0]?.indices).toEqual([1]);
  });

  it('a tool output item whose type cannot be printed is compacted like any other', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent, summarizer: () => 'S' });
    const messages: GuardMessage[] = [system('s'), user('read the files')];
    for (let i = 0; i < 6; i++) {
      messages.push(
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'read', input: { i } }] },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: `c${i}`,
              toolName: 'read',
              output: {
                type: 'content',
                value: [{ type: Object.create(null) as string }, { type: 'text', text: text(`out${i}`, 3_000) }],
              },
            },
          ],
        },
        assistant('ok'),
        user(`step ${i}`),
      );
    }
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('error')).toEqual([]);
    expect(r.compaction).toBeDefined();
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
  });

  it('an internal error fails closed: the smallest prompt that fits, never the raw input', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const messages = history(100);
    // A part whose text can be read once (by the entry check), then throws: measuring fails inside the guard.
    let reads = 0;
    const hostile = {
      type: 'text',
      get text(): string {
        if (reads++ > 0) throw new Error('unreadable');
        return 'fine once';
      },
    };
    messages.splice(20, 0, { role: 'assistant', content: [hostile] } as unknown as GuardMessage);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('error')).toHaveLength(1);
    expect(r.threshold).toBe(6_400);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expect(r.messages[0]).toEqual(messages[0]);
    expect(r.messages[r.messages.length - 1]).toEqual(messages[messages.length - 1]);
    expect(r.messages.length).toBeLessThan(10);
  });

  it('non-object entries and unknown roles are dropped and reported', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const messages = [
      system('s'),
      42,
      'text',
      { content: 'no role' },
      { role: 'wizard', content: 'x' },
      undefined,
      user('hello'),
    ] as unknown as GuardMessage[];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.messages).toEqual([system('s'), user('hello')]);
    expect(ev.of('invalid-messages')[0]?.indices).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('reused tool-call ids', () => {
  it('the newest result with a reused id is sent whole, not as a placeholder', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const messages: GuardMessage[] = [system('s'), user('read the files')];
    for (let i = 0; i < 6; i++) messages.push(...toolStep('call_0', { path: `old${i}.ts` }, text(`OLD${i}`, 3_000)));
    messages.push(...toolStep('call_0', { path: 'new.ts' }, text('NEWEST result', 1_000)));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeDefined();
    const last = r.messages[r.messages.length - 1] as GuardMessage;
    expect(JSON.stringify(last.content)).toContain('NEWEST result');
    expect(JSON.stringify(last.content)).not.toMatch(/removed to save context/);
  });
});

describe('user text that looks like the guard’s markers is the user’s', () => {
  it('an older user message starting with [Continue] reaches the summarizer', async () => {
    const seen: string[] = [];
    const guard = createContextGuard({
      contextWindow: 8_000,
      // Not carried over verbatim (the default keeps recent user messages): it must be summarized.
      keepUserMessagesTokens: 0,
      summarizer: ({ messages }) => {
        seen.push(...messages.map((m) => userText(m)));
        return 'summary';
      },
    });
    const messages = history(30);
    messages.splice(3, 0, user('[Continue] with the plan we agreed on: never touch the billing tables'));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.strategy).toBe('summary');
    expect(seen.some((t) => t.includes('never touch the billing tables'))).toBe(true);
  });

  it('a latest request starting with [Context Summary] is the request, not a summary', async () => {
    const guard = createContextGuard({
      contextWindow: 8_000,
      retention: 'summarize-all',
      summarizer: () => 'summary of the work',
    });
    const messages = [...history(30).slice(0, -1), user('[Context Summary] please: write one for the release notes')];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeDefined();
    const texts = r.messages.map((m) => userText(m)).join('\n');
    expect(texts).toContain('[Context Summary] please: write one for the release notes');
    // The previous request is summarized, not sent as a request (its sentences are in the footer
    // of the user's words, inside the summary).
    const outside = r.messages.filter((m) => !userText(m).startsWith('[Context Summary]\nThe earlier part'));
    expect(outside.map((m) => userText(m)).join('\n')).not.toContain('U29 fact-29');
    expectInvariants(messages, r);
  });
});

describe('contextWindow has a documented minimum', () => {
  for (const contextWindow of [1, 0.5, 1.5, 999]) {
    it(`${contextWindow} is rejected at creation`, () => {
      expect(() => createContextGuard({ contextWindow })).toThrow(ContextGuardConfigError);
      expect(() => createContextGuard({ models: { m: contextWindow } })).toThrow(/models\.m/);
    });
  }
});

describe('hard fit cuts a giant assistant step down to the threshold', () => {
  it('reasoning, an answer and a whole file written in one assistant message: cut to the threshold, the step and its result kept', async () => {
    const ev = recorder();
    const guard = createContextGuard({
      contextWindow: 8_000,
      summarizer: () => 'summary of the work so far',
      onEvent: ev.onEvent,
    });
    const step: GuardMessage = {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: text('THINK', 9_000) },
        { type: 'text', text: text('ANSWER', 26_000) },
        {
          type: 'tool-call',
          toolCallId: 'w1',
          toolName: 'write_file',
          input: { path: 'src/big.ts', content: text('FILE', 16_000) },
        },
      ],
    };
    const result: GuardMessage = {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'w1', toolName: 'write_file', output: { type: 'text', value: 'written' } },
      ],
    };
    const messages = [
      system('You are a coding agent.'),
      user('Write the module.'),
      assistant('ok'),
      user('go on'),
      step,
      result,
    ];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expectInvariants(messages, r);
    expect(ev.of('overflow')).toHaveLength(0);
    // The budget is shared by the text, the reasoning and the tool input: the message lands just
    // under the threshold, not at twice its share (over it). Not deeper either: hard fit cuts to fit,
    // and the target is a cost, not a reason to destroy more of the step.
    expect(r.compaction?.tokensAfter).toBeLessThanOrEqual(r.threshold);
    expect(r.compaction?.tokensAfter).toBeGreaterThan(0.9 * r.threshold);
    expect(JSON.stringify(r.messages)).toContain('"toolCallId":"w1"');
  });
});
