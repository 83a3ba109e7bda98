// The built-in registry of context windows, so `createContextGuard({})` works and callers only pass
// `modelId` per call. Ids arrive in whatever shape the SDK, gateway or cloud uses, so they are first
// normalized to the provider's own spelling, then matched against a table of id prefixes: the
// longest prefix wins. An id that matches nothing resolves to undefined, never to a guessed default:
// a wrong window either lets prompts overflow or compacts them for nothing, and the guard reports an
// unknown model as a configuration error instead.
//
// Each number is the largest prompt (input tokens) the provider accepts, not the advertised total
// of input plus output, because the prompt is what the guard has to fit. The sources are cited per
// family below. Providers that serve open weights (Groq, Together, Fireworks, Bedrock, Ollama...)
// often serve less than the model supports; users set `models` to the served number there.

export type ModelFamily = 'openai' | 'anthropic' | 'google' | 'deepseek' | 'mistral' | 'llama' | 'other';

export type TokenizerEncoding = 'o200k_base' | 'cl100k_base';

export interface ModelInfo {
  /** Largest prompt (input tokens) the provider accepts. */
  contextWindow: number;
  family: ModelFamily;
  /** The model's exact tokenizer, when it is public. */
  encoding?: TokenizerEncoding;
}

function openai(contextWindow: number, encoding: TokenizerEncoding): ModelInfo {
  return { contextWindow, family: 'openai', encoding };
}

function model(family: Exclude<ModelFamily, 'openai' | 'other'>, contextWindow: number): ModelInfo {
  return { contextWindow, family };
}

const CLAUDE_200K = model('anthropic', 200_000);
const GEMINI_1M = model('google', 1_048_576);
const DEEPSEEK_128K = model('deepseek', 131_072);
const MISTRAL_128K = model('mistral', 131_072);
const MISTRAL_32K = model('mistral', 32_768);
const LLAMA_128K = model('llama', 131_072);

const TABLE: Array<readonly [string, ModelInfo]> = [
  // OpenAI. Source: the model pages of platform.openai.com/docs/models ("context window"), and
  // OpenAI's tokenizer assignments (tiktoken's model map: cl100k_base up to GPT-4 Turbo, o200k_base
  // from GPT-4o on; gpt-oss uses o200k_harmony, which is o200k_base plus chat-format tokens).
  ['gpt-3.5-turbo', openai(16_385, 'cl100k_base')],
  // The first gpt-3.5-turbo snapshots and the instruct model kept the original 4k window.
  ['gpt-3.5-turbo-0301', openai(4_096, 'cl100k_base')],
  ['gpt-3.5-turbo-0613', openai(4_096, 'cl100k_base')],
  ['gpt-3.5-turbo-instruct', openai(4_096, 'cl100k_base')],
  ['gpt-4', openai(8_192, 'cl100k_base')],
  ['gpt-4-32k', openai(32_768, 'cl100k_base')],
  ['gpt-4-turbo', openai(128_000, 'cl100k_base')],
  // GPT-4 Turbo previews are named by date under the plain gpt-4 prefix, which is only 8k.
  ['gpt-4-1106', openai(128_000, 'cl100k_base')],
  ['gpt-4-0125', openai(128_000, 'cl100k_base')],
  ['gpt-4-vision', openai(128_000, 'cl100k_base')],
  ['gpt-4o', openai(128_000, 'o200k_base')],
  ['gpt-4o-mini', openai(128_000, 'o200k_base')],
  ['chatgpt-4o', openai(128_000, 'o200k_base')],
  ['gpt-4.1', openai(1_047_576, 'o200k_base')],
  ['gpt-4.1-mini', openai(1_047_576, 'o200k_base')],
  ['gpt-4.1-nano', openai(1_047_576, 'o200k_base')],
  ['gpt-4.5', openai(128_000, 'o200k_base')],
  ['o1', openai(200_000, 'o200k_base')],
  // The first o1 releases had the GPT-4o window; o1 itself and o1-pro have 200k.
  ['o1-mini', openai(128_000, 'o200k_base')],
  ['o1-preview', openai(128_000, 'o200k_base')],
  ['o3', openai(200_000, 'o200k_base')],
  ['o3-mini', openai(200_000, 'o200k_base')],
  ['o4-mini', openai(200_000, 'o200k_base')],
  ['codex-mini', openai(200_000, 'o200k_base')],
  // GPT-5 has a 400,000-token window of which at most 272,000 may be input (the rest is reserved
  // for output and reasoning), so a prompt has to fit 272,000. Point releases (gpt-5.1, gpt-5.2...)
  // fall under this prefix: right for 5.1 and 5.2, conservative for any later one with a larger
  // window, which users raise through `models`.
  ['gpt-5', openai(272_000, 'o200k_base')],
  // The ChatGPT snapshots (gpt-5-chat-latest and its 5.x successors) only have 128k.
  ['gpt-5-chat', openai(128_000, 'o200k_base')],
  ['gpt-5.1-chat', openai(128_000, 'o200k_base')],
  ['gpt-5.2-chat', openai(128_000, 'o200k_base')],
  ['gpt-oss', openai(131_072, 'o200k_base')],

  // Anthropic. Source: docs.anthropic.com, models overview and "Context windows": 200k for every
  // model since Claude 2.1, 100k for Claude 2.0 and Claude Instant. Sonnet 4 and 4.5 also offer a
  // 1M window, but only as an opt-in beta (a request header and a higher usage tier), so 200k is the
  // safe default; users who enabled it set `models: { 'claude-sonnet-4': 1_000_000 }`.
  // Ids are normalized to hyphenated versions (claude-3-5-sonnet, claude-2-1), see below.
  ['claude-instant', model('anthropic', 100_000)],
  ['claude-2', model('anthropic', 100_000)],
  ['claude-2-1', CLAUDE_200K],
  ['claude-3-opus', CLAUDE_200K],
  ['claude-3-sonnet', CLAUDE_200K],
  ['claude-3-haiku', CLAUDE_200K],
  ['claude-3-5-sonnet', CLAUDE_200K],
  ['claude-3-5-haiku', CLAUDE_200K],
  ['claude-3-7-sonnet', CLAUDE_200K],
  ['claude-opus-4', CLAUDE_200K],
  ['claude-opus-4-1', CLAUDE_200K],
  ['claude-opus-4-5', CLAUDE_200K],
  ['claude-sonnet-4', CLAUDE_200K],
  ['claude-sonnet-4-5', CLAUDE_200K],
  ['claude-haiku-4-5', CLAUDE_200K],

  // Google. Source: ai.google.dev/gemini-api/docs/models and the Vertex AI model pages ("input
  // token limit"); Gemma from the Gemma 3 release notes and the models' config.json (8k for Gemma 1
  // and 2; 128k = 131,072 for Gemma 3 4B-27B; 32k for Gemma 3 1B, 270M and Gemma 3n).
  ['gemini-1.5-pro', model('google', 2_097_152)],
  ['gemini-1.5-flash', GEMINI_1M],
  ['gemini-2.0-flash', GEMINI_1M],
  // Image-generation variants take far smaller prompts than the text models they are named after:
  // 32,000 for gemini-2.0-flash-preview-image-generation (the token-limit table of
  // google-gemini/gemini-cli, taken from the models page), 32,768 for gemini-2.5-flash-image.
  ['gemini-2.0-flash-preview-image', model('google', 32_000)],
  ['gemini-2.5-pro', GEMINI_1M],
  ['gemini-2.5-flash', GEMINI_1M],
  ['gemini-2.5-flash-lite', GEMINI_1M],
  ['gemini-2.5-flash-image', model('google', 32_768)],
  ['gemma-2b', model('google', 8_192)],
  ['gemma-7b', model('google', 8_192)],
  ['gemma-2', model('google', 8_192)],
  ['gemma-3', model('google', 131_072)],
  ['gemma-3-1b', model('google', 32_768)],
  ['gemma-3-270m', model('google', 32_768)],
  ['gemma-3n', model('google', 32_768)],

  // DeepSeek. Source: api-docs.deepseek.com "Models & Pricing" documents 128K for deepseek-chat and
  // deepseek-reasoner (V3.1 onwards; it was 64K before), and the API's own error message states the
  // limit as 131072 tokens. The open V3 and R1 weights support the same 128K.
  ['deepseek-chat', DEEPSEEK_128K],
  ['deepseek-reasoner', DEEPSEEK_128K],
  ['deepseek-v3', DEEPSEEK_128K],
  ['deepseek-r1', DEEPSEEK_128K],

  // Mistral. Source: docs.mistral.ai models overview and the `max_context_length` the API's
  // /v1/models reports (131,072 for the 128k models, 262,144 for Codestral 25.01+), plus the model
  // cards of the open weights. The undated names follow what `-latest` points to; dated snapshots
  // with a smaller window are listed explicitly.
  ['mistral-large', MISTRAL_128K],
  ['mistral-large-2402', MISTRAL_32K],
  ['mistral-medium', MISTRAL_128K],
  ['mistral-medium-2312', MISTRAL_32K],
  ['mistral-small', MISTRAL_128K],
  ['mistral-small-2312', MISTRAL_32K],
  ['mistral-small-2402', MISTRAL_32K],
  // The 22B weights card says 128k, but La Plateforme served Small 24.09 with 32k: keep the safe one.
  ['mistral-small-2409', MISTRAL_32K],
  // Small 3 (25.01) had 32k; Small 3.1 (25.03) raised it to 128k.
  ['mistral-small-2501', MISTRAL_32K],
  ['ministral', MISTRAL_128K],
  ['pixtral', MISTRAL_128K],
  ['devstral', MISTRAL_128K],
  ['codestral', model('mistral', 262_144)],
  ['codestral-2405', MISTRAL_32K],
  ['codestral-22b', MISTRAL_32K],
  ['open-codestral-mamba', model('mistral', 262_144)],
  ['mistral-nemo', MISTRAL_128K],
  ['open-mistral-nemo', MISTRAL_128K],
  ['open-mistral-7b', MISTRAL_32K],
  ['mistral-7b', MISTRAL_32K],
  // Mistral 7B v0.1 was trained with 8k; v0.2 and later have 32k.
  ['mistral-7b-v0.1', model('mistral', 8_192)],
  ['mistral-7b-instruct-v0.1', model('mistral', 8_192)],
  ['open-mixtral-8x7b', MISTRAL_32K],
  ['mixtral-8x7b', MISTRAL_32K],
  ['open-mixtral-8x22b', model('mistral', 65_536)],
  ['mixtral-8x22b', model('mistral', 65_536)],
  // Magistral 1.0 (25.06) and 1.1 (25.07) were documented with 40k; Magistral 1.2 (25.09) with
  // 128k, but several gateways still serve it at 40k, so only the explicit 2509 snapshot gets 128k.
  ['magistral-medium', model('mistral', 40_960)],
  ['magistral-small', model('mistral', 40_960)],
  ['magistral-medium-2509', MISTRAL_128K],
  ['magistral-small-2509', MISTRAL_128K],

  // Llama. Source: Meta's model cards and the weights' config.json (max_position_embeddings):
  // Llama 2 4,096; Llama 3 8,192; Llama 3.1, 3.2 and 3.3 131,072; Llama 4 Scout 10,485,760 ("10M")
  // and Maverick 1,048,576 ("1M") as Meta serves them. Hosts usually serve far less of Llama 4
  // (often 128k-1M), which `models` overrides.
  ['llama-2', model('llama', 4_096)],
  ['llama-3', model('llama', 8_192)],
  ['llama-3.1', LLAMA_128K],
  ['llama-3.2', LLAMA_128K],
  ['llama-3.3', LLAMA_128K],
  ['llama-4-scout', model('llama', 10_485_760)],
  ['llama-4-maverick', model('llama', 1_048_576)],
];

/** The built-in table: normalized id prefix → model info. The longest matching prefix wins. */
export const MODEL_WINDOWS: ReadonlyArray<readonly [prefix: string, info: Readonly<ModelInfo>]> = Object.freeze(
  TABLE.map(([prefix, info]) => Object.freeze([prefix, Object.freeze({ ...info })] as const)),
);

// Longest prefix first, so the first match is the most specific one.
const BY_LENGTH: ReadonlyArray<readonly [string, Readonly<ModelInfo>]> = [...MODEL_WINDOWS].sort(
  (a, b) => b[0].length - a[0].length,
);

// Bedrock ids: an optional cross-region inference profile, then the vendor, then the model and a
// `-v1:0` version (`us.anthropic.claude-sonnet-4-20250514-v1:0`, `meta.llama3-1-70b-instruct-v1:0`).
const BEDROCK_PREFIX =
  /^(?:(?:us|us-gov|eu|apac|ap|jp|au|ca|global)\.)?(anthropic|meta|mistral|deepseek|openai|amazon|cohere|ai21|qwen|writer|google)\./;

// Colon tags that select a route or a mode of the same model (OpenRouter's `:free`, `:nitro`,
// `:thinking`...; Ollama's `:latest`) rather than a different model.
const VARIANT_TAGS: ReadonlySet<string> = new Set([
  'free',
  'beta',
  'extended',
  'thinking',
  'online',
  'nitro',
  'floor',
  'exacto',
  'latest',
]);

/**
 * The provider's own spelling of a model id, lower-cased, without the route, region, version and
 * date decorations SDKs and gateways add: `openai/gpt-4o-2024-08-06` → `gpt-4o`,
 * `us.anthropic.claude-sonnet-4-20250514-v1:0` → `claude-sonnet-4`, `models/gemini-2.5-pro` →
 * `gemini-2.5-pro`, `accounts/fireworks/models/llama-v3p1-70b-instruct` → `llama-3.1-70b-instruct`.
 * Override keys go through the same function, so any of these spellings works there too.
 */
export function normalizeModelId(modelId: string): string {
  let id = modelId.trim().toLowerCase();

  // Path-like ids: gateway routes (`openai/gpt-4o`, `openrouter/anthropic/claude-3.5-sonnet`),
  // Hugging Face repos (`meta-llama/Llama-3.3-70B-Instruct-Turbo`), Google resource names
  // (`models/gemini-2.5-pro`), Fireworks (`accounts/fireworks/models/...`) and Bedrock ARNs all
  // end with the model name.
  const slash = id.lastIndexOf('/');
  if (slash >= 0) id = id.slice(slash + 1);

  // Vertex AI pins a version after `@` (`claude-3-5-sonnet@20240620`, `mistral-large@2407`).
  const at = id.indexOf('@');
  if (at >= 0) id = id.slice(0, at);

  // OpenAI fine-tunes: `ft:<base model>:<org>:<suffix>:<id>`; the window is the base model's.
  if (id.startsWith('ft:')) {
    const end = id.indexOf(':', 3);
    id = end >= 0 ? id.slice(3, end) : id.slice(3);
  }

  const bedrock = BEDROCK_PREFIX.exec(id);
  if (bedrock) {
    id = id.slice(bedrock[0].length);
    // Claude 2 on Bedrock is `claude-v2` (2.0) and `claude-v2:1` (2.1).
    id = id.replace(/^claude-v(\d+)(?::(\d+))?/, (_m, major: string, minor: string | undefined) =>
      minor && minor !== '0' ? `claude-${major}.${minor}` : `claude-${major}`,
    );
    id = id.replace(/^claude-instant-v(\d+)/, 'claude-instant-$1');
    // The model version before the colon (`-v1:0`, gpt-oss's `-1:0`). Only stripped here: elsewhere
    // `-v3` is part of the name (deepseek-v3).
    id = id.replace(/-v?\d+(?=:\d)/, '');
    // DeepSeek on Bedrock is `deepseek.r1-v1:0` / `deepseek.v3-v1:0`.
    if (bedrock[1] === 'deepseek' && !id.startsWith('deepseek')) id = `deepseek-${id}`;
  }

  // Colon tags: variant tags and numeric ones (Bedrock's `:0`, `:0:200k`) are dropped; anything else
  // names a size or a build (Ollama's `llama3.1:8b`, `gemma3:1b`) and is kept as a `-` suffix, since
  // a size can change the window (Gemma 3 1B has 32k, the larger ones 128k).
  const colon = id.indexOf(':');
  if (colon >= 0) {
    const tags = id.slice(colon + 1).split(':');
    id = id.slice(0, colon);
    for (const tag of tags) {
      if (tag === '' || VARIANT_TAGS.has(tag) || /^\d+k?$/.test(tag)) continue;
      id += `-${tag}`;
    }
  }

  // The providers' own spelling of families that hosts respell.
  // Llama: `llama3-1-70b` (Bedrock), `llama-v3p1-70b` (Fireworks), `llama3.1` (Ollama),
  // `meta-llama-3.1-8b` (Hugging Face) → `llama-3.1-...`. A single-digit minor version must be
  // followed by a separator, so `llama3-70b` stays Llama 3 rather than becoming 3.7.
  id = id.replace(
    /^(?:meta-)?llama-?v?(\d+)(?:[.p-](\d)(?![\da-z]))?/,
    (_m, major: string, minor: string | undefined) => (minor ? `llama-${major}.${minor}` : `llama-${major}`),
  );
  // Gemma: `gemma2-9b-it` (Groq), `gemma3` (Ollama) → `gemma-2-9b-it`, `gemma-3`.
  id = id.replace(/^gemma-?(\d+)/, 'gemma-$1');
  // Azure OpenAI spells GPT-3.5 without the dot.
  id = id.replace(/^gpt-35(?=-|$)/, 'gpt-3.5');
  // Anthropic hyphenates versions (claude-3-5-sonnet, claude-sonnet-4-5); OpenRouter and others
  // write dots (claude-3.5-sonnet, claude-sonnet-4.5).
  if (id.startsWith('claude')) id = id.replace(/(\d)\.(?=\d)/g, '$1-');

  // Moving aliases and dated snapshots share the window of their model: `-latest`,
  // `-2024-08-06` (OpenAI), `-20250514` (Anthropic).
  for (;;) {
    const next = id.replace(/-latest$/, '').replace(/-(?:\d{4}-\d{2}-\d{2}|\d{8})$/, '');
    if (next === id) break;
    id = next;
  }
  return id;
}

function isAlphanumeric(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 97 && code <= 122);
}

// A prefix only matches at a name boundary: `gpt-4` covers `gpt-4-0613` and `gpt-4.5-preview` but
// not `gpt-4o`, and `gemma-3` does not cover `gemma-3n`, so a new letter-suffixed model stays
// unknown instead of silently inheriting a neighbour's window.
function matchesPrefix(id: string, prefix: string): boolean {
  if (!id.startsWith(prefix)) return false;
  return id.length === prefix.length || !isAlphanumeric(id.charCodeAt(prefix.length));
}

function longest<T>(entries: ReadonlyArray<readonly [string, T]>, id: string): T | undefined {
  for (const [prefix, value] of entries) {
    if (matchesPrefix(id, prefix)) return value;
  }
  return undefined;
}

// The guard passes the same `models` object on every call: normalize and sort it once.
const normalizedOverrides = new WeakMap<object, ReadonlyArray<readonly [string, number]>>();

function prepareOverrides(overrides: Readonly<Record<string, number>>): ReadonlyArray<readonly [string, number]> {
  const cached = normalizedOverrides.get(overrides);
  if (cached) return cached;
  const byKey = new Map<string, number>();
  for (const [key, window] of Object.entries(overrides)) {
    if (typeof window !== 'number' || !Number.isFinite(window) || window <= 0) {
      throw new RangeError(
        `the context window of "${key}" must be a positive, finite number of tokens; got ${String(window)}`,
      );
    }
    const prefix = normalizeModelId(key);
    // A key that normalizes to nothing (`openai/`) names no model.
    if (prefix === '') continue;
    // Two spellings of one model (`gpt-4o` and `openai/gpt-4o-2024-08-06`) with different windows:
    // keep the smaller, which cannot overflow the other.
    const previous = byKey.get(prefix);
    byKey.set(prefix, previous === undefined ? window : Math.min(previous, window));
  }
  const prepared = [...byKey].sort((a, b) => b[0].length - a[0].length);
  normalizedOverrides.set(overrides, prepared);
  return prepared;
}

/**
 * The context window and tokenizer of a model, or undefined when the model is unknown.
 *
 * `overrides` maps model ids or id prefixes to windows (normalized like the ids, matched at a name
 * boundary, longest first) and takes precedence over the built-in table; the family and encoding of
 * an overridden known model are kept, and an unknown model with an override has family `'other'`.
 * Throws a RangeError when an override is not a positive, finite number.
 */
/**
 * The key of `overrides` that names the model (normalized, the longest prefix at a name boundary,
 * as resolveModelInfo matches), or undefined. The values are not read, so options not yet
 * validated are fine.
 */
export function matchingOverride(modelId: string, overrides: Readonly<Record<string, unknown>>): string | undefined {
  const id = normalizeModelId(modelId);
  if (id === '') return undefined;
  let best: string | undefined;
  let bestLength = -1;
  for (const key of Object.keys(overrides)) {
    const prefix = normalizeModelId(key);
    if (prefix !== '' && prefix.length > bestLength && matchesPrefix(id, prefix))
      [best, bestLength] = [key, prefix.length];
  }
  return best;
}

export function resolveModelInfo(modelId: string, overrides?: Readonly<Record<string, number>>): ModelInfo | undefined {
  const id = normalizeModelId(modelId);
  if (id === '') return undefined;
  const builtIn = longest(BY_LENGTH, id);
  const override = overrides === undefined ? undefined : longest(prepareOverrides(overrides), id);
  if (override !== undefined) {
    return builtIn ? { ...builtIn, contextWindow: override } : { contextWindow: override, family: 'other' };
  }
  // A copy: the table is frozen and shared.
  return builtIn ? { ...builtIn } : undefined;
}
