// A summarizer that calls an AI SDK language model directly (its doGenerate, not generateText): no
// middleware runs on it, so the guard never guards, or recurses into, its own summary call.
import type { LanguageModelV3, LanguageModelV4 } from '@ai-sdk/provider';
import type { Summarizer } from '../../src/index.ts';

/** The text parts of a generate result, joined. */
function textOf(result: unknown): string {
  const content = (result as { content?: unknown })?.content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(
      (p): p is { type: 'text'; text: string } =>
        (p as { type?: unknown })?.type === 'text' && typeof (p as { text?: unknown }).text === 'string',
    )
    .map((p) => p.text)
    .join('');
}

/** The summarizer for a model object (ai 7's V4 or ai 6's V3). */
export function modelSummarizer(model: LanguageModelV4 | LanguageModelV3): Summarizer {
  return async ({ instructions, prompt, signal, maxSummaryTokens }) => {
    const result = await (model.doGenerate as (options: unknown) => PromiseLike<unknown>)({
      prompt: [
        { role: 'system', content: instructions },
        { role: 'user', content: [{ type: 'text', text: prompt }] },
      ],
      maxOutputTokens: Math.ceil(maxSummaryTokens * 1.2),
      abortSignal: signal,
    });
    return textOf(result);
  };
}

/**
 * Summaries written by another (cheaper) model than the one guarded:
 * `contextGuardMiddleware({ contextWindow: 128_000, summarizer: aiSdkSummarizer(openai('gpt-4o-mini')) })`.
 */
export function aiSdkSummarizer(model: LanguageModelV4 | LanguageModelV3): Summarizer {
  return modelSummarizer(model);
}
