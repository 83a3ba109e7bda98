// The context-length rejections the adapters recover from, as each provider words them and as each
// client library wraps them, and the prompt size read from them. Matching is bounded: a capped
// prefix of each text, a bounded walk over linked errors, cycle-safe, linear patterns.
import Anthropic from '@anthropic-ai/sdk';
import { APICallError } from '@ai-sdk/provider';
import { ContextOverflowError } from '@langchain/core/errors';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { isContextLengthError, promptTokensFromError } from '../../../adapters/ai-sdk/overflow.ts';

const apiError = (message: string, responseBody?: string) =>
  new APICallError({
    message,
    url: 'https://api.example.com',
    requestBodyValues: {},
    statusCode: 400,
    ...(responseBody ? { responseBody } : {}),
    isRetryable: false,
  });

describe('context-length errors: wordings and the prompt size they report', () => {
  it.each([
    [
      'OpenAI',
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
      130_512,
    ],
    // With tools, the total is the prompt (messages and function definitions), which is what the guard estimates.
    [
      'OpenAI (with tools)',
      "This model's maximum context length is 8192 tokens. However, your messages resulted in 12422 tokens (12308 in the messages, 114 in the functions). Please reduce the length of the messages or functions.",
      12_422,
    ],
    // "requested" counts max_tokens too: the prompt is every share but the completion's.
    [
      'OpenAI (with completion)',
      "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens (8600 in the messages, 500 in the completion).",
      8_600,
    ],
    [
      'OpenAI (legacy completions)',
      "This model's maximum context length is 4097 tokens, however you requested 4569 tokens (3545 in your prompt; 1024 for the completion). Please reduce your prompt; or completion length.",
      3_545,
    ],
    [
      'OpenAI (Responses)',
      'Your input exceeds the context window of this model. Please adjust your input and try again.',
      undefined,
    ],
    [
      'DeepSeek',
      "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
      122_942,
    ],
    ['Anthropic', 'prompt is too long: 210345 tokens > 200000 maximum', 210_345],
    [
      'Anthropic (with max_tokens)',
      'input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again',
      178_959,
    ],
    ['Google', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).', 1_200_000],
    ['Google (no count)', 'The input token count exceeds the maximum number of tokens allowed 1048576.', undefined],
    [
      'Google Vertex',
      'Unable to submit request because the input token count is 1251952 but model only supports up to 1048576. Reduce the input token count and try again.',
      1_251_952,
    ],
    ['Bedrock', 'The model returned the following errors: Input is too long for requested model.', undefined],
    [
      'Mistral',
      'Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length',
      40_000,
    ],
    ['Groq', 'Please reduce the length of the messages or completion.', undefined],
    [
      'OpenRouter',
      'This endpoint\'s maximum context length is 131072 tokens. However, you requested about 140,018 tokens (139,018 of text input, 1,000 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
      139_018,
    ],
    [
      'OpenRouter (with tools)',
      "This endpoint's maximum context length is 204800 tokens. However, you requested about 205432 tokens (81684 of text input, 3748 of tool input, 120000 in the output).",
      85_432,
    ],
    ['xAI', "This model's maximum prompt length is 131072 but the request contains 136973 tokens.", 136_973],
    [
      'vLLM / TGI',
      'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 65537. Given: 79993 `inputs` tokens and 1024 `max_new_tokens`',
      79_993,
    ],
    ['llama.cpp', 'the request exceeds the available context size, try increasing it', undefined],
  ])('%s', (_provider, message, tokens) => {
    const error = apiError(message);
    expect(isContextLengthError(error)).toBe(true);
    expect(promptTokensFromError(error)).toBe(tokens);
  });

  it('reads the response body and causes too', () => {
    const error = apiError(
      'Bad Request',
      JSON.stringify({ error: { code: 'context_length_exceeded', message: 'Your messages resulted in 9000 tokens' } }),
    );
    expect(isContextLengthError(error)).toBe(true);
    expect(promptTokensFromError(new Error('wrapped', { cause: error }))).toBe(9_000);
  });

  it('leaves other errors alone, rate limits on tokens included', () => {
    for (const message of [
      'Rate limit reached for requests',
      'Invalid API key',
      'The server had an error',
      'max_tokens must be at most 4096',
      'Request too large for model `llama-3.3-70b-versatile` on tokens per minute (TPM): Limit 6000, Requested 14810, please reduce your message size and try again.',
      'This request would exceed the rate limit for your organization of 40,000 input tokens per minute.',
    ]) {
      expect(isContextLengthError(apiError(message)), message).toBe(false);
    }
    expect(isContextLengthError(undefined)).toBe(false);
    expect(isContextLengthError('prompt is too long: 5 tokens > 4 maximum')).toBe(true);
    expect(promptTokensFromError(new Error('no numbers here'))).toBeUndefined();
  });
});

describe('the shapes client libraries throw', () => {
  const openaiBody = {
    message:
      "This model's maximum context length is 8192 tokens. However, your messages resulted in 12422 tokens (12308 in the messages, 114 in the functions).",
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  };
  const anthropicBody = {
    type: 'error',
    error: { type: 'invalid_request_error', message: 'prompt is too long: 210345 tokens > 200000 maximum' },
  };

  it('the AI SDK: an APICallError whose message is generic and whose body says it', () => {
    const error = apiError('Bad Request', JSON.stringify({ error: openaiBody }));
    expect(isContextLengthError(error)).toBe(true);
    expect(promptTokensFromError(error)).toBe(12_422);
  });

  it('the AI SDK: an error part of an OpenAI Responses stream (response.failed)', () => {
    // What @ai-sdk/openai enqueues as `{ type: 'error', error }` for a failure after the response started.
    const frame = {
      type: 'response.failed',
      sequence_number: 3,
      response: {
        error: { code: 'context_length_exceeded', message: 'Your input exceeds the context window of this model.' },
      },
    };
    const error = {
      message: frame.response.error.message,
      type: 'response.failed',
      code: 'context_length_exceeded',
      statusCode: 400,
      isRetryable: false,
      data: frame,
    };
    expect(isContextLengthError(error)).toBe(true);
    expect(isContextLengthError({ type: 'response.failed', data: frame })).toBe(true);
  });

  it("openai's APIError and @langchain/openai's ContextOverflowError around it", () => {
    const sdk = new OpenAI.BadRequestError(400, openaiBody, undefined, new Headers());
    expect(isContextLengthError(sdk)).toBe(true);
    expect(promptTokensFromError(sdk)).toBe(12_422);
    const wrapped = ContextOverflowError.fromError(sdk);
    expect(isContextLengthError(wrapped)).toBe(true);
    expect(promptTokensFromError(wrapped)).toBe(12_422);
    // Only the code says it (a gateway that rewrote the message).
    expect(
      isContextLengthError({ status: 400, message: '400 Bad Request', error: { code: 'context_length_exceeded' } }),
    ).toBe(true);
  });

  it("@anthropic-ai/sdk's BadRequestError (message in error.error.message) and LangChain's wrapper", () => {
    const sdk = new Anthropic.BadRequestError(400, anthropicBody, undefined, new Headers());
    expect(isContextLengthError(sdk)).toBe(true);
    expect(promptTokensFromError(sdk)).toBe(210_345);
    const wrapped = Object.assign(ContextOverflowError.fromError(sdk), { lc_error_code: 'CONTEXT_OVERFLOW' });
    expect(isContextLengthError(wrapped)).toBe(true);
    expect(promptTokensFromError(wrapped)).toBe(210_345);
    // A generic message, the provider's text only in the parsed body.
    const bare = { status: 400, message: 'Bad Request', error: anthropicBody };
    expect(isContextLengthError(bare)).toBe(true);
    expect(promptTokensFromError(bare)).toBe(210_345);
  });

  it('a LangChain ContextOverflowError with no provider text (its default message)', () => {
    expect(isContextLengthError(new ContextOverflowError())).toBe(true);
  });

  it('bodies as strings or objects, and errors listed by an aggregate or a retry', () => {
    expect(isContextLengthError({ body: '{"error":{"message":"prompt is too long: 9 tokens > 8 maximum"}}' })).toBe(
      true,
    );
    expect(isContextLengthError({ body: { detail: 'Input is too long for requested model.' } })).toBe(true);
    expect(
      promptTokensFromError({
        message: 'Failed after 3 attempts',
        lastError: apiError('prompt is too long: 9001 tokens > 8192 maximum'),
      }),
    ).toBe(9_001);
    expect(
      isContextLengthError(
        new AggregateError([new Error('timeout'), apiError('maximum context length is 8192 tokens')]),
      ),
    ).toBe(true);
  });
});

describe('hostile errors: bounded and cycle-safe', () => {
  const overflowText =
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens.";

  it('a cause chain that loops is walked once', () => {
    const a = new Error('wrapper A') as Error & { cause?: unknown };
    const b = new Error('wrapper B', { cause: a });
    a.cause = b;
    expect(isContextLengthError(a)).toBe(false);
    expect(promptTokensFromError(a)).toBeUndefined();
    const c = new Error(overflowText, { cause: a });
    b.cause = c;
    expect(isContextLengthError(a)).toBe(true);
    expect(promptTokensFromError(a)).toBe(9_500);
    const self = { message: 'self', error: {} as Record<string, unknown>, data: {} };
    self.error['error'] = self;
    self.data = self;
    expect(isContextLengthError(self)).toBe(false);
  });

  it('a cause chain 10,000 links long', () => {
    let error: Error = apiError(overflowText);
    for (let i = 0; i < 10_000; i++) error = new Error(`wrapper ${i}`, { cause: error });
    expect(() => isContextLengthError(error)).not.toThrow();
    expect(() => promptTokensFromError(error)).not.toThrow();
  });

  it('throwing getters and revoked proxies', () => {
    const throwing = Object.defineProperty(new Error(overflowText), 'cause', {
      get() {
        throw new Error('no cause for you');
      },
    });
    expect(isContextLengthError(throwing)).toBe(true);
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(isContextLengthError(proxy)).toBe(false);
    expect(isContextLengthError({ message: 'wrapper', cause: proxy })).toBe(false);
    expect(promptTokensFromError({ message: overflowText, cause: proxy })).toBe(9_500);
  });

  it('reads a capped prefix of each text: a phrase 100 KB into a message is not seen', () => {
    const padded = 'x'.repeat(100_000) + overflowText;
    expect(isContextLengthError(new Error(padded))).toBe(false);
    // Within the prefix it is.
    expect(isContextLengthError(new Error(overflowText + 'x'.repeat(100_000)))).toBe(true);
  });

  // Each pattern's worst case, 1 MB of it: near-misses that make a backtracking pattern quadratic.
  // No timing assertion: a quadratic pattern would run for minutes and the test would time out.
  it.each([
    ['digits', '1'.repeat(1_000_000)],
    ['digit groups with commas', '1,000,'.repeat(170_000)],
    ['repeated prefixes', 'input token count '.repeat(60_000)],
    ['near-miss shares', 'you requested 5 tokens ('.repeat(45_000)],
    ['tokens > without maximum', 'tokens > 1 '.repeat(95_000)],
    ['requested about', 'requested about 1'.repeat(60_000)],
    ['resulted in', 'resulted in 1'.repeat(80_000)],
  ])('1 MB of %s', (_name, text) => {
    for (const error of [new Error(text), apiError('Bad Request', text), { message: 'x', error: { message: text } }]) {
      isContextLengthError(error);
      promptTokensFromError(error);
    }
  });
});
