import { describe, expect, it } from 'vitest';
import { addUsage, usageFromAiSdk, usageFromLLMOutput, usageFromMessage } from '../../../adapters/shared/usage.ts';

const throwing = (key: string) =>
  Object.defineProperty({}, key, {
    get() {
      throw new Error('getter');
    },
  });

describe('usageFromAiSdk', () => {
  it('V3/V4 usage: the total input tokens (cached included), else the sum of the parts', () => {
    expect(
      usageFromAiSdk({
        inputTokens: { total: 1500, noCache: 200, cacheRead: 1300 },
        outputTokens: { total: 5, text: 5 },
      }),
    ).toEqual({
      inputTokens: 1500,
      outputTokens: 5,
    });
    expect(usageFromAiSdk({ inputTokens: { noCache: 900, cacheRead: 300, cacheWrite: 100 } })).toEqual({
      inputTokens: 1300,
    });
    expect(usageFromAiSdk({ inputTokens: { noCache: 900 } })).toEqual({ inputTokens: 900 });
  });

  it('older shapes: plain numbers', () => {
    expect(usageFromAiSdk({ inputTokens: 700, outputTokens: 20 })).toEqual({ inputTokens: 700, outputTokens: 20 });
  });

  it('no input count, no usage; a getter that throws, no usage', () => {
    for (const value of [
      undefined,
      null,
      3,
      {},
      { inputTokens: {} },
      { inputTokens: { total: '10' } },
      { outputTokens: 5 },
      throwing('inputTokens'),
    ]) {
      expect(usageFromAiSdk(value), JSON.stringify(value)).toBeUndefined();
    }
    expect(usageFromAiSdk({ inputTokens: 10, outputTokens: throwing('total') })).toBeUndefined();
  });
});

describe('usageFromMessage', () => {
  it("LangChain's usage_metadata: input_tokens (cached included) and output_tokens", () => {
    expect(
      usageFromMessage({
        usage_metadata: {
          input_tokens: 1200,
          output_tokens: 30,
          total_tokens: 1230,
          input_token_details: { cache_read: 1000 },
        },
      }),
    ).toEqual({
      inputTokens: 1200,
      outputTokens: 30,
    });
    expect(usageFromMessage({ usage_metadata: { input_tokens: 12 } })).toEqual({ inputTokens: 12 });
  });

  it('nothing without a numeric input_tokens, and never throws', () => {
    for (const value of [
      undefined,
      null,
      'text',
      {},
      { usage_metadata: null },
      { usage_metadata: { output_tokens: 3 } },
      throwing('usage_metadata'),
    ]) {
      expect(usageFromMessage(value)).toBeUndefined();
    }
  });
});

describe('usageFromLLMOutput', () => {
  it('the OpenAI-style run totals of older integrations', () => {
    expect(usageFromLLMOutput({ tokenUsage: { promptTokens: 900, completionTokens: 12, totalTokens: 912 } })).toEqual({
      inputTokens: 900,
      outputTokens: 12,
    });
    expect(usageFromLLMOutput({ tokenUsage: { completionTokens: 12 } })).toBeUndefined();
    expect(usageFromLLMOutput(undefined)).toBeUndefined();
    expect(usageFromLLMOutput(throwing('tokenUsage'))).toBeUndefined();
  });
});

describe('addUsage', () => {
  it('sums the parts of a streamed call (input with the first chunk, output with the last)', () => {
    let total = addUsage(undefined, { inputTokens: 1000, outputTokens: 1 });
    total = addUsage(total, undefined);
    total = addUsage(total, { inputTokens: 0, outputTokens: 40 });
    expect(total).toEqual({ inputTokens: 1000, outputTokens: 41 });
  });

  it('has no output count unless a part had one', () => {
    expect(addUsage({ inputTokens: 5 }, { inputTokens: 7 })).toEqual({ inputTokens: 12 });
    expect(addUsage({ inputTokens: 5 }, { inputTokens: 0, outputTokens: 3 })).toEqual({
      inputTokens: 5,
      outputTokens: 3,
    });
    expect(addUsage(undefined, undefined)).toBeUndefined();
  });
});
