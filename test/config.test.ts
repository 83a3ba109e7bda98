import { describe, expect, it } from 'vitest';
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

describe('archive defaults', () => {
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
