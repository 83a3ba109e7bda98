import { describe, expect, it } from 'vitest';
import { MODEL_WINDOWS, normalizeModelId, resolveModelInfo } from '../../src/tokens/windows.ts';

const windowOf = (id: string, overrides?: Record<string, number>): number | undefined =>
  resolveModelInfo(id, overrides)?.contextWindow;

describe('normalizeModelId', () => {
  it.each([
    // Case and whitespace.
    ['  GPT-4o  ', 'gpt-4o'],
    // Gateway and OpenRouter routes.
    ['openai/gpt-4o', 'gpt-4o'],
    ['openrouter/anthropic/claude-3.5-sonnet', 'claude-3-5-sonnet'],
    ['anthropic/claude-3.7-sonnet:thinking', 'claude-3-7-sonnet'],
    ['meta-llama/llama-3.3-70b-instruct:free', 'llama-3.3-70b-instruct'],
    ['openai/gpt-4o-mini:nitro', 'gpt-4o-mini'],
    ['anthropic/claude-sonnet-4.5', 'claude-sonnet-4-5'],
    // Google resource names.
    ['models/gemini-2.5-pro', 'gemini-2.5-pro'],
    ['projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash-001', 'gemini-2.0-flash-001'],
    // Bedrock, with and without a cross-region profile.
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 'claude-3-5-sonnet'],
    ['us.anthropic.claude-sonnet-4-20250514-v1:0', 'claude-sonnet-4'],
    ['anthropic.claude-3-5-sonnet-20241022-v2:0', 'claude-3-5-sonnet'],
    ['anthropic.claude-3-haiku-20240307-v1:0:200k', 'claude-3-haiku'],
    ['anthropic.claude-v2', 'claude-2'],
    ['anthropic.claude-v2:1', 'claude-2-1'],
    ['anthropic.claude-instant-v1', 'claude-instant-1'],
    ['meta.llama3-1-70b-instruct-v1:0', 'llama-3.1-70b-instruct'],
    ['meta.llama3-70b-instruct-v1:0', 'llama-3-70b-instruct'],
    ['mistral.mistral-large-2407-v1:0', 'mistral-large-2407'],
    ['us.deepseek.r1-v1:0', 'deepseek-r1'],
    ['openai.gpt-oss-120b-1:0', 'gpt-oss-120b'],
    ['arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-opus-20240229-v1:0', 'claude-3-opus'],
    // Vertex AI version pins.
    ['claude-3-5-sonnet@20240620', 'claude-3-5-sonnet'],
    ['claude-3-5-sonnet-v2@20241022', 'claude-3-5-sonnet-v2'],
    ['mistral-large@2407', 'mistral-large'],
    // Groq, Together, Fireworks, Ollama.
    ['meta-llama/Llama-3.3-70B-Instruct-Turbo', 'llama-3.3-70b-instruct-turbo'],
    ['meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo', 'llama-3.1-8b-instruct-turbo'],
    ['llama-3.3-70b-versatile', 'llama-3.3-70b-versatile'],
    ['llama3-8b-8192', 'llama-3-8b-8192'],
    ['meta-llama/llama-4-scout-17b-16e-instruct', 'llama-4-scout-17b-16e-instruct'],
    ['accounts/fireworks/models/llama-v3p1-70b-instruct', 'llama-3.1-70b-instruct'],
    ['accounts/fireworks/models/llama4-maverick-instruct-basic', 'llama-4-maverick-instruct-basic'],
    ['llama3.1:8b', 'llama-3.1-8b'],
    ['llama3:latest', 'llama-3'],
    ['gemma3:1b', 'gemma-3-1b'],
    ['gemma2-9b-it', 'gemma-2-9b-it'],
    // Dates, `-latest`, fine-tunes, Azure.
    ['gpt-4o-2024-08-06', 'gpt-4o'],
    ['claude-sonnet-4-20250514', 'claude-sonnet-4'],
    ['claude-3-5-sonnet-latest', 'claude-3-5-sonnet'],
    ['chatgpt-4o-latest', 'chatgpt-4o'],
    ['gemini-1.5-pro-latest', 'gemini-1.5-pro'],
    ['ft:gpt-4o-mini-2024-07-18:my-org:custom:abc123', 'gpt-4o-mini'],
    ['gpt-35-turbo-16k', 'gpt-3.5-turbo-16k'],
    // Snapshot suffixes that are not dates stay, so they can select their own window.
    ['gpt-4-0125-preview', 'gpt-4-0125-preview'],
    ['deepseek-v3', 'deepseek-v3'],
    ['', ''],
  ])('%j → %j', (input, expected) => {
    expect(normalizeModelId(input)).toBe(expected);
  });
});

describe('resolveModelInfo: the id forms users and SDKs send', () => {
  it.each([
    // OpenAI
    ['gpt-3.5-turbo', 16_385],
    ['gpt-3.5-turbo-0125', 16_385],
    ['gpt-3.5-turbo-instruct', 4_096],
    ['gpt-35-turbo', 16_385],
    ['gpt-4', 8_192],
    ['gpt-4-0613', 8_192],
    ['gpt-4-32k', 32_768],
    ['gpt-4-turbo', 128_000],
    ['gpt-4-turbo-2024-04-09', 128_000],
    ['gpt-4-1106-preview', 128_000],
    ['gpt-4-0125-preview', 128_000],
    ['gpt-4o', 128_000],
    ['openai/gpt-4o', 128_000],
    ['gpt-4o-2024-08-06', 128_000],
    ['gpt-4o-mini', 128_000],
    ['chatgpt-4o-latest', 128_000],
    // The catalog's figure (OpenAI's pages say 1,047,576): the smaller one cannot overflow.
    ['gpt-4.1', 1_000_000],
    ['gpt-4.1-mini-2025-04-14', 1_000_000],
    ['gpt-4.1-nano', 1_000_000],
    ['gpt-4.5-preview', 128_000],
    ['o1', 200_000],
    ['o1-2024-12-17', 200_000],
    ['o1-mini', 128_000],
    ['o1-preview', 128_000],
    ['o3', 200_000],
    ['o3-mini', 200_000],
    ['o3-pro', 200_000],
    ['o4-mini', 200_000],
    ['codex-mini-latest', 200_000],
    ['gpt-5', 272_000],
    ['gpt-5-2025-08-07', 272_000],
    ['gpt-5-mini', 272_000],
    ['gpt-5-nano', 272_000],
    ['gpt-5-codex', 272_000],
    ['gpt-5.1', 272_000],
    ['gpt-5-chat-latest', 128_000],
    ['gpt-5.1-chat-latest', 128_000],
    ['gpt-oss-120b', 131_072],
    ['openai/gpt-oss-20b:free', 131_072],
    ['openai.gpt-oss-120b-1:0', 131_072],
    ['ft:gpt-4o-mini-2024-07-18:my-org:custom:abc123', 128_000],
    // Anthropic
    ['claude-instant-1.2', 100_000],
    ['claude-2.0', 100_000],
    ['claude-2.1', 200_000],
    ['anthropic.claude-v2', 100_000],
    ['anthropic.claude-v2:1', 200_000],
    ['claude-3-opus-20240229', 200_000],
    ['claude-3-haiku-20240307', 200_000],
    ['claude-3-5-sonnet-20240620', 200_000],
    ['claude-3-5-haiku-latest', 200_000],
    ['claude-3-7-sonnet-20250219', 200_000],
    ['claude-sonnet-4-20250514', 200_000],
    ['claude-opus-4-1-20250805', 200_000],
    ['claude-sonnet-4-5-20250929', 200_000],
    ['claude-haiku-4-5', 200_000],
    ['claude-opus-4-5', 200_000],
    ['anthropic/claude-3.5-sonnet:beta', 200_000],
    ['anthropic/claude-3.7-sonnet:thinking', 200_000],
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 200_000],
    ['us.anthropic.claude-sonnet-4-20250514-v1:0', 200_000],
    ['eu.anthropic.claude-3-7-sonnet-20250219-v1:0', 200_000],
    ['claude-3-5-sonnet@20240620', 200_000],
    ['claude-3-5-sonnet-v2@20241022', 200_000],
    // Google
    ['gemini-1.5-pro', 2_097_152],
    ['gemini-1.5-pro-002', 2_097_152],
    ['gemini-1.5-flash', 1_048_576],
    ['gemini-1.5-flash-8b', 1_048_576],
    ['gemini-2.0-flash', 1_048_576],
    ['gemini-2.0-flash-lite-001', 1_048_576],
    ['gemini-2.0-flash-preview-image-generation', 32_000],
    ['models/gemini-2.5-pro', 1_048_576],
    ['gemini-2.5-pro-preview-05-06', 1_048_576],
    ['gemini-2.5-flash', 1_048_576],
    ['gemini-2.5-flash-lite', 1_048_576],
    ['gemini-2.5-flash-image-preview', 32_768],
    ['gemma-3-27b-it', 131_072],
    ['gemma-3-1b-it', 32_768],
    ['gemma3:1b', 32_768],
    ['gemma-3n-e4b-it', 32_768],
    ['gemma2-9b-it', 8_192],
    ['gemma-7b-it', 8_192],
    // DeepSeek
    ['deepseek-chat', 131_072],
    ['deepseek-reasoner', 131_072],
    // The catalog names this OpenRouter route twice (128,000 and 64,000): the smaller one is kept.
    ['deepseek/deepseek-chat-v3-0324:free', 64_000],
    ['deepseek-ai/DeepSeek-V3', 131_072],
    ['deepseek-v3.1', 131_072],
    ['deepseek-ai/DeepSeek-R1', 131_072],
    ['deepseek-r1-distill-llama-70b', 131_072],
    ['us.deepseek.r1-v1:0', 131_072],
    ['accounts/fireworks/models/deepseek-v3', 131_072],
    // Mistral
    ['mistral-large-latest', 131_072],
    ['mistral-large-2411', 131_072],
    ['mistral-large-2402', 32_768],
    ['mistral.mistral-large-2407-v1:0', 131_072],
    ['mistral-large@2407', 131_072],
    ['mistral-medium-latest', 131_072],
    ['mistral-medium-2505', 131_072],
    ['mistral-small-latest', 131_072],
    ['mistral-small-2503', 131_072],
    ['mistral-small-2501', 32_768],
    ['ministral-8b-latest', 131_072],
    ['pixtral-large-latest', 131_072],
    ['pixtral-12b-2409', 131_072],
    ['codestral-latest', 262_144],
    ['codestral-2501', 262_144],
    ['codestral-2405', 32_768],
    ['open-mistral-nemo', 131_072],
    ['mistralai/Mistral-Nemo-Instruct-2407', 131_072],
    ['open-mistral-7b', 32_768],
    ['mistral.mistral-7b-instruct-v0:2', 32_768],
    ['open-mixtral-8x7b', 32_768],
    ['open-mixtral-8x22b', 65_536],
    ['mistral.mixtral-8x7b-instruct-v0:1', 32_768],
    ['magistral-medium-2506', 40_960],
    ['magistral-small-latest', 40_960],
    ['magistral-medium-2509', 131_072],
    // Llama
    ['meta-llama/Llama-2-70b-chat-hf', 4_096],
    ['meta.llama2-13b-chat-v1', 4_096],
    ['llama3-70b-8192', 8_192],
    ['meta.llama3-8b-instruct-v1:0', 8_192],
    ['llama-3.1-8b-instant', 131_072],
    ['meta.llama3-1-70b-instruct-v1:0', 131_072],
    ['us.meta.llama3-2-11b-instruct-v1:0', 131_072],
    ['llama-3.2-90b-vision-instruct', 131_072],
    ['meta-llama/Llama-3.3-70B-Instruct-Turbo', 131_072],
    ['llama-3.3-70b-versatile', 131_072],
    ['accounts/fireworks/models/llama-v3p1-70b-instruct', 131_072],
    ['llama3.1:70b', 131_072],
    ['meta-llama/llama-4-scout-17b-16e-instruct', 10_485_760],
    ['Llama-4-Maverick-17B-128E-Instruct-FP8', 1_048_576],
    ['accounts/fireworks/models/llama4-maverick-instruct-basic', 1_048_576],
  ])('%s → %d', (id, expected) => {
    expect(windowOf(id)).toBe(expected);
  });

  it('reports the family and, for OpenAI, the exact tokenizer', () => {
    expect(resolveModelInfo('gpt-4o')).toEqual({ contextWindow: 128_000, family: 'openai', encoding: 'o200k_base' });
    expect(resolveModelInfo('gpt-4-turbo')?.encoding).toBe('cl100k_base');
    expect(resolveModelInfo('gpt-3.5-turbo')?.encoding).toBe('cl100k_base');
    for (const id of ['gpt-4.1', 'o1', 'o3-mini', 'o4-mini', 'gpt-5', 'gpt-oss-120b', 'chatgpt-4o-latest']) {
      expect(resolveModelInfo(id)?.encoding, id).toBe('o200k_base');
    }
    expect(resolveModelInfo('claude-sonnet-4-20250514')).toEqual({ contextWindow: 200_000, family: 'anthropic' });
    expect(resolveModelInfo('gemini-2.5-pro')?.family).toBe('google');
    expect(resolveModelInfo('deepseek-chat')?.family).toBe('deepseek');
    expect(resolveModelInfo('codestral-latest')?.family).toBe('mistral');
    expect(resolveModelInfo('llama-3.3-70b-versatile')?.family).toBe('llama');
  });
});

describe('resolveModelInfo: current models, from the catalog dependency', () => {
  it.each([
    // The ids of issue 21: a user's `openai.chat('grok-4')`, gateway routes, dated releases, case.
    ['grok-4', 256_000],
    ['openai/grok-4', 256_000],
    ['xai/Grok-4-0709', 256_000],
    ['gemini-3-pro', 1_048_576],
    ['gemini-3-pro-preview', 1_048_576],
    ['google/gemini-3-pro-preview', 1_048_576],
    ['kimi-k2', 262_144],
    ['moonshotai/kimi-k2-0905-preview', 262_144],
    ['kimi-k2-thinking', 262_144],
    ['qwen3-coder', 262_144],
    ['Qwen/Qwen3-Coder-480B-A35B-Instruct', 262_144],
    ['qwen3-coder-plus', 262_144],
    ['qwen3-max', 262_144],
    ['glm-4.6v', 128_000],
    ['claude-opus-4-5-20251101', 200_000],
  ])('%s → %d', (id, expected) => {
    expect(windowOf(id)).toBe(expected);
  });

  it('keeps the overrides above the catalog (GPT-5 takes 272,000 of input, the catalog says 400,000)', () => {
    expect(windowOf('gpt-5-mini-2025-08-07')).toBe(272_000);
    expect(windowOf('gpt-5.1')).toBe(272_000);
  });

  it('gives the catalog families and OpenAI tokenizers', () => {
    expect(resolveModelInfo('grok-4')?.family).toBe('other');
    expect(resolveModelInfo('gemini-3-pro')?.family).toBe('google');
    expect(resolveModelInfo('claude-opus-4-5')?.family).toBe('anthropic');
    expect(resolveModelInfo('gpt-4o')?.encoding).toBe('o200k_base');
    expect(resolveModelInfo('gpt-4-turbo')?.encoding).toBe('cl100k_base');
  });
});

describe('resolveModelInfo: longest prefix wins', () => {
  it('prefers the more specific built-in entry', () => {
    expect(windowOf('gpt-4.1')).not.toBe(windowOf('gpt-4'));
    expect(windowOf('gpt-4-turbo')).toBe(128_000);
    expect(windowOf('gpt-4')).toBe(8_192);
    expect(windowOf('o1-mini')).toBe(128_000);
    expect(windowOf('o1')).toBe(200_000);
    expect(windowOf('gpt-5-chat-latest')).toBe(128_000);
    expect(windowOf('claude-2.1')).toBe(200_000);
    expect(windowOf('claude-2')).toBe(100_000);
    expect(windowOf('gemma-3-1b-it')).toBe(32_768);
    expect(windowOf('gemma-3-12b-it')).toBe(131_072);
  });

  it('prefers the more specific override (gpt-4o-mini beats gpt-4o)', () => {
    const overrides = { 'gpt-4o': 1_000, 'gpt-4o-mini': 2_000 };
    expect(windowOf('gpt-4o-mini-2024-07-18', overrides)).toBe(2_000);
    expect(windowOf('gpt-4o-2024-08-06', overrides)).toBe(1_000);
  });

  it('matches prefixes only at a name boundary', () => {
    const overrides = { foo: 10 };
    expect(windowOf('foo', overrides)).toBe(10);
    expect(windowOf('foo-bar', overrides)).toBe(10);
    expect(windowOf('foo.1', overrides)).toBe(10);
    expect(windowOf('foobar', overrides)).toBeUndefined();
    // gpt-4 does not swallow a hypothetical letter-suffixed sibling.
    expect(windowOf('gpt-4x')).toBeUndefined();
  });
});

describe('resolveModelInfo: overrides', () => {
  it('win over the built-in table and keep its family and encoding', () => {
    expect(resolveModelInfo('gpt-4o', { 'gpt-4o': 64_000 })).toEqual({
      contextWindow: 64_000,
      family: 'openai',
      encoding: 'o200k_base',
    });
    // Opting into Sonnet's 1M beta.
    expect(resolveModelInfo('us.anthropic.claude-sonnet-4-20250514-v1:0', { 'claude-sonnet-4': 1_000_000 })).toEqual({
      contextWindow: 1_000_000,
      family: 'anthropic',
    });
  });

  it('win even when the built-in match is longer', () => {
    expect(windowOf('gpt-4-turbo', { 'gpt-4': 10_000 })).toBe(10_000);
  });

  it('cover unknown models, with family "other"', () => {
    expect(resolveModelInfo('my-company/internal-llm-v2', { 'internal-llm-v2': 32_000 })).toEqual({
      contextWindow: 32_000,
      family: 'other',
    });
    expect(windowOf('internal-llm-v3', { 'internal-llm-v2': 32_000 })).toBeUndefined();
  });

  it('apply as prefixes', () => {
    const overrides = { 'anthropic/claude': 150_000 };
    expect(windowOf('claude-3-5-haiku-20241022', overrides)).toBe(150_000);
    expect(windowOf('anthropic.claude-v2', overrides)).toBe(150_000);
    expect(windowOf('gpt-4o', overrides)).toBe(128_000);
    // Qwen is not in the table: a family prefix makes all its sizes known.
    expect(windowOf('Qwen/Qwen2.5-72B-Instruct', { 'qwen2.5': 32_768 })).toBe(32_768);
    expect(windowOf('Qwen/Qwen2.5-Coder-32B-Instruct', { 'qwen2.5': 32_768 })).toBe(32_768);
    expect(windowOf('Qwen/Qwen3-32B', { 'qwen2.5': 32_768 })).toBeUndefined();
  });

  it('normalize their keys like model ids', () => {
    expect(windowOf('gpt-4o', { 'OpenAI/GPT-4o-2024-08-06': 90_000 })).toBe(90_000);
    expect(windowOf('claude-3.5-sonnet', { 'claude-3-5-sonnet-latest': 90_000 })).toBe(90_000);
  });

  it('keep the smaller window when two keys name the same model', () => {
    expect(windowOf('gpt-4o', { 'gpt-4o': 100_000, 'openai/gpt-4o': 50_000 })).toBe(50_000);
  });

  it('reject windows that are not positive finite numbers', () => {
    expect(() => resolveModelInfo('gpt-4o', { 'gpt-4o': 0 })).toThrow(RangeError);
    expect(() => resolveModelInfo('gpt-4o', { x: Number.NaN })).toThrow(RangeError);
    expect(() => resolveModelInfo('gpt-4o', { x: Number.POSITIVE_INFINITY })).toThrow(RangeError);
  });

  it('return a copy that does not alter the table', () => {
    const info = resolveModelInfo('gpt-4o');
    if (!info) throw new Error('gpt-4o should be known');
    info.contextWindow = 1;
    expect(windowOf('gpt-4o')).toBe(128_000);
  });
});

describe('resolveModelInfo: unknown models', () => {
  it.each([
    'totally-unknown-model',
    '',
    '   ',
    'openai/',
    'claude',
    'gpt',
    'gemini-pro-latest',
    'amazon.nova-pro-v1:0',
    'Qwen/Qwen2.5-72B-Instruct',
    'llama-guard-3-8b',
    'text-embedding-3-small',
  ])('%j → undefined (no default window)', (id) => {
    expect(resolveModelInfo(id)).toBeUndefined();
  });
});

describe('MODEL_WINDOWS', () => {
  it('holds normalized, unique prefixes with positive whole windows', () => {
    const seen = new Set<string>();
    for (const [prefix, info] of MODEL_WINDOWS) {
      expect(normalizeModelId(prefix), prefix).toBe(prefix);
      expect(seen.has(prefix), `duplicate ${prefix}`).toBe(false);
      seen.add(prefix);
      expect(Number.isInteger(info.contextWindow) && info.contextWindow > 0, prefix).toBe(true);
      // Every prefix resolves to its own entry.
      expect(resolveModelInfo(prefix), prefix).toEqual(info);
    }
  });

  it('gives an encoding to every OpenAI model and to no other', () => {
    for (const [prefix, info] of MODEL_WINDOWS) {
      expect(info.encoding !== undefined, prefix).toBe(info.family === 'openai');
    }
  });

  it('is frozen', () => {
    expect(Object.isFrozen(MODEL_WINDOWS)).toBe(true);
    const first = MODEL_WINDOWS[0];
    expect(first && Object.isFrozen(first[1])).toBe(true);
  });
});
