import { describe, expect, it } from 'vitest';
import { createContextGuard, type GuardMessage, type SessionState, type StateStore } from '../src/index.ts';
import { MESSAGE_OVERHEAD_CHARS } from '../src/tokens/heuristic.ts';
import { assistant, recorder, system, toolStep, user } from './helpers.ts';

/** A user message whose heuristic is exactly `tokens` chars/4 tokens (message overhead included). */
const userOfTokens = (tokens: number, fill = 'x'): GuardMessage =>
  user(fill.repeat(tokens * 4 - MESSAGE_OVERHEAD_CHARS));

describe('beforeModel', () => {
  it('returns the input array itself when it changes nothing (no copy of a long history), never mutated', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const messages = Object.freeze([system('be brief'), user('hello')]) as readonly GuardMessage[];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.messages).toBe(messages);
    expect(r.messages).toEqual([system('be brief'), user('hello')]);
  });

  it('returns a new array when it changes something, and never mutates the input', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    // A tool call without its result: repaired in the prompt sent, not in the host's array.
    const [call] = toolStep('c1', { path: 'a.ts' }, 'content');
    const messages = Object.freeze([system('be brief'), user('hello'), call as GuardMessage, user('next')]);
    const snapshot = structuredClone(messages);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.messages).not.toBe(messages);
    expect(r.messages[0]).toBe(messages[0]);
    expect(messages).toEqual(snapshot);
  });

  it('uses the default correction 1.5 before any real count', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const r = await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(1_000)] });
    expect(r.tokens).toBe(1_500);
    expect(ev.last('estimate')).toMatchObject({ method: 'default', correction: 1.5, heuristicTokens: 1_000 });
    expect(r.threshold).toBe(6_400);
    expect(r.fraction).toBeCloseTo(1_500 / 8_000, 9);
  });

  it('counts tool definitions', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const messages = [userOfTokens(100)];
    const without = await guard.beforeModel({ sessionId: 'a', messages });
    const tools = [
      {
        name: 'search',
        description: 'd'.repeat(400),
        inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      },
    ];
    const withTools = await guard.beforeModel({ sessionId: 'b', messages, tools });
    expect(withTools.tokens - without.tokens).toBeGreaterThanOrEqual(150);
  });

  it('clamps the correction at 1.0 when the provider counts fewer tokens than the heuristic', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(1_000)] });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 400 } });
    // A different conversation on the same session (not an extension): heuristic × correction.
    const r = await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(2_000, 'y')] });
    expect(ev.last('estimate')).toMatchObject({ method: 'scaled', correction: 1 });
    expect(r.tokens).toBe(2_000);
  });

  it('clamps the correction at 5.0: what lies beyond is an invisible part, kept in every later estimate', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(1_000)] });
    // 20× the heuristic: beyond the clamp, so at least 15,000 tokens are invisible (a hidden prompt).
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 20_000 } });
    const r = await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(2_000, 'y')] });
    // Another prompt (not an extension): 15,000 invisible + 2,000 at the default rate, not 5 × 2,000.
    expect(ev.last('estimate')).toMatchObject({ method: 'scaled' });
    expect(r.tokens).toBe(15_000 + 3_000);
  });

  it('anchors on the last real count and adds the calibrated estimate of what was added', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    const first = [userOfTokens(1_000)];
    await guard.beforeModel({ sessionId: 's', messages: first });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 2_000 } });
    const second = [...first, assistant('a'.repeat(4 * 500 - MESSAGE_OVERHEAD_CHARS))];
    const r = await guard.beforeModel({ sessionId: 's', messages: second });
    // 2,000 real + 500 heuristic tokens × the prior marginal correction: the anchor's ratio (2.0)
    // capped at the default (1.5), since no growth has been measured yet.
    expect(ev.last('estimate')).toMatchObject({ method: 'anchored', correction: 1.5 });
    expect(r.tokens).toBe(2_750);
  });

  it('prices the previous response at least at its reported output tokens', async () => {
    const guard = createContextGuard({ contextWindow: 100_000 });
    const first = [userOfTokens(1_000)];
    await guard.beforeModel({ sessionId: 's', messages: first });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 1_500, outputTokens: 800 } });
    const response = assistant('a'.repeat(4 * 100 - MESSAGE_OVERHEAD_CHARS));
    const r = await guard.beforeModel({ sessionId: 's', messages: [...first, response] });
    expect(r.tokens).toBe(1_500 + 800);
    // A provider that reports fewer output tokens than the visible text (reasoning dropped, or a
    // partial count) does not lower the estimate below the calibrated text.
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 2_300, outputTokens: 1 } });
    const next = await guard.beforeModel({ sessionId: 's', messages: [...first, response, response] });
    expect(next.tokens).toBeGreaterThan(2_300 + 100);
  });

  it('is not thrown off by a large invisible part on the first calls', async () => {
    // A hidden 26k-token system prompt over a 1k-token conversation: real / heuristic hits the 5.0
    // clamp, but what is added next is priced near the default rate, not at 5x.
    const guard = createContextGuard({ contextWindow: 200_000 });
    const first = [userOfTokens(1_000)];
    await guard.beforeModel({ sessionId: 's', messages: first });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 27_500 } });
    const r = await guard.beforeModel({ sessionId: 's', messages: [...first, userOfTokens(10_000, 'y')] });
    expect(r.tokens).toBe(27_500 + 15_000);
  });

  it('prices growth with the marginal correction, free of a constant invisible part', async () => {
    // The provider adds 10,000 invisible tokens (its own system prompt) and 2 tokens per heuristic token.
    const real = (heuristic: number) => 10_000 + 2 * heuristic;
    const guard = createContextGuard({ contextWindow: 1_000_000 });
    let messages: GuardMessage[] = [];
    let lastError = 1;
    for (let i = 0; i < 12; i++) {
      messages = [...messages, userOfTokens(1_000, String.fromCharCode(97 + (i % 26)))];
      const r = await guard.beforeModel({ sessionId: 's', messages });
      const truth = real(1_000 * messages.length);
      lastError = Math.abs(r.tokens - truth) / truth;
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: truth } });
    }
    expect(lastError).toBeLessThan(0.001);
  });

  it('never estimates below the last real count when the prompt only grew', async () => {
    const guard = createContextGuard({ contextWindow: 100_000, calibration: { min: 0.1, max: 5, default: 1.5 } });
    const first = [userOfTokens(1_000)];
    await guard.beforeModel({ sessionId: 's', messages: first });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 9_000 } });
    const r = await guard.beforeModel({ sessionId: 's', messages: [...first, user('ok')] });
    expect(r.tokens).toBeGreaterThanOrEqual(9_000);
  });

  it('falls back to heuristic × correction when the history was edited', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    const messages = [userOfTokens(1_000), assistant('fine'), user('next')];
    await guard.beforeModel({ sessionId: 's', messages });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 3_000 } });
    const edited = [messages[0]!, assistant('FINE'), user('next'), user('more')];
    await guard.beforeModel({ sessionId: 's', messages: edited });
    expect(ev.last('estimate').method).toBe('scaled');
  });

  it('keeps sessions apart', async () => {
    const guard = createContextGuard({ contextWindow: 100_000 });
    await guard.beforeModel({ sessionId: 'a', messages: [userOfTokens(1_000)] });
    await guard.afterModel({ sessionId: 'a', usage: { inputTokens: 4_000 } });
    const b = await guard.beforeModel({ sessionId: 'b', messages: [userOfTokens(1_000)] });
    expect(b.tokens).toBe(1_500);
  });

  it('fires a warning from warnAt', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 10_000, warnAt: 0.5, onEvent: ev.onEvent });
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(3_000)] });
    expect(ev.of('warning')).toHaveLength(0);
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(4_000)] });
    expect(ev.last('warning')).toMatchObject({ tokens: 6_000, contextWindow: 10_000, fraction: 0.6, warnAt: 0.5 });
  });

  it('resolves the window from modelId, with user overrides', async () => {
    const guard = createContextGuard({ models: { 'acme-1': 32_000 } });
    const gpt = await guard.beforeModel({ sessionId: 's', modelId: 'gpt-4o', messages: [user('hi')] });
    expect(gpt.contextWindow).toBe(128_000);
    const acme = await guard.beforeModel({ sessionId: 't', modelId: 'acme-1', messages: [user('hi')] });
    expect(acme.contextWindow).toBe(32_000);
    expect(acme.threshold).toBe(25_600);
  });

  it('guards an unknown model with the fallback window, reported once, and answers status() for it', async () => {
    const ev = recorder();
    const guard = createContextGuard({ onEvent: ev.onEvent });
    const r = await guard.beforeModel({ sessionId: 's', modelId: 'mystery-9000', messages: [user('hi')] });
    await guard.beforeModel({ sessionId: 's', modelId: 'mystery-9000', messages: [user('hi')] });
    expect(r.contextWindow).toBe(32_000);
    expect(r.threshold).toBe(25_600);
    expect(ev.of('window-fallback')).toHaveLength(1);
    expect(ev.last('window-fallback')).toMatchObject({ modelId: 'mystery-9000', contextWindow: 32_000 });
    expect(ev.of('config-error')).toEqual([]);
    expect(await guard.status('s')).toMatchObject({ sessionId: 's', contextWindow: 32_000, threshold: 25_600 });
  });

  it('compacts an unknown model’s conversation over the fallback threshold instead of passing it through', async () => {
    const guard = createContextGuard({ onEvent: () => {}, summarizer: async () => 'summary of the old turns' });
    const big = 'x'.repeat(12_000);
    const messages = Array.from({ length: 20 }, (_, i) => user(`${i} ${big}`));
    const r = await guard.beforeModel({ sessionId: 's', modelId: 'mystery-9000', messages });
    expect(r.compaction).toBeDefined();
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
  });

  it('learns the limit a provider names in its rejection, and the retry fits it', async () => {
    const ev = recorder();
    const guard = createContextGuard({ onEvent: ev.onEvent, summarizer: async () => 'summary of the old turns' });
    const messages = Array.from({ length: 12 }, (_, i) => user(`${i} ${'y'.repeat(4_000)}`));
    const first = await guard.beforeModel({ sessionId: 's', modelId: 'mystery-9000', messages });
    expect(first.compaction).toBeUndefined();
    const error = {
      error: {
        message:
          "This model's maximum context length is 8192 tokens. However, you requested 9500 tokens (9000 in the messages, 500 in the completion). Please reduce the length of the messages or completion.",
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
      },
    };
    expect(await guard.recoverFromOverflow({ sessionId: 's', error })).toMatchObject({ retry: true });
    expect(ev.last('window-learned')).toMatchObject({
      modelId: 'mystery-9000',
      contextWindow: 7_692,
      previous: 32_000,
    });
    const retry = await guard.beforeModel({ sessionId: 's', modelId: 'mystery-9000', messages });
    expect(retry.contextWindow).toBe(7_692);
    expect(retry.compaction).toBeDefined();
    expect(retry.tokens).toBeLessThanOrEqual(retry.threshold);
    // Another session of the same model starts from what was learned.
    const other = await guard.beforeModel({ sessionId: 't', modelId: 'mystery-9000', messages: [user('hi')] });
    expect(other.contextWindow).toBe(7_692);
  });

  it('never throws, even on garbage input or a failing store', async () => {
    const ev = recorder();
    const failing: StateStore<SessionState> = {
      get: async () => {
        throw new Error('store down');
      },
      set: async () => {
        throw new Error('store down');
      },
      delete: async () => {},
    };
    const guard = createContextGuard({ contextWindow: 8_000, store: failing, onEvent: ev.onEvent });
    const r = await guard.beforeModel({ sessionId: 's', messages: [user('hi')] });
    expect(r.messages).toEqual([user('hi')]);
    expect(ev.of('error')).toEqual([]);
    expect(ev.of('store-failed').length).toBeGreaterThan(0);
    await expect(guard.beforeModel(undefined as never)).resolves.toMatchObject({ messages: [] });
    await expect(guard.beforeModel({ sessionId: 's', messages: 'nope' } as never)).resolves.toMatchObject({
      messages: [],
    });
    const weird = [
      { role: 'user', content: [{ type: 'mystery', blob: 1n }] },
      { role: 'tool', content: null },
    ] as never;
    await expect(guard.beforeModel({ sessionId: 's', messages: weird })).resolves.toBeDefined();
    await expect(guard.afterModel(null as never)).resolves.toBeUndefined();
  });

  it('measures tool values JSON cannot print (a BigInt in an object without a prototype), without failing', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: ev.onEvent });
    const input = Object.assign(Object.create(null) as Record<string, unknown>, { id: 10n, name: 'x' });
    const messages: GuardMessage[] = [
      user('hello'),
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input }] },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'json', value: input } },
        ],
      },
      user('next'),
    ];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('error')).toEqual([]);
    expect(r.messages).toBe(messages);
  });

  it('compacts a history holding tool values JSON cannot print, with its summarizer, without failing', async () => {
    const ev = recorder();
    const guard = createContextGuard({
      contextWindow: 4_000,
      onEvent: ev.onEvent,
      summarizer: () => 'The agent looked up records.',
    });
    const messages: GuardMessage[] = [user('Look up every record.')];
    for (let i = 0; i < 12; i++) {
      const input = Object.assign(Object.create(null) as Record<string, unknown>, {
        id: BigInt(i),
        note: 'x'.repeat(300),
      });
      messages.push(
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'lookup', input }] },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: `c${i}`,
              toolName: 'lookup',
              output: { type: 'text', value: 'y'.repeat(1_200) },
            },
          ],
        },
      );
    }
    messages.push(user('Now sum them up.'));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('error')).toEqual([]);
    expect(r.compaction).toBeDefined();
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
  });

  it('survives an onEvent callback that throws', async () => {
    const guard = createContextGuard({
      contextWindow: 8_000,
      onEvent: () => {
        throw new Error('logger broke');
      },
    });
    await expect(guard.beforeModel({ sessionId: 's', messages: [user('hi')] })).resolves.toBeDefined();
  });
});

describe('afterModel', () => {
  it.each([
    ['missing usage', undefined, 'missing'],
    ['null usage', null, 'missing'],
    ['NaN', { inputTokens: Number.NaN }, 'invalid-input-tokens'],
    ['negative', { inputTokens: -5 }, 'invalid-input-tokens'],
    ['a string', { inputTokens: '1200' }, 'invalid-input-tokens'],
    ['zero', { inputTokens: 0 }, 'invalid-input-tokens'],
    ['Infinity', { inputTokens: Number.POSITIVE_INFINITY }, 'invalid-input-tokens'],
    ['no inputTokens', { outputTokens: 5 }, 'invalid-input-tokens'],
    ['bad cached tokens', { inputTokens: 10, cacheReadInputTokens: -1 }, 'invalid-input-tokens'],
  ])('ignores %s with an event and keeps later estimates intact', async (_label, usage, reason) => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    const messages = [userOfTokens(1_000)];
    await guard.beforeModel({ sessionId: 's', messages });
    await guard.afterModel({ sessionId: 's', usage: usage as never });
    expect(ev.last('usage-ignored')).toMatchObject({ reason });
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.tokens).toBe(1_500);
    expect(ev.last('estimate').method).toBe('default');
  });

  it('ignores usage with no request to pair it with', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    await guard.afterModel({ sessionId: 'never-called', usage: { inputTokens: 100 } });
    expect(ev.last('usage-ignored').reason).toBe('no-request');
  });

  it('keeps the input count when only the output count is bad', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(1_000)] });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 2_000, outputTokens: Number.NaN } });
    expect(ev.last('usage-ignored').reason).toBe('invalid-output-tokens');
    expect(ev.last('usage-recorded')).toMatchObject({
      inputTokens: 2_000,
      estimatedTokens: 1_500,
      relativeError: -0.25,
    });
  });

  it('adds cached tokens reported apart from the input tokens', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, onEvent: ev.onEvent });
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(1_000)] });
    await guard.afterModel({
      sessionId: 's',
      usage: { inputTokens: 10, cacheReadInputTokens: 1_500, cacheWriteInputTokens: 490 },
    });
    expect(ev.last('usage-recorded').inputTokens).toBe(2_000);
  });
});

describe('status', () => {
  it('reports the estimate, then the provider count once known', async () => {
    const guard = createContextGuard({ contextWindow: 10_000 });
    expect(await guard.status('s')).toBeUndefined();
    await guard.beforeModel({ sessionId: 's', messages: [userOfTokens(2_000)] });
    expect(await guard.status('s')).toEqual({
      sessionId: 's',
      tokens: 3_000,
      source: 'estimate',
      threshold: 8_000,
      contextWindow: 10_000,
      fraction: 0.3,
      costs: {
        calls: 1,
        promptTokens: 3_000,
        cachedTokens: 0,
        billedInputUnits: 3_750,
        compactions: 0,
        cacheBrokenTokens: 0,
        summarizerInputTokens: 0,
        tokensRemoved: 0,
      },
    });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 3_500, outputTokens: 200 } });
    expect(await guard.status('s')).toMatchObject({ tokens: 3_700, source: 'provider', fraction: 0.37 });
  });

  it('adds up what the prompts and compactions cost: cache reads, writes, what a compaction broke', async () => {
    const guard = createContextGuard({ contextWindow: 10_000, prune: false, summarizer: () => 'S' });
    const history = [user('start'), ...Array.from({ length: 12 }, (_, i) => userOfTokens(500 + i))];
    let last: Awaited<ReturnType<typeof guard.beforeModel>> | undefined;
    for (let n = 2; n <= history.length; n++) {
      last = await guard.beforeModel({ sessionId: 's', messages: history.slice(0, n) });
      if (last.compaction) break;
    }
    const compaction = last?.compaction;
    expect(compaction).toBeDefined();
    // The summary replaced the start of the prompt: the whole compacted prompt is written again.
    expect(compaction?.cacheBrokenTokens).toBeGreaterThan(0);
    expect(compaction?.cacheBrokenTokens).toBeLessThanOrEqual(compaction?.tokensAfter ?? 0);
    const costs = (await guard.status('s'))?.costs;
    expect(costs?.compactions).toBe(1);
    expect(costs?.cacheBrokenTokens).toBe(compaction?.cacheBrokenTokens);
    expect(costs?.tokensRemoved).toBe((compaction?.tokensBefore ?? 0) - (compaction?.tokensAfter ?? 0));
    // Between compactions each prompt repeats the previous one: read from the cache, only the addition written.
    expect(costs?.cachedTokens).toBeGreaterThan(0.5 * (costs?.promptTokens ?? 0));
    expect(costs?.billedInputUnits).toBeCloseTo(
      0.1 * (costs?.cachedTokens ?? 0) + 1.25 * ((costs?.promptTokens ?? 0) - (costs?.cachedTokens ?? 0)),
      6,
    );
  });

  it('forgets a session on reset', async () => {
    const guard = createContextGuard({ contextWindow: 10_000 });
    await guard.beforeModel({ sessionId: 's', messages: [user('hi')] });
    await guard.reset('s');
    expect(await guard.status('s')).toBeUndefined();
  });
});

describe('tool-heavy histories', () => {
  it('counts tool calls and results', async () => {
    const guard = createContextGuard({ contextWindow: 100_000 });
    const base = [user('read it')];
    const a = await guard.beforeModel({ sessionId: 'a', messages: base });
    const b = await guard.beforeModel({
      sessionId: 'b',
      messages: [...base, ...toolStep('c1', { path: 'src/x.ts' }, 'y'.repeat(4_000))],
    });
    expect(b.tokens - a.tokens).toBeGreaterThan(1_500);
  });
});

describe('exact counting', () => {
  const code = 'function add(a, b) { return a + b; }\n'.repeat(200);

  it('counts OpenAI and DeepSeek models with a BPE encoding under auto, others in characters', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 1_000_000, onEvent: ev.onEvent });
    const messages = [user(code)];
    await guard.beforeModel({ sessionId: 'a', modelId: 'gpt-4o', messages });
    const openai = ev.last('estimate').heuristicTokens;
    await guard.beforeModel({ sessionId: 'b', modelId: 'deepseek-chat', messages });
    const deepseek = ev.last('estimate').heuristicTokens;
    await guard.beforeModel({ sessionId: 'c', modelId: 'claude-sonnet-4-5', messages });
    const claude = ev.last('estimate').heuristicTokens;
    expect(claude).toBeCloseTo((code.length + MESSAGE_OVERHEAD_CHARS) / 4, 6);
    expect(openai).not.toBeCloseTo(claude, 0);
    expect(deepseek).toBe(openai);
  });

  it('can be turned off or forced', async () => {
    const ev = recorder();
    const off = createContextGuard({ contextWindow: 1_000_000, exactCounting: 'off', onEvent: ev.onEvent });
    await off.beforeModel({ sessionId: 'a', modelId: 'gpt-4o', messages: [user(code)] });
    expect(ev.last('estimate').heuristicTokens).toBeCloseTo((code.length + MESSAGE_OVERHEAD_CHARS) / 4, 6);
    const forced = createContextGuard({ contextWindow: 1_000_000, exactCounting: 'cl100k_base', onEvent: ev.onEvent });
    await forced.beforeModel({ sessionId: 'a', modelId: 'claude-sonnet-4-5', messages: [user(code)] });
    expect(ev.last('estimate').heuristicTokens).not.toBeCloseTo((code.length + MESSAGE_OVERHEAD_CHARS) / 4, 0);
  });

  it('counts special-token text as plain text instead of throwing', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 100_000, exactCounting: 'o200k_base', onEvent: ev.onEvent });
    const r = await guard.beforeModel({ sessionId: 's', messages: [user('<|endoftext|> and <|im_start|>')] });
    expect(r.tokens).toBeGreaterThan(5);
    expect(ev.of('error')).toHaveLength(0);
  });
});

describe('store failures', () => {
  /** A store that can be switched off (throws) or made slow, over a working in-memory map. */
  function flakyStore() {
    const data = new Map<string, SessionState>();
    const mode = { down: false, slowMs: 0 };
    const gate = async () => {
      if (mode.slowMs) await new Promise((r) => setTimeout(r, mode.slowMs));
      if (mode.down) throw new Error('store down');
    };
    const store: StateStore<SessionState> = {
      get: async (k) => (await gate(), data.get(k)),
      set: async (k, v) => {
        await gate();
        data.set(k, v);
      },
      delete: async (k) => {
        await gate();
        data.delete(k);
      },
    };
    return { store, data, mode };
  }

  it('goes on with the in-process state while the store is down, and brings the store up to date after', async () => {
    const ev = recorder();
    const { store, data, mode } = flakyStore();
    const guard = createContextGuard({ contextWindow: 100_000, store, onEvent: ev.onEvent });
    const first = [userOfTokens(1_000)];
    await guard.beforeModel({ sessionId: 's', messages: first });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 2_000 } });

    mode.down = true;
    const grown = [...first, assistant('a'.repeat(4 * 500 - MESSAGE_OVERHEAD_CHARS))];
    const r = await guard.beforeModel({ sessionId: 's', messages: grown });
    // Still anchored on the real count the store can no longer give back.
    expect(ev.last('estimate').method).toBe('anchored');
    expect(r.tokens).toBeGreaterThanOrEqual(2_000);
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: 2_600 } });
    expect(ev.of('store-failed').map((e) => e.operation)).toContain('get');
    expect(ev.of('store-failed').every((e) => e.reason === 'error')).toBe(true);
    expect(ev.of('error')).toEqual([]);

    mode.down = false;
    await guard.beforeModel({ sessionId: 's', messages: [...grown, user('next')] });
    expect(data.get('s')?.calibration.anchor?.realTokens).toBe(2_600);
  });

  it('does not wait longer than storeTimeoutMs for a slow store', async () => {
    const ev = recorder();
    const { store, mode } = flakyStore();
    const guard = createContextGuard({ contextWindow: 100_000, store, storeTimeoutMs: 20, onEvent: ev.onEvent });
    mode.slowMs = 2_000;
    const started = Date.now();
    const r = await guard.beforeModel({ sessionId: 's', messages: [user('hi')] });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(r.messages).toEqual([user('hi')]);
    expect(ev.of('store-failed').some((e) => e.reason === 'timeout')).toBe(true);
  });
});

describe('compaction paced by growth', () => {
  it('cuts deeper when the prompt grows fast, so compactions are several calls apart', async () => {
    const run = async (minCallsBetween: number) => {
      const guard = createContextGuard({
        contextWindow: 40_000,
        target: 0.5,
        summarizer: () => 'S',
        cost: { minCallsBetween },
      });
      // An agent reading big files: each call adds a ~5,000-token tool output, which pruning can replace.
      const history: GuardMessage[] = [user('Read every module and report.')];
      const at: number[] = [];
      for (let call = 0; call < 60; call++) {
        history.push(...toolStep(`c${call}`, { path: `m${call}.ts` }, `${call} `.repeat(5_000)));
        const r = await guard.beforeModel({ sessionId: 's', messages: history });
        await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.ceil(r.tokens) } });
        if (r.compaction) at.push(call);
      }
      return at.slice(1).map((c, i) => c - (at[i] as number));
    };
    const paced = await run(5);
    const unpaced = await run(0);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // At ~14% of the window per call, five calls apart would need a cut below a fifth of the
    // window (the floor): the paced cut gets as close as the floor allows.
    expect(Math.max(...unpaced)).toBe(3);
    expect(mean(paced)).toBeGreaterThan(mean(unpaced) + 0.4);
    expect(paced.length).toBeLessThan(unpaced.length);
  });
});
