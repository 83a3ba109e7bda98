// Judging a provider's usage report before it becomes a real count (call/usage.ts): its shape, then
// whether the input count is plausible for the request it answers. With a 100k window, a request
// of 40,000 characters (10,000 heuristic tokens) plausibly costs 1,000 to 100,000 tokens.
import { describe, expect, it } from 'vitest';
import type { ModelUsage } from '../../src/api.ts';
import type { ResolvedCalibration } from '../../src/config.ts';
import type { PendingRequest } from '../../src/state/session.ts';
import { judgeUsage, usageShapeProblem } from '../../src/call/usage.ts';

const C: ResolvedCalibration = { min: 1, max: 5, default: 1.5 };
const WINDOW = 100_000;
const PENDING: PendingRequest = {
  chars: 40_000,
  mediaTokens: 0,
  toolChars: 0,
  prompt: { messages: 3, chars: 40_000, hash: 1 },
  extendsAnchor: false,
  estimatedTokens: 15_000,
};

const judge = (usage: ModelUsage) => judgeUsage(usage, PENDING, C, WINDOW);
const judgeWithoutWindow = (usage: ModelUsage) => judgeUsage(usage, PENDING, C, undefined);

describe('usageShapeProblem', () => {
  it.each([undefined, null, 42, 'usage'])('reports %j as missing', (usage) => {
    expect(usageShapeProblem(usage as ModelUsage | undefined)).toBe('missing');
  });

  it.each([
    ['zero', { inputTokens: 0 }],
    ['negative', { inputTokens: -1 }],
    ['NaN', { inputTokens: Number.NaN }],
    ['Infinity', { inputTokens: Number.POSITIVE_INFINITY }],
    ['a string', { inputTokens: '100' }],
    ['absent', { outputTokens: 10 }],
    ['a bad cache read', { inputTokens: 100, cacheReadInputTokens: Number.NaN }],
    ['a negative cache write', { inputTokens: 100, cacheWriteInputTokens: -5 }],
  ])('reports an input count that is %s as invalid', (_name, usage) => {
    expect(usageShapeProblem(usage as unknown as ModelUsage)).toBe('invalid-input-tokens');
  });

  it('accepts a positive count, with or without cache counts', () => {
    expect(usageShapeProblem({ inputTokens: 1 })).toBeUndefined();
    expect(usageShapeProblem({ inputTokens: 100, cacheReadInputTokens: 0, cacheWriteInputTokens: 20 })).toBeUndefined();
  });

  it('leaves the output count to judgeUsage', () => {
    expect(usageShapeProblem({ inputTokens: 100, outputTokens: Number.NaN })).toBeUndefined();
  });
});

describe('judgeUsage', () => {
  it('accepts a plausible count', () => {
    expect(judge({ inputTokens: 15_000, outputTokens: 200 })).toEqual({
      ok: true,
      inputTokens: 15_000,
      outputTokens: 200,
      outputIgnored: false,
    });
  });

  it('adds cached tokens reported apart', () => {
    const v = judge({ inputTokens: 1_000, cacheReadInputTokens: 12_000, cacheWriteInputTokens: 2_000 });
    expect(v).toMatchObject({ ok: true, inputTokens: 15_000 });
  });

  it('rejects a count too high for the request (a sum over steps), with the plausible range', () => {
    expect(judge({ inputTokens: 100_001 })).toEqual({
      ok: false,
      reason: 'implausible',
      plausible: { min: 200, max: 100_000 },
    });
    expect(judge({ inputTokens: 100_000 }).ok).toBe(true);
  });

  it('accepts any count within the window, however far above the visible text (a hidden system prompt)', () => {
    const small: PendingRequest = { ...PENDING, chars: 2_000, prompt: { messages: 2, chars: 2_000, hash: 2 } };
    // 500 heuristic tokens of visible text, 99,000 counted: tool schemas or a system prompt kept elsewhere.
    expect(judgeUsage({ inputTokens: 99_000 }, small, C, WINDOW)).toMatchObject({ ok: true, inputTokens: 99_000 });
    expect(judgeUsage({ inputTokens: 26_000 }, small, C, 32_000)).toMatchObject({ ok: true, inputTokens: 26_000 });
    // Over the window, only what the text with an invisible part could cost (a window set below the model's).
    expect(judgeUsage({ inputTokens: 40_000 }, small, C, 32_000)).toMatchObject({ ok: false, reason: 'implausible' });
  });

  it('rejects an absurdly low count for the request (1 token for a long prompt)', () => {
    expect(judge({ inputTokens: 199 })).toMatchObject({ ok: false, reason: 'implausible' });
    expect(judge({ inputTokens: 200 }).ok).toBe(true);
  });

  it('judges the total: cache counts can make a low input count plausible, or a plausible one too high', () => {
    expect(judge({ inputTokens: 500, cacheReadInputTokens: 9_500 }).ok).toBe(true);
    expect(judge({ inputTokens: 50_000, cacheReadInputTokens: 60_000 })).toMatchObject({
      ok: false,
      reason: 'implausible',
    });
  });

  it('rejects finite counts whose sum is Infinity', () => {
    const v = judgeWithoutWindow({
      inputTokens: 1_000,
      cacheReadInputTokens: Number.MAX_VALUE,
      cacheWriteInputTokens: Number.MAX_VALUE,
    });
    expect(v).toMatchObject({ ok: false, reason: 'implausible' });
  });

  it('drops an implausible output count alone and keeps the input count', () => {
    expect(judge({ inputTokens: 15_000, outputTokens: 2 * WINDOW + 1 })).toEqual({
      ok: true,
      inputTokens: 15_000,
      outputTokens: undefined,
      outputIgnored: true,
    });
    expect(judge({ inputTokens: 15_000, outputTokens: 2 * WINDOW })).toMatchObject({
      outputTokens: 2 * WINDOW,
      outputIgnored: false,
    });
  });

  it.each([Number.NaN, -1, Number.POSITIVE_INFINITY, '12'])('drops an output count of %j', (outputTokens) => {
    const v = judge({ inputTokens: 15_000, outputTokens: outputTokens as number });
    expect(v).toMatchObject({ ok: true, inputTokens: 15_000, outputTokens: undefined, outputIgnored: true });
  });

  it('accepts a missing output count without flagging it', () => {
    expect(judge({ inputTokens: 15_000 })).toEqual({
      ok: true,
      inputTokens: 15_000,
      outputTokens: undefined,
      outputIgnored: false,
    });
  });

  it('allows output up to 1M without a window', () => {
    expect(judgeWithoutWindow({ inputTokens: 15_000, outputTokens: 1_000_000 })).toMatchObject({
      outputIgnored: false,
    });
    expect(judgeWithoutWindow({ inputTokens: 15_000, outputTokens: 1_000_001 })).toMatchObject({ outputIgnored: true });
  });
});
