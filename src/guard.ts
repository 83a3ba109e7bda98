// createContextGuard: the orchestration of one model call. beforeModel measures the prompt,
// estimates its real cost from the session's calibration and compares it with the threshold;
// afterModel folds the provider's real count back into the calibration. Neither ever throws into
// the host agent: failures become events and the call goes on unchanged.
import { resolveOptions, thresholdFor, type ContextGuardOptions, type ResolvedOptions } from './config.ts';
import type { ContextGuardEvent } from './events.ts';
import type { GuardMessage, ToolDefinition } from './messages.ts';
import { KeyedLock } from './state/lock.ts';
import { MemoryStore } from './state/memory.ts';
import { emptySessionState, type SessionState, type SessionStatus } from './state/session.ts';
import type { StateStore } from './state/store.ts';
import { estimate, recordRealCount } from './tokens/calibration.ts';
import { CHARACTER_MEASURE, encodingFor, textMeasure, type TextMeasure } from './tokens/exact.ts';
import { mediaProviderForModel } from './tokens/media.ts';
import { extendsPrompt, PromptMeasurer } from './tokens/prompt-measure.ts';
import { resolveModelInfo } from './tokens/windows.ts';

export interface BeforeModelInput {
  /** Identifies the conversation: calibration and summaries are per session. */
  sessionId: string;
  /** Resolves the window when `contextWindow` is not set, and the media pricing. */
  modelId?: string;
  messages: readonly GuardMessage[];
  /** Function-tool definitions sent with the call; they count toward the prompt. */
  tools?: readonly ToolDefinition[];
}

export interface BeforeModelResult {
  /** The messages to send. The input array is never mutated. */
  messages: GuardMessage[];
  /** Calibrated estimate of what `messages` + `tools` will cost. */
  tokens: number;
  /** window − buffer; `Infinity` when no window is known for the model (see `config-error`). */
  threshold: number;
  /** Undefined when no window is known for the model. */
  contextWindow: number | undefined;
  /** tokens / contextWindow (0 when no window is known). */
  fraction: number;
}

export interface ModelUsage {
  /**
   * The prompt's total input tokens, cached tokens included (the AI SDK's
   * `usage.inputTokens.total`, LangChain's `usage_metadata.input_tokens`).
   */
  inputTokens: number;
  outputTokens?: number;
  /**
   * Cached tokens a provider reports *apart from* `inputTokens` (Anthropic's raw
   * `cache_read_input_tokens` / `cache_creation_input_tokens`): added to it. Leave them out when
   * `inputTokens` already includes them.
   */
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

export interface AfterModelInput {
  sessionId: string;
  /** Usage as the provider reported it; missing or malformed usage is ignored with an event. */
  usage: ModelUsage | undefined | null;
}

export interface ContextGuard {
  beforeModel(input: BeforeModelInput): Promise<BeforeModelResult>;
  afterModel(input: AfterModelInput): Promise<void>;
  /** What a UI shows: tokens, threshold and fraction of the window; undefined for an unknown session. */
  status(sessionId: string): Promise<SessionStatus | undefined>;
  /** Drops a session's state (its calibration and cached measures). */
  reset(sessionId: string): Promise<void>;
  /** The validated options with their defaults. */
  readonly options: Readonly<ResolvedOptions>;
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

export function createContextGuard(options: ContextGuardOptions = {}): ContextGuard {
  const resolved = resolveOptions(options);
  const store: StateStore<SessionState> = resolved.store ?? new MemoryStore<SessionState>({ maxSessions: resolved.maxSessions });
  const measurer = new PromptMeasurer(resolved.maxSessions);
  const lock = new KeyedLock();
  const reportedModels = new Set<string>();

  const emit = (event: ContextGuardEvent): void => {
    if (!resolved.onEvent) return;
    try {
      resolved.onEvent(event);
    } catch {
      // A logging callback must never break the agent it observes.
    }
  };

  async function load(sessionId: string): Promise<SessionState> {
    try {
      return (await store.get(sessionId)) ?? emptySessionState();
    } catch (error) {
      emit({ type: 'error', sessionId, stage: 'store', error });
      return emptySessionState();
    }
  }

  async function save(sessionId: string, state: SessionState): Promise<void> {
    try {
      await store.set(sessionId, state);
    } catch (error) {
      emit({ type: 'error', sessionId, stage: 'store', error });
    }
  }

  /** The window of this call, or undefined (reported once per model) when none is known. */
  function windowFor(sessionId: string, modelId: string | undefined): number | undefined {
    if (resolved.contextWindow !== undefined) return resolved.contextWindow;
    const window = modelId ? resolveModelInfo(modelId, resolved.models)?.contextWindow : undefined;
    if (window !== undefined) return window;
    const key = modelId ?? '';
    if (!reportedModels.has(key)) {
      reportedModels.add(key);
      emit({
        type: 'config-error',
        sessionId,
        field: 'contextWindow',
        ...(modelId ? { modelId } : {}),
        message: modelId
          ? `no context window is known for model "${modelId}": set \`contextWindow\` or add it to \`models\`; the prompt is passed through unguarded`
          : 'no `contextWindow` is set and the call has no `modelId`; the prompt is passed through unguarded',
      });
    }
    return undefined;
  }

  function thresholdOf(sessionId: string, window: number): number {
    const threshold = thresholdFor(window, resolved.buffer);
    if (threshold > 0) return threshold;
    // A fixed buffer larger than a (registry-resolved) window: keep the default fraction instead.
    emit({ type: 'config-warning', sessionId, field: 'buffer', message: `buffer leaves no room in a ${window}-token window; using 20% of the window` });
    return thresholdFor(window, undefined);
  }

  /** How this call's text is measured; characters when the tokenizer cannot load (reported once). */
  let tokenizerReported = false;
  async function textMeasureFor(sessionId: string, modelId: string | undefined): Promise<TextMeasure> {
    const encoding = encodingFor(resolved.exactCounting, modelId, resolved.models);
    try {
      return await textMeasure(encoding);
    } catch (error) {
      if (!tokenizerReported) {
        tokenizerReported = true;
        emit({ type: 'config-warning', sessionId, field: 'exactCounting', message: `gpt-tokenizer (${encoding}) could not be loaded, counting characters instead: ${String(error)}` });
      }
      return CHARACTER_MEASURE;
    }
  }

  async function beforeModelLocked(input: BeforeModelInput): Promise<BeforeModelResult> {
    const { sessionId, modelId, tools } = input;
    const messages = input.messages.slice();
    const contextWindow = windowFor(sessionId, modelId);
    const threshold = contextWindow === undefined ? Number.POSITIVE_INFINITY : thresholdOf(sessionId, contextWindow);

    const text = await textMeasureFor(sessionId, modelId);
    const measured = measurer.measure(sessionId, messages, tools, mediaProviderForModel(modelId), text);
    const state = await load(sessionId);
    const anchor = state.calibration.anchor;
    const extendsAnchor = anchor !== undefined && extendsPrompt(measured, anchor.prompt);
    const response = extendsAnchor ? measured.entries[anchor.prompt.messages] : undefined;
    const est = estimate(
      measured,
      state.calibration,
      resolved.calibration,
      extendsAnchor ? { responseChars: response?.message.role === 'assistant' ? response.chars : undefined } : undefined,
    );
    const fraction = contextWindow === undefined ? 0 : est.tokens / contextWindow;

    emit({
      type: 'estimate',
      sessionId,
      ...(modelId ? { modelId } : {}),
      tokens: est.tokens,
      heuristicTokens: est.heuristicTokens,
      correction: est.correction,
      method: est.method,
      ...(contextWindow === undefined ? {} : { threshold, contextWindow, fraction }),
      messages: messages.length,
    });
    if (contextWindow !== undefined && fraction >= resolved.warnAt) {
      emit({ type: 'warning', sessionId, tokens: est.tokens, threshold, contextWindow, fraction, warnAt: resolved.warnAt });
    }

    const { chars, mediaTokens, toolChars, prompt } = measured;
    await save(sessionId, {
      ...state,
      calls: state.calls + 1,
      calibration: { ...state.calibration, pending: { chars, mediaTokens, toolChars, prompt, extendsAnchor, estimatedTokens: est.tokens } },
      ...(contextWindow === undefined
        ? {}
        : { status: { tokens: est.tokens, source: 'estimate' as const, threshold, contextWindow, fraction } }),
    });
    return { messages, tokens: est.tokens, threshold, contextWindow, fraction };
  }

  async function afterModelLocked({ sessionId, usage }: AfterModelInput): Promise<void> {
    if (usage === undefined || usage === null || typeof usage !== 'object') {
      emit({ type: 'usage-ignored', sessionId, reason: 'missing', usage });
      return;
    }
    const extra = [usage.cacheReadInputTokens, usage.cacheWriteInputTokens].filter((n) => n !== undefined);
    // Zero is no real count either: no prompt costs nothing, and some providers report 0 when unknown.
    if (!isCount(usage.inputTokens) || usage.inputTokens === 0 || !extra.every(isCount)) {
      emit({ type: 'usage-ignored', sessionId, reason: 'invalid-input-tokens', usage });
      return;
    }
    const outputValid = usage.outputTokens === undefined || isCount(usage.outputTokens);
    if (!outputValid) emit({ type: 'usage-ignored', sessionId, reason: 'invalid-output-tokens', usage });
    const outputTokens = outputValid ? usage.outputTokens : undefined;
    const inputTokens = usage.inputTokens + (extra as number[]).reduce((a, b) => a + b, 0);

    const state = await load(sessionId);
    const pending = state.calibration.pending;
    if (!pending) {
      emit({ type: 'usage-ignored', sessionId, reason: 'no-request', usage });
      return;
    }
    emit({
      type: 'usage-recorded',
      sessionId,
      inputTokens,
      ...(outputTokens !== undefined ? { outputTokens } : {}),
      estimatedTokens: pending.estimatedTokens,
      relativeError: (pending.estimatedTokens - inputTokens) / inputTokens,
    });
    const tokens = inputTokens + (outputTokens ?? 0);
    await save(sessionId, {
      ...state,
      usageRecorded: state.usageRecorded + 1,
      calibration: recordRealCount(state.calibration, pending, inputTokens, outputTokens, resolved.calibration),
      ...(state.status
        ? { status: { ...state.status, tokens, source: 'provider' as const, fraction: tokens / state.status.contextWindow } }
        : {}),
    });
  }

  return {
    options: resolved,

    async beforeModel(input) {
      const messages = Array.isArray(input?.messages) ? input.messages : [];
      const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
      try {
        if (!sessionId) throw new TypeError('beforeModel: `sessionId` must be a non-empty string');
        if (!Array.isArray(input.messages)) throw new TypeError('beforeModel: `messages` must be an array');
        return await lock.run(sessionId, () => beforeModelLocked(input));
      } catch (error) {
        emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'beforeModel', error });
        return { messages: messages.slice(), tokens: 0, threshold: Number.POSITIVE_INFINITY, contextWindow: undefined, fraction: 0 };
      }
    },

    async afterModel(input) {
      const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
      try {
        if (!sessionId) throw new TypeError('afterModel: `sessionId` must be a non-empty string');
        await lock.run(sessionId, () => afterModelLocked(input));
      } catch (error) {
        emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'afterModel', error });
      }
    },

    async status(sessionId) {
      try {
        const state = await store.get(sessionId);
        return state?.status ? { sessionId, ...state.status } : undefined;
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'status', error });
        return undefined;
      }
    },

    async reset(sessionId) {
      measurer.forget(sessionId);
      try {
        await store.delete(sessionId);
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'store', error });
      }
    },
  };
}
