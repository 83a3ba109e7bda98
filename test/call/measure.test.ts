// What one call is measured against (call/measure.ts): the window's precedence (the option, the host's
// window of at least 1,000 tokens, the registry, the fallback reported once per model), the limits
// providers name (learned), the
// threshold when the buffer leaves no room, and the text measure with its fallback to characters.
import { describe, expect, it, vi } from 'vitest';
import { CallResolver } from '../../src/call/measure.ts';
import { resolveOptions, type ContextGuardOptions } from '../../src/config.ts';
import type { ContextGuardEvent } from '../../src/events.ts';
import { CHARACTER_MEASURE } from '../../src/tokens/exact.ts';
import { PromptMeasurer } from '../../src/tokens/prompt-measure.ts';
import { user } from '../helpers.ts';

// The cl100k encoder cannot load in this file: the fallback to characters is tested with it.
vi.mock('gpt-tokenizer/encoding/cl100k_base', () => {
  throw new Error('cl100k rank table missing');
});

function resolver(options: ContextGuardOptions = {}) {
  const events: ContextGuardEvent[] = [];
  return { r: new CallResolver(resolveOptions(options), (e) => events.push(e)), events };
}

describe('CallResolver.window', () => {
  it('takes the contextWindow option over everything else', () => {
    const { r, events } = resolver({ contextWindow: 50_000 });
    expect(r.window('s', 'gpt-4o', 300_000)).toBe(50_000);
    expect(r.window('s', 'unknown-model', undefined)).toBe(50_000);
    expect(events).toEqual([]);
  });

  it('takes the host’s window over the registry and the models option', () => {
    const { r } = resolver({ models: { 'gpt-4o': 64_000 } });
    expect(r.window('s', 'gpt-4o', 300_000)).toBe(300_000);
    expect(r.window('s', 'gpt-4o', 1_000)).toBe(1_000);
  });

  it.each([999, 0.5, 0, -5, Number.NaN, Number.POSITIVE_INFINITY])('ignores a host window of %d', (callWindow) => {
    const { r, events } = resolver();
    expect(r.window('s', 'gpt-4o', callWindow)).toBe(128_000);
    expect(events).toEqual([]);
  });

  it('takes the models option over the registry', () => {
    const { r } = resolver({ models: { 'gpt-4o': 64_000, 'my-model': 40_000 } });
    expect(r.window('s', 'gpt-4o', undefined)).toBe(64_000);
    expect(r.window('s', 'my-model', undefined)).toBe(40_000);
  });

  it('guards an unknown model with the fallback window, reported once per model', () => {
    const { r, events } = resolver({ onEvent: () => {} });
    expect(r.window('s', 'mystery-1', undefined)).toBe(32_000);
    expect(r.window('t', 'mystery-1', 500)).toBe(32_000);
    expect(r.window('s', 'mystery-2', undefined)).toBe(32_000);
    expect(events).toMatchObject([
      { type: 'window-fallback', sessionId: 's', modelId: 'mystery-1', contextWindow: 32_000 },
      { type: 'window-fallback', sessionId: 's', modelId: 'mystery-2', contextWindow: 32_000 },
    ]);
    expect((events[0] as { message: string }).message).toContain('"mystery-1"');
  });

  it('takes the fallbackContextWindow option', () => {
    const { r } = resolver({ fallbackContextWindow: 100_000, onEvent: () => {} });
    expect(r.window('s', 'mystery-1', undefined)).toBe(100_000);
    expect(r.window('s', 'gpt-4o', undefined)).toBe(128_000);
  });

  it('reports a call without a model id or a window once', () => {
    const { r, events } = resolver({ onEvent: () => {} });
    expect(r.window('s', undefined, undefined)).toBe(32_000);
    expect(r.window('s', undefined, undefined)).toBe(32_000);
    expect(events).toHaveLength(1);
    expect(events[0]).not.toHaveProperty('modelId');
    expect((events[0] as { message: string }).message).toContain('no model id');
  });

  it('prints the fallback once per model when no onEvent is given, never with one', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const { r } = resolver();
      r.window('s', 'mystery-1', undefined);
      r.window('t', 'mystery-1', undefined);
      r.window('s', 'mystery-2', undefined);
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([
        expect.stringContaining('"mystery-1"'),
        expect.stringContaining('"mystery-2"'),
      ]);
      resolver({ onEvent: () => {} }).r.window('s', 'mystery-3', undefined);
      expect(warn).toHaveBeenCalledTimes(2);
    } finally {
      warn.mockRestore();
    }
  });

  it('keeps its reports bounded: a host inventing model ids is reported again, never grows the set', () => {
    const { r, events } = resolver({ onEvent: () => {} });
    for (let i = 0; i < 200; i++) r.window('s', `invented-${i}`, undefined);
    expect(events).toHaveLength(200);
    r.window('s', 'invented-199', undefined);
    expect(events).toHaveLength(200);
  });
});

describe('CallResolver.learn', () => {
  it('lowers the model’s window to the limit a provider named, with an event', () => {
    const { r, events } = resolver({ onEvent: () => {} });
    expect(r.learn('s', 'mystery', 6_000, undefined)).toBe(true);
    expect(r.window('s', 'mystery', undefined)).toBe(6_000);
    expect(r.window('s', 'other', undefined)).toBe(32_000);
    expect(events.filter((e) => e.type === 'window-learned')).toEqual([
      { type: 'window-learned', sessionId: 's', modelId: 'mystery', contextWindow: 6_000, previous: 32_000 },
    ]);
  });

  it('wins over the option, the host and the registry, and only ever lowers', () => {
    const { r } = resolver({ models: { 'gpt-4o': 64_000 } });
    expect(r.learn('s', 'gpt-4o', 50_000, undefined)).toBe(true);
    expect(r.window('s', 'gpt-4o', 300_000)).toBe(50_000);
    expect(r.learn('s', 'gpt-4o', 60_000, undefined)).toBe(false);
    expect(r.window('s', 'gpt-4o', undefined)).toBe(50_000);
    const option = resolver({ contextWindow: 100_000 }).r;
    option.learn('s', 'x', 20_000, undefined);
    expect(option.window('s', 'x', undefined)).toBe(20_000);
  });

  it.each([0, 999, 1.5e3 + 0.5, Number.NaN, Number.POSITIVE_INFINITY])('ignores a limit of %d', (limit) => {
    const { r } = resolver({ contextWindow: 100_000 });
    expect(r.learn('s', 'x', limit, undefined)).toBe(false);
    expect(r.window('s', 'x', undefined)).toBe(100_000);
  });

  it('keeps at most 256 models, forgetting the oldest', () => {
    const { r } = resolver({ contextWindow: 100_000 });
    for (let i = 0; i < 300; i++) r.learn('s', `m-${i}`, 10_000, undefined);
    expect(r.window('s', 'm-0', undefined)).toBe(100_000);
    expect(r.window('s', 'm-299', undefined)).toBe(10_000);
    expect(r.window('s', 'm-44', undefined)).toBe(10_000);
  });
});

describe('CallResolver.threshold', () => {
  it('is the window less the buffer', () => {
    expect(resolver().r.threshold('s', 32_000)).toBe(25_600);
    expect(resolver().r.threshold('s', 200_000)).toBe(180_000);
    expect(resolver({ buffer: 10_000 }).r.threshold('s', 32_000)).toBe(22_000);
    expect(resolver({ buffer: 0.5 }).r.threshold('s', 32_000)).toBe(16_000);
  });

  it('keeps the default fraction when a fixed buffer leaves no room in the window, with a warning', () => {
    const { r, events } = resolver({ buffer: 50_000 });
    expect(r.threshold('s', 32_000)).toBe(25_600);
    expect(events).toMatchObject([{ type: 'config-warning', sessionId: 's', field: 'buffer' }]);
    expect(r.threshold('s', 50_000)).toBe(40_000);
    // A window the buffer leaves room in is not warned about.
    expect(r.threshold('s', 128_000)).toBe(78_000);
    expect(events.some((e) => (e as { message: string }).message.includes('128000'))).toBe(false);
  });
});

describe('CallResolver.textMeasure', () => {
  it('counts characters when exact counting is off, or for models without a public tokenizer', async () => {
    expect(await resolver({ exactCounting: 'off' }).r.textMeasure('s', 'gpt-4o')).toBe(CHARACTER_MEASURE);
    expect(await resolver().r.textMeasure('s', 'claude-sonnet-4-5')).toBe(CHARACTER_MEASURE);
    expect(await resolver().r.textMeasure('s', undefined)).toBe(CHARACTER_MEASURE);
  });

  it('counts OpenAI models with their own encoding, as 4 × tokens', async () => {
    const m = await resolver().r.textMeasure('s', 'gpt-4o');
    expect(m.key).toBe('o200k_base');
    expect(m.length('hello world')).toBe(8);
  });

  it('falls back to characters when the tokenizer cannot load, reported once', async () => {
    const { r, events } = resolver({ exactCounting: 'cl100k_base' });
    expect(await r.textMeasure('s', 'gpt-4o')).toBe(CHARACTER_MEASURE);
    expect(await r.textMeasure('s', 'gpt-4o')).toBe(CHARACTER_MEASURE);
    expect(events).toMatchObject([{ type: 'config-warning', field: 'exactCounting' }]);
    expect((events[0] as { message: string }).message).toContain('cl100k_base');
  });
});

describe('CallResolver.call', () => {
  it('gives a call of an unknown model the fallback window and its threshold', async () => {
    const { r } = resolver({ onEvent: () => {} });
    const call = await r.call(new PromptMeasurer(10), { sessionId: 's', modelId: 'mystery', messages: [user('hi')] });
    expect(call.contextWindow).toBe(32_000);
    expect(call.threshold).toBe(25_600);
  });

  it('measures the host’s messages once, with the tools in the prompt’s measure only', async () => {
    const { r } = resolver({ contextWindow: 10_000 });
    const messages = [user('hello'), user('world!')];
    const tools = [{ name: 'read_file', description: 'Reads', inputSchema: {} }];
    const call = await r.call(new PromptMeasurer(10), { sessionId: 's', messages, tools });
    expect(call.threshold).toBe(8_000);
    expect(call.measureHost()).toBe(call.measureHost());
    expect(call.measureHost().toolChars).toBe(0);
    expect(call.measure(call.hostMessages.slice()).toolChars).toBeGreaterThan(0);
    expect(call.hashOf(0)).toBe(call.measureHost().entries[0]?.hash);
    expect(call.hashOf(0)).not.toBe(call.hashOf(1));
    expect(call.hashOf(9)).toBe(0);
  });
});
