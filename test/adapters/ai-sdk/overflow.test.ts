// The context-length rejections the adapter recovers from, as each provider words them, and the
// prompt size it reads from them.
import { APICallError } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { isContextLengthError, promptTokensFromError } from '../../../adapters/ai-sdk/overflow.ts';

const apiError = (message: string, responseBody?: string) =>
  new APICallError({ message, url: 'https://api.example.com', requestBodyValues: {}, statusCode: 400, ...(responseBody ? { responseBody } : {}), isRetryable: false });

describe('context-length errors', () => {
  it.each([
    ['OpenAI', "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", 130_512],
    ['OpenAI (with completion)', "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens (8600 in the messages, 500 in the completion).", 8_600],
    ['DeepSeek', "This model's maximum context length is 65536 tokens. However, you requested 70211 tokens (70211 in the messages, 0 in the completion).", 70_211],
    ['Anthropic', 'prompt is too long: 210345 tokens > 200000 maximum', 210_345],
    ['Google', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).', 1_200_000],
    ['Mistral', 'Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length', 40_000],
    ['OpenRouter', "This endpoint's maximum context length is 131072 tokens. However, you requested about 140,018 tokens (139,018 of text input, 1,000 in the output).", 140_018],
    ['Groq', 'Please reduce the length of the messages or completion.', undefined],
  ])('recognizes %s and reads the prompt size', (_provider, message, tokens) => {
    const error = apiError(message);
    expect(isContextLengthError(error)).toBe(true);
    expect(promptTokensFromError(error)).toBe(tokens);
  });

  it('reads the response body and causes too', () => {
    const error = apiError('Bad Request', JSON.stringify({ error: { code: 'context_length_exceeded', message: 'Your messages resulted in 9000 tokens' } }));
    expect(isContextLengthError(error)).toBe(true);
    expect(promptTokensFromError(new Error('wrapped', { cause: error }))).toBe(9_000);
  });

  it('leaves other errors alone', () => {
    for (const message of ['Rate limit reached for requests', 'Invalid API key', 'The server had an error', 'max_tokens must be at most 4096']) {
      expect(isContextLengthError(apiError(message))).toBe(false);
    }
    expect(isContextLengthError(undefined)).toBe(false);
    expect(promptTokensFromError(new Error('no numbers here'))).toBeUndefined();
  });
});
