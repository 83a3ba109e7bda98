// A summarizer that calls a LangChain chat model. The call is tagged `nostream`, which LangGraph's
// `streamMode: 'messages'` (and so createAgent's streaming) skips, so a summary never streams into
// the user's chat as if it were the answer; and `context-guard-summarizer`, so it is recognisable in
// traces and skipped by ContextGuardCallbackHandler (its usage is not the conversation's prompt).
// Pass the unguarded model: a guarded one would guard, and could recurse into, its own summary call.
// The call runs in the caller's context when one is given (`config`): its callbacks, so it shows in
// the caller's trace under the caller's run, its metadata and tags; otherwise LangChain's implicit
// context applies (set inside LangGraph nodes).
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Summarizer, SummarizerInput } from '../../src/index.ts';
import { SUMMARIZER_TAG } from './callback-handler.ts';

/** Anything with a chat model's `invoke`: a BaseChatModel, or a model with bound settings. */
export interface InvokableChatModel {
  invoke(input: BaseLanguageModelInput, options?: Partial<RunnableConfig>): Promise<unknown>;
}

/** The text of a model response: its `text` (text blocks only, no reasoning), else its string content. */
export function responseText(response: unknown): string {
  const r = response as { text?: unknown; content?: unknown } | undefined;
  if (typeof r?.text === 'string') return r.text;
  if (typeof r?.content === 'string') return r.content;
  if (Array.isArray(r?.content)) {
    return r.content
      .filter(
        (b: unknown) =>
          (b as { type?: unknown })?.type === 'text' && typeof (b as { text?: unknown }).text === 'string',
      )
      .map((b: { text: string }) => b.text)
      .join('');
  }
  return '';
}

export interface LangchainSummarizerOptions {
  /**
   * The runnable config of the call being compacted (callbacks, tags, metadata, configurable):
   * the summary call runs under it. Model options (`tools`, `tool_choice`...) must not be in it.
   */
  config?: (input: SummarizerInput) => RunnableConfig | undefined;
}

/**
 * Summaries written by a LangChain chat model:
 * `withContextGuard(model, { contextWindow: 128_000, summarizer: langchainSummarizer(cheaperModel) })`.
 */
export function langchainSummarizer(model: InvokableChatModel, options: LangchainSummarizerOptions = {}): Summarizer {
  return async (input) => {
    const context = options.config?.(input) ?? {};
    const response = await model.invoke([new SystemMessage(input.instructions), new HumanMessage(input.prompt)], {
      ...context,
      // The guard's signal: it aborts the summary at summarizerTimeoutMs.
      signal: input.signal,
      tags: [
        ...(context.tags ?? []).filter((tag) => tag !== 'nostream' && tag !== SUMMARIZER_TAG),
        'nostream',
        SUMMARIZER_TAG,
      ],
      runName: 'context-guard summary',
    });
    return responseText(response);
  };
}
