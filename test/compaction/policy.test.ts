// The compaction policy (compaction/policy.ts): the settings of one compaction for its window,
// from the resolved options, and the depth of the cut paced by the session's growth.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactionSettings } from '../../src/compaction/policy.ts';
import { resolveOptions } from '../../src/config.ts';
import { thresholdFor } from '../../src/index.ts';

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
