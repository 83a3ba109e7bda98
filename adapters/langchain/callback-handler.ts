// ContextGuardCallbackHandler: records the provider's real token counts in the guard, for users who
// keep their own loop (they call `guard.beforeModel` themselves, then the model with this handler).
// LangChain reports a chat model's usage in `handleLLMEnd`; the handler is awaited (not run in the
// background, LangChain's default) so that the next beforeModel already sees this call's count:
// a backgrounded recording could land after the next estimate and leave calibration one call late.
// A context-length rejection (`handleLLMError`) prepares the retry: the next beforeModel compacts.
// It never throws: a callback that fails must not fail the model call it observes.
import { LRUCache } from 'lru-cache';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { BaseMessage } from '@langchain/core/messages';
import type { LLMResult } from '@langchain/core/outputs';
import { isContextLengthError, type ContextGuard, type ErrorEvent, type ModelUsage } from '../../src/index.ts';
import { reportAdapterError } from '../shared/model-window.ts';
import { deriveSessionId, resolveSessionId } from '../shared/session-id.ts';
import { usageFromLLMOutput, usageFromMessage } from '../shared/usage.ts';
import { toGuardMessages } from './convert.ts';
import { atMostEntries } from '../shared/bounded.ts';

/** Tag of the guard's own summarizer calls: their usage is not the session's prompt. */
export const SUMMARIZER_TAG = 'context-guard-summarizer';

/** What the handler knows about a model run when it resolves its session. */
export interface LLMRunInfo {
  runId: string;
  parentRunId?: string;
  tags: string[];
  /** The run's metadata; LangGraph copies `thread_id` (and `checkpoint_ns`...) here. */
  metadata: Record<string, unknown>;
  /** The messages the chat model received (undefined for a completion LLM). */
  messages?: BaseMessage[];
}

export interface ContextGuardCallbackHandlerOptions {
  /** The guard whose `beforeModel` estimated the call. */
  guard: ContextGuard;
  /**
   * The session the usage belongs to: the id you passed to `beforeModel`, or a function of the run.
   * Default (or when the function returns nothing, or throws: that is reported to onEvent): the
   * run's `metadata.thread_id` (set by LangGraph from `configurable.thread_id`; a string or a number),
   * else an id derived from the conversation's start, as `withContextGuard` and the AI SDK middleware derive it.
   */
  sessionId?: string | ((run: LLMRunInfo) => string | undefined);
}

const MAX_RUNS = 1_000;

/** Prompt and output tokens of a chat model's result; undefined when the provider reported none. */
export function usageFromLLMResult(output: LLMResult | undefined): ModelUsage | undefined {
  // The message's usage_metadata; older integrations report only the OpenAI-style totals of the run.
  const message = (output?.generations?.[0]?.[0] as { message?: unknown } | undefined)?.message;
  return usageFromMessage(message) ?? usageFromLLMOutput(output?.llmOutput);
}

/** The start hooks' arguments, of which the handler keeps the run's ids, tags and metadata. */
type StartArgs<Input> = [
  llm: unknown,
  input: Input,
  runId: string,
  parentRunId?: string,
  extraParams?: Record<string, unknown>,
  tags?: string[],
  metadata?: Record<string, unknown>,
];

function runInfo(runId: string, parentRunId?: string, tags?: string[], metadata?: Record<string, unknown>): LLMRunInfo {
  return { runId, ...(parentRunId ? { parentRunId } : {}), tags: tags ?? [], metadata: metadata ?? {} };
}

/**
 * Records each chat model call's real usage in the guard:
 *
 * ```ts
 * const handler = new ContextGuardCallbackHandler({ guard, sessionId: 'chat-42' });
 * const { messages } = await guard.beforeModel({ sessionId: 'chat-42', modelId, messages: toGuardMessages(history) });
 * const reply = await model.invoke(fromGuardMessages(messages), { callbacks: [handler] });
 * ```
 *
 * Runs tagged `context-guard-summarizer` (the guard's own summaries) are skipped.
 */
export class ContextGuardCallbackHandler extends BaseCallbackHandler {
  name = 'ContextGuardCallbackHandler';
  /** Awaited, so that the next call's estimate already has this call's real count. */
  override awaitHandlers = true;
  override raiseError = false;
  // Only model runs matter: LangChain skips the other events for this handler.
  override ignoreChain = true;
  override ignoreAgent = true;
  override ignoreRetriever = true;
  override ignoreCustomEvent = true;

  readonly guard: ContextGuard;
  readonly sessionId: ContextGuardCallbackHandlerOptions['sessionId'];
  /** Runs seen starting, until they end: what a session function needs. Shared with copies. */
  readonly runs: LRUCache<string, LLMRunInfo>;

  constructor(options: ContextGuardCallbackHandlerOptions) {
    super();
    this.guard = options.guard;
    this.sessionId = options.sessionId;
    // LangChain's `copy()` passes the handler itself as the options: the copy shares the runs.
    const shared = (options as Partial<ContextGuardCallbackHandler>).runs;
    this.runs = shared instanceof LRUCache ? shared : new LRUCache(atMostEntries(MAX_RUNS));
  }

  private remember(info: LLMRunInfo): void {
    // A fixed session id needs nothing from the run.
    if (typeof this.sessionId === 'string') return;
    this.runs.set(info.runId, info);
  }

  /**
   * The run that ended, forgotten; undefined for the guard's own summarizer runs, which are not the session's prompt.
   */
  private ended(runId: string, parentRunId: string | undefined, tags: string[] | undefined): LLMRunInfo | undefined {
    const info = this.runs.peek(runId) ?? runInfo(runId, parentRunId, tags);
    this.runs.delete(runId);
    return (tags ?? info.tags).includes(SUMMARIZER_TAG) ? undefined : info;
  }

  override handleChatModelStart(
    ...[, messages, runId, parentRunId, , tags, metadata]: StartArgs<BaseMessage[][]>
  ): void {
    this.remember({ ...runInfo(runId, parentRunId, tags, metadata), messages: messages?.[0] ?? [] });
  }

  override handleLLMStart(...[, , runId, parentRunId, , tags, metadata]: StartArgs<string[]>): void {
    this.remember(runInfo(runId, parentRunId, tags, metadata));
  }

  /**
   * A context-length rejection is recorded as the guard's adapters record it (the provider's count,
   * a compaction requested), so that your loop's next beforeModel compacts before you retry.
   */
  override async handleLLMError(error: unknown, runId: string, parentRunId?: string, tags?: string[]): Promise<void> {
    try {
      const info = this.ended(runId, parentRunId, tags);
      if (!info || !isContextLengthError(error)) return;
      const sessionId = this.resolveSession(info, 'recoverFromOverflow');
      if (sessionId) await this.guard.recoverFromOverflow({ sessionId, error });
    } catch {
      // Never into the model call: recoverFromOverflow reports its own problems as events.
    }
  }

  override async handleLLMEnd(output: LLMResult, runId: string, parentRunId?: string, tags?: string[]): Promise<void> {
    try {
      const info = this.ended(runId, parentRunId, tags);
      const sessionId = info && this.resolveSession(info, 'afterModel');
      if (!sessionId) return;
      await this.guard.afterModel({ sessionId, usage: usageFromLLMResult(output) ?? null });
    } catch {
      // Never into the model call: afterModel reports its own problems as events.
    }
  }

  private resolveSession(info: LLMRunInfo, stage: ErrorEvent['stage']): string | undefined {
    return resolveSessionId({
      option: this.sessionId,
      context: info,
      hostId: info.metadata['thread_id'],
      derive: () => (info.messages ? deriveSessionId(toGuardMessages(info.messages)) : undefined),
      onError: (error) => reportAdapterError(this.guard, { stage, error }),
    });
  }
}
