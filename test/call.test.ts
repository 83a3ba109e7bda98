// What one call is measured against (call.ts): the window's precedence (the option, the host's
// window of at least 1,000 tokens, the registry), a configuration error once per model, the
// threshold when the buffer leaves no room, and the text measure with its fallback to characters.
import { describe, expect, it, vi } from 'vitest';
import { CallResolver } from '../src/call.ts';
import { resolveOptions, type ContextGuardOptions } from '../src/config.ts';
import type { ContextGuardEvent } from '../src/events.ts';
import { CHARACTER_MEASURE } from '../src/tokens/exact.ts';
import { PromptMeasurer } from '../src/tokens/prompt-measure.ts';
import { user } from './helpers.ts';

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

  it('reports an unknown model once, and each unknown model', () => {
    const { r, events } = resolver();
    expect(r.window('s', 'mystery-1', undefined)).toBeUndefined();
    expect(r.window('t', 'mystery-1', 500)).toBeUndefined();
    expect(r.window('s', 'mystery-2', undefined)).toBeUndefined();
    expect(events).toMatchObject([
      { type: 'config-error', sessionId: 's', field: 'contextWindow', modelId: 'mystery-1' },
      { type: 'config-error', sessionId: 's', field: 'contextWindow', modelId: 'mystery-2' },
    ]);
    expect((events[0] as { message: string }).message).toContain('"mystery-1"');
  });

  it('reports a call without a model id or a window once', () => {
    const { r, events } = resolver();
    expect(r.window('s', undefined, undefined)).toBeUndefined();
    expect(r.window('s', undefined, undefined)).toBeUndefined();
    expect(events).toHaveLength(1);
    expect(events[0]).not.toHaveProperty('modelId');
    expect((events[0] as { message: string }).message).toContain('no `modelId`');
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
  it('gives a call without a window an infinite threshold', async () => {
    const { r } = resolver();
    const call = await r.call(new PromptMeasurer(10), { sessionId: 's', modelId: 'mystery', messages: [user('hi')] });
    expect(call.contextWindow).toBeUndefined();
    expect(call.threshold).toBe(Number.POSITIVE_INFINITY);
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
