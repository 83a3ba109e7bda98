import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactionSettings } from '../src/compaction/policy.ts';
import { resolveOptions } from '../src/config.ts';
import { bufferTokens, ContextGuardConfigError, createContextGuard, thresholdFor } from '../src/index.ts';

function configError(options: unknown): ContextGuardConfigError {
  try {
    createContextGuard(options as never);
  } catch (error) {
    expect(error).toBeInstanceOf(ContextGuardConfigError);
    return error as ContextGuardConfigError;
  }
  throw new Error('expected a ContextGuardConfigError');
}

describe('buffer and threshold (the seed numbers)', () => {
  it.each([
    [8_000, 1_600, 6_400],
    [128_000, 25_600, 102_400],
    [199_999, 39_999.8, 159_999.2],
    [200_000, 20_000, 180_000],
    [1_000_000, 20_000, 980_000],
  ])('window %i keeps %d tokens free, threshold %d', (window, buffer, threshold) => {
    expect(bufferTokens(window, undefined)).toBeCloseTo(buffer, 6);
    expect(thresholdFor(window, undefined)).toBeCloseTo(threshold, 6);
  });

  it('takes a user buffer as tokens from 1 up and as a fraction below 1', () => {
    expect(bufferTokens(100_000, 5_000)).toBe(5_000);
    expect(bufferTokens(100_000, 0.1)).toBeCloseTo(10_000, 6);
    expect(bufferTokens(1_000_000, 0.5)).toBeCloseTo(500_000, 6);
  });
});

describe('configuration errors', () => {
  it.each([
    [{ contextWindow: 0 }, 'contextWindow'],
    [{ contextWindow: 1 }, 'contextWindow'],
    [{ contextWindow: 1.5 }, 'contextWindow'],
    [{ summarizerContextWindow: 500 }, 'summarizerContextWindow'],
    [{ compactionTimeoutMs: 0 }, 'compactionTimeoutMs'],
    [{ contextWindow: -1 }, 'contextWindow'],
    [{ contextWindow: 'big' }, 'contextWindow'],
    [{ contextWindow: Number.NaN }, 'contextWindow'],
    [{ contextWindow: Number.POSITIVE_INFINITY }, 'contextWindow'],
    [{ fallbackContextWindow: 500 }, 'fallbackContextWindow'],
    [{ fallbackContextWindow: '32k' }, 'fallbackContextWindow'],
    [{ fallbackContextWindow: Number.NaN }, 'fallbackContextWindow'],
    [{ buffer: -5 }, 'buffer'],
    [{ warnAt: 1.5 }, 'warnAt'],
    [{ warnAt: 0 }, 'warnAt'],
    [{ calibration: { min: 0 } }, 'calibration.min'],
    [{ calibration: { max: 'x' } }, 'calibration.max'],
    [{ calibration: { min: 3, max: 2 } }, 'calibration.min'],
    [{ calibration: { default: 9 } }, 'calibration.default'],
    [{ calibration: { mid: 1 } }, 'calibration.mid'],
    [{ maxSessions: 0 }, 'maxSessions'],
    [{ exactCounting: 'p50k' }, 'exactCounting'],
    [{ maxSessions: 2.5 }, 'maxSessions'],
    [{ store: {} }, 'store'],
    [{ onEvent: 'log' }, 'onEvent'],
    [{ models: { 'my-model': -3 } }, 'models.my-model'],
    [{ contextWindow: 8_000, buffer: 9_000 }, 'buffer'],
    [{ archive: true }, 'archive'],
    [{ archive: { maxChars: 0 } }, 'archive.maxChars'],
    [{ archive: { maxChars: 1.5 } }, 'archive.maxChars'],
    [{ archive: { recallMaxChars: 10 } }, 'archive.recallMaxChars'],
    [{ archive: { indexChars: 0 } }, 'archive.indexChars'],
    [{ archive: { max: 1 } }, 'archive.max'],
    [{ keepUserMessagesTokens: -1 }, 'keepUserMessagesTokens'],
    [{ keepUserMessagesTokens: Number.NaN }, 'keepUserMessagesTokens'],
    [{ summarizerInputTokens: 0 }, 'summarizerInputTokens'],
    [{ summarizerInputTokens: Number.POSITIVE_INFINITY }, 'summarizerInputTokens'],
    [{ clipArchive: { first: 1 } }, 'clipArchive.last'],
    [{ clipArchive: { first: -1, last: 2 } }, 'clipArchive.first'],
    [{ clipArchive: { first: 1, last: 0 } }, 'clipArchive.last'],
    [{ clipArchive: { first: 1, last: 2, buffer: 0.5 } }, 'clipArchive.buffer'],
    [{ clipArchive: true }, 'clipArchive'],
    [{ prune: { maxToolResultTokens: -1 } }, 'prune.maxToolResultTokens'],
    [{ fileOps: { readTools: 'read' } }, 'fileOps.readTools'],
  ])('%j names `%s`', (options, field) => {
    const error = configError(options);
    expect(error.name).toBe('ContextGuardConfigError');
    expect(error.field).toBe(field);
    expect(error.message).toContain(`\`${field}\``);
  });

  it('rejects unknown option keys by name', () => {
    const error = configError({ contextWindow: 8_000, contextWindo: 8_000 });
    expect(error.field).toBe('contextWindo');
    expect(error.message).toMatch(/unknown option `contextWindo`/);
  });

  it('rejects a non-object', () => {
    expect(configError(42).field).toBe('');
  });

  it('says what was expected', () => {
    expect(configError({ contextWindow: 'big' }).message).toMatch(/number of tokens, at least 1000/);
    expect(configError({ contextWindow: 0.5 }).message).toMatch(/at least 1000/);
    expect(configError({ warnAt: 2 }).message).toMatch(/between 0/);
  });

  it('accepts no options at all and fills in the defaults', () => {
    const guard = createContextGuard();
    expect(guard.options.calibration).toEqual({ min: 1, max: 5, default: 1.5 });
    expect(guard.options.warnAt).toBe(0.7);
    expect(guard.options.maxSessions).toBe(10_000);
  });
});

describe('lossless compaction defaults', () => {
  const settings = (window: number, options: Record<string, unknown> = {}) =>
    compactionSettings(resolveOptions(options), window, thresholdFor(window, undefined));

  it.each([
    [4_000, 50],
    [16_000, 800],
    [32_000, 3_200],
    [128_000, 12_800],
    [200_000, 20_000],
    [1_000_000, 20_000],
  ])('a %i-token window carries over %i tokens of recent user messages', (window, tokens) => {
    expect(settings(window).keepUserMessagesTokens).toBeCloseTo(tokens, 6);
  });

  it('a set carry-over budget is kept within half the target; 0 turns it off', () => {
    expect(settings(128_000, { keepUserMessagesTokens: 5_000 }).keepUserMessagesTokens).toBe(5_000);
    expect(settings(128_000, { keepUserMessagesTokens: 0.5 }).keepUserMessagesTokens).toBe(16_000);
    expect(settings(128_000, { keepUserMessagesTokens: 0 }).keepUserMessagesTokens).toBe(0);
  });

  it('the summarizer reads 4 × the summary budget by default; summarizerInputTokens takes tokens or a window share', () => {
    expect(settings(128_000).summarizerInputTokens).toBe(4 * 12_800);
    expect(settings(128_000, { maxSummaryTokens: 1_000 }).summarizerInputTokens).toBe(4_000);
    expect(settings(128_000, { summarizerInputTokens: 100_000 }).summarizerInputTokens).toBe(100_000);
    expect(settings(128_000, { summarizerInputTokens: 0.5 }).summarizerInputTokens).toBe(64_000);
  });

  it('archives by default, 2,000,000 characters per session, recall answers of 16,000', () => {
    expect(resolveOptions({}).archive).toEqual({
      enabled: true,
      maxChars: 2_000_000,
      maxTotalChars: 100_000_000,
      recallMaxChars: 16_000,
      indexChars: 10_000_000,
    });
    expect(resolveOptions({ archive: false }).archive.enabled).toBe(false);
    expect(resolveOptions({ clipArchive: { first: 1, last: 3 } }).clipArchive).toEqual({
      first: 1,
      last: 3,
      buffer: 2,
    });
  });
});

describe('compaction depth paced by growth', () => {
  // With the target at half the window, so that pacing has room to go deeper.
  const at = (growth: number, options: Record<string, unknown> = {}) =>
    compactionSettings(resolveOptions({ target: 0.5, ...options }), 200_000, thresholdFor(200_000, undefined), growth)
      .target;

  it('cuts deep enough that the next compaction is at least 5 calls away, never below a fifth of the window', () => {
    expect(at(0)).toBe(100_000);
    expect(at(10_000)).toBe(100_000); // 180k − 5 × 10k = 130k: the configured target is lower
    expect(at(20_000)).toBe(80_000);
    expect(at(50_000)).toBe(40_000); // 180k − 250k: the floor, a fifth of the window
    expect(at(50_000, { cost: { minCallsBetween: 0 } })).toBe(100_000);
    expect(at(20_000, { cost: { minCallsBetween: 2 } })).toBe(100_000);
  });

  it('never raises a target set below the floor', () => {
    expect(at(50_000, { target: 0.1 })).toBe(20_000);
  });

  it('never goes below a fifth of the window (or the target set, when lower), nor above the target, at any pace', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 4_000, max: 2_000_000 }),
        fc.double({ min: 0.01, max: 0.7, noNaN: true }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.integer({ min: 0, max: 50 }),
        (window, target, growth, minCallsBetween) => {
          const configured = Math.min(target * window, thresholdFor(window, undefined) * 0.9);
          const paced = compactionSettings(
            resolveOptions({ target, cost: { minCallsBetween } }),
            window,
            thresholdFor(window, undefined),
            growth,
          ).target;
          expect(paced).toBeLessThanOrEqual(configured);
          expect(paced).toBeGreaterThanOrEqual(Math.min(configured, 0.2 * window));
        },
      ),
    );
  });
});
