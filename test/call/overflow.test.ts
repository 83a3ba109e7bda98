// The limit a provider names in its context-length rejection (windowFromError), read from the real
// wordings and error shapes of each provider: the AI SDK's APICallError (`responseBody` as text,
// `data` parsed), the provider SDKs' APIError (`error` parsed), LangChain's wrapper with `cause`.
import { describe, expect, it } from 'vitest';
import { isContextLengthError, windowFromError } from '../../src/call/overflow.ts';

/** What the AI SDK throws for a non-2xx answer: the body as text and parsed. */
function apiCallError(status: number, body: unknown): Error {
  const error = new Error(typeof body === 'object' ? JSON.stringify(body) : String(body));
  Object.assign(error, { name: 'AI_APICallError', statusCode: status, responseBody: JSON.stringify(body), data: body });
  return error;
}

const openaiBody = (message: string) => ({
  error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
});

describe('windowFromError', () => {
  it.each([
    [
      'OpenAI Chat Completions (messages)',
      apiCallError(
        400,
        openaiBody(
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens. Please reduce the length of the messages.",
        ),
      ),
      128_000,
    ],
    [
      'OpenAI, DeepSeek, vLLM (with the completion counted)',
      apiCallError(
        400,
        openaiBody(
          "This model's maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 in the completion). Please reduce the length of the messages or completion.",
        ),
      ),
      7_680,
    ],
    [
      'OpenAI, legacy completions',
      new Error(
        "This model's maximum context length is 4097 tokens, however you requested 4569 tokens (3545 in your prompt; 1024 for the completion). Please reduce your prompt; or completion length.",
      ),
      3_073,
    ],
    [
      'Groq',
      apiCallError(400, {
        error: {
          message:
            "This model's maximum context length is 131,072 tokens. However, your messages resulted in 140,018 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
        },
      }),
      131_072,
    ],
    [
      'Anthropic',
      apiCallError(400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 202128 tokens > 200000 maximum' },
        request_id: 'req_011',
      }),
      200_000,
    ],
    [
      'Anthropic (max_tokens does not fit)',
      apiCallError(400, {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again',
        },
      }),
      136_000,
    ],
    [
      'Google Gemini',
      apiCallError(400, {
        error: {
          code: 400,
          message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
          status: 'INVALID_ARGUMENT',
        },
      }),
      1_048_576,
    ],
    ['Google Vertex', new Error('The input token count is 1200000 but model only supports up to 1048576'), 1_048_576],
    [
      'xAI',
      apiCallError(400, {
        code: 'Client specified an invalid argument',
        error: "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
      }),
      131_072,
    ],
    [
      'Mistral',
      apiCallError(400, {
        object: 'error',
        message:
          'Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length',
        type: 'invalid_request_message_error',
        code: '3051',
      }),
      32_768,
    ],
    [
      'OpenRouter',
      apiCallError(400, {
        error: {
          message:
            'This endpoint\'s maximum context length is 163840 tokens. However, you requested about 170000 tokens (166000 of text input, 4000 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
          code: 400,
        },
      }),
      159_840,
    ],
    [
      'llama.cpp server',
      apiCallError(400, {
        error: {
          code: 400,
          message: 'the request exceeds the available context size, try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 14429,
          n_ctx: 8192,
        },
      }),
      8_192,
    ],
    [
      'LM Studio',
      new Error(
        'Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded with context length of only 32768 tokens, which is not enough.',
      ),
      32_768,
    ],
    [
      'Hugging Face TGI',
      new Error(
        'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`',
      ),
      3_596,
    ],
    ['Moonshot', new Error('Invalid request: Your request exceeded model token limit: 262144'), 262_144],
    [
      'LangChain wrapper',
      Object.assign(new Error('Context overflow'), {
        name: 'ContextOverflowError',
        cause: new Error('prompt is too long: 210000 tokens > 200000 maximum'),
      }),
      200_000,
    ],
  ])('%s', (_name, error, expected) => {
    expect(isContextLengthError(error)).toBe(true);
    expect(windowFromError(error)).toBe(expected);
  });

  it.each([
    [
      'OpenAI Responses, which names no limit',
      new Error('Your input exceeds the context window of this model. Please adjust your input and try again.'),
    ],
    ['Bedrock, which names no limit', new Error('Input is too long for requested model.')],
    [
      'a rate limit that names a number',
      new Error('Request too large for model on tokens per minute (TPM): Limit 6000, Requested 14810'),
    ],
    ['anything else', new Error('maximum 200000 of something went wrong')],
  ])('is undefined for %s', (_name, error) => {
    expect(windowFromError(error)).toBeUndefined();
  });
});
