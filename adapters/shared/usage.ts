// The provider's token counts as the guard records them (ModelUsage), read from every shape the
// adapters meet. What matters is the prompt's total input tokens, cached tokens included, of this
// one call (never a multi-step sum). Usage objects come from providers and hosts and are read
// defensively: a missing field means no count, a getter that throws means no usage, never a failed call.
import type { ModelUsage } from '../../src/index.ts';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const numberOr = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

/** `{ inputTokens, outputTokens? }`, or undefined without an input count. */
function usage(inputTokens: number | undefined, outputTokens: number | undefined): ModelUsage | undefined {
  if (inputTokens === undefined) return undefined;
  return { inputTokens, ...(outputTokens !== undefined ? { outputTokens } : {}) };
}

/** `read(value)`, or undefined when reading it throws (a provider's getter). */
function safely<T>(read: (value: unknown) => T | undefined, value: unknown): T | undefined {
  try {
    return read(value);
  } catch {
    return undefined;
  }
}

/** An AI SDK token count: a number (older shapes), or the `total` of V3/V4's `{ total, noCache, cacheRead, cacheWrite }`. */
function aiSdkCount(count: unknown): number | undefined {
  if (typeof count === 'number') return count;
  return isRecord(count) && typeof count['total'] === 'number' ? count['total'] : undefined;
}

/** The prompt's AI SDK count: its total, or with no total, its uncached part plus what was read from and written to the cache. */
function aiSdkInputCount(count: unknown): number | undefined {
  const total = aiSdkCount(count);
  if (total !== undefined || !isRecord(count) || typeof count['noCache'] !== 'number') return total;
  return count['noCache'] + (numberOr(count['cacheRead']) ?? 0) + (numberOr(count['cacheWrite']) ?? 0);
}

/** The usage of an AI SDK call (a generate result's or a stream's finish part's `usage`, V3 or V4). */
export function usageFromAiSdk(value: unknown): ModelUsage | undefined {
  return safely(
    (u) => (isRecord(u) ? usage(aiSdkInputCount(u['inputTokens']), aiSdkCount(u['outputTokens'])) : undefined),
    value,
  );
}

/** The usage in `value[field]`, a record with the input and output counts under the keys named. */
function usageIn(value: unknown, field: string, input: string, output: string): ModelUsage | undefined {
  return safely((v) => {
    const counts = isRecord(v) ? v[field] : undefined;
    return isRecord(counts) ? usage(numberOr(counts[input]), numberOr(counts[output])) : undefined;
  }, value);
}

/**
 * The usage of a LangChain message or chunk: its `usage_metadata` (`input_tokens` includes cached tokens, for every
 * provider).
 */
export function usageFromMessage(message: unknown): ModelUsage | undefined {
  return usageIn(message, 'usage_metadata', 'input_tokens', 'output_tokens');
}

/** The usage in a LangChain `llmOutput`: the OpenAI-style run totals (`tokenUsage`) of older integrations. */
export function usageFromLLMOutput(llmOutput: unknown): ModelUsage | undefined {
  return usageIn(llmOutput, 'tokenUsage', 'promptTokens', 'completionTokens');
}

/**
 * Two parts of one call's usage added up: a stream reports it in pieces (Anthropic: the input with
 * the first chunk, the output with the last), which LangChain's own chunk concatenation sums.
 */
export function addUsage(total: ModelUsage | undefined, part: ModelUsage | undefined): ModelUsage | undefined {
  if (!part) return total;
  if (!total) return part;
  const noOutput = total.outputTokens === undefined && part.outputTokens === undefined;
  const outputTokens = noOutput ? undefined : (total.outputTokens ?? 0) + (part.outputTokens ?? 0);
  return usage(total.inputTokens + part.inputTokens, outputTokens);
}
