// createContextGuard: the orchestration of one model call. beforeModel measures the prompt with
// the session's memo applied (call.ts, prepare.ts), decides, compacts when it must
// (compaction/compact.ts) and records what it sends; afterModel folds the provider's real count
// back into the calibration (usage.ts). State goes through the session repository
// (state/repository.ts). Nothing here ever throws into the host agent: failures become events,
// and a call that fails inside the guard fails closed (safety.ts).
import type { AfterModelInput, BeforeModelInput, BeforeModelResult, ContextGuard } from './api.ts';
import { CallResolver, hostKey, type Call } from './call.ts';
import { resolveOptions, type ContextGuardOptions } from './config.ts';
import { compact, type CompactionOutcome } from './compaction/compact.ts';
import { emptyMemo } from './compaction/memo.ts';
import { CircuitBreaker } from './compaction/summarize.ts';
import type { ContextGuardEvent } from './events.ts';
import type { GuardMessage } from './messages.ts';
import { isContextLengthError, promptTokensFromError } from './overflow.ts';
import { needsCompaction, PairingProgress, prepare, type Prepared } from './prepare.ts';
import { CheckedInputs, failClosedPrompt, validMessages } from './safety.ts';
import { SessionRepository } from './state/repository.ts';
import type { SessionState } from './state/session.ts';
import { recordRealCount, resetCalibration } from './tokens/calibration.ts';
import { PromptMeasurer } from './tokens/prompt-measure.ts';
import { judgeUsage, usageShapeProblem } from './usage.ts';

export type {
  AfterModelInput,
  BeforeModelInput,
  BeforeModelResult,
  CompactOptions,
  ContextGuard,
  ModelUsage,
  RecoverFromOverflowInput,
  RecoverFromOverflowResult,
} from './api.ts';

export function createContextGuard(options: ContextGuardOptions = {}): ContextGuard {
  const resolved = resolveOptions(options);
  const emit = (event: ContextGuardEvent): void => {
    try {
      resolved.onEvent?.(event);
    } catch {
      // A logging callback must never break the agent it observes.
    }
  };
  const sessions = new SessionRepository({
    store: resolved.store,
    maxSessions: resolved.maxSessions,
    storeTimeoutMs: resolved.storeTimeoutMs,
    onStoreFailed: (event) => emit({ type: 'store-failed', ...event }),
  });
  const resolver = new CallResolver(resolved, emit);
  const measurer = new PromptMeasurer(resolved.maxSessions);
  const checkedInputs = new CheckedInputs(resolved.maxSessions);
  const pairing = new PairingProgress(resolved.maxSessions);
  const compaction = { options: resolved, emit, breaker: new CircuitBreaker(resolved.circuitBreaker.failures, resolved.circuitBreaker.cooldownMs) };
  // A compaction may hold its lock for all its summarizer calls, with room; waiters give up after
  // two summarizer timeouts and compact on their own.
  const lockTtlMs = Math.max(30_000, resolved.compactionTimeoutMs + 10_000);
  const lockWaitMs = resolved.summarizerTimeoutMs * 2;

  async function beforeModelLocked(input: BeforeModelInput): Promise<BeforeModelResult> {
    const call = await resolver.call(measurer, input);
    let state = await sessions.load(call.sessionId);
    let p = prepare(call, state, resolved.calibration, pairing);
    reportEstimate(call, p, input.modelId);
    let outcome: CompactionOutcome | undefined;
    let attempted = false;
    if (needsCompaction(call, state, p)) {
      // Across processes, one compaction per session at a time: the others wait for its result and
      // use it (the summary is in the shared state when they read it again).
      const { release } = await sessions.lockCompaction(call.sessionId, lockTtlMs, lockWaitMs, async () => {
        state = await sessions.load(call.sessionId);
        p = prepare(call, state, resolved.calibration, pairing);
        return needsCompaction(call, state, p);
      });
      try {
        attempted = needsCompaction(call, state, p);
        if (attempted) outcome = await compactNow(call, state, p, input.signal);
      } finally {
        await release?.();
      }
    }
    return record(call, state, p, outcome, attempted);
  }

  function compactNow(call: Call, state: SessionState, p: Prepared, signal: AbortSignal | undefined): Promise<CompactionOutcome | undefined> {
    const request = state.compactRequest;
    return compact(
      call,
      {
        // A requested compaction (the compact tool, an overflow retry) summarizes even when pruning would do.
        reason: request ? 'manual' : 'threshold',
        focus: request?.focus,
        signal,
        view: p.view,
        tokens: p.est.tokens,
        memo: p.memo ?? emptyMemo(),
        summaryApplies: p.summaryApplies,
        calibration: state.calibration,
        usageRecorded: state.usageRecorded,
      },
      compaction,
    );
  }

  function reportEstimate(call: Call, p: Prepared, modelId: string | undefined): void {
    const { sessionId, contextWindow, threshold } = call;
    const { unansweredCalls, orphanResults } = p.view;
    if (unansweredCalls + orphanResults > 0) emit({ type: 'tool-pairing-repaired', sessionId, unansweredCalls, orphanResults });
    const fraction = contextWindow === undefined ? 0 : p.est.tokens / contextWindow;
    const { tokens, heuristicTokens, correction, method } = p.est;
    const window = contextWindow === undefined ? {} : { threshold, contextWindow, fraction };
    emit({ type: 'estimate', sessionId, ...(modelId ? { modelId } : {}), tokens, heuristicTokens, correction, method, ...window, messages: p.view.messages.length });
    if (contextWindow !== undefined && fraction >= resolved.warnAt) emit({ type: 'warning', sessionId, tokens, threshold, contextWindow, fraction, warnAt: resolved.warnAt });
  }

  /** Stores what this call sends (the request waiting for its real count) and what it changed, then answers. */
  async function record(call: Call, state: SessionState, p: Prepared, outcome: CompactionOutcome | undefined, attempted: boolean): Promise<BeforeModelResult> {
    const { sessionId, contextWindow, threshold } = call;
    const messages = outcome?.messages ?? p.view.messages;
    const tokens = outcome?.tokens ?? p.est.tokens;
    const { chars, mediaTokens, toolChars, prompt } = outcome ? call.measure(messages) : p.measured;
    const pending = { chars, mediaTokens, toolChars, prompt, extendsAnchor: outcome ? false : p.extendsAnchor, estimatedTokens: tokens };
    // This call's memo wins when it compacted or changed the stored one (a stale summary dropped, a
    // request sent whole again); otherwise what is stored is kept (another process may have compacted).
    const changed = (state.memo?.summary !== undefined && !p.summaryApplies) || p.memoChanged === true;
    await sessions.commit(sessionId, state, (current) => {
      const { compactRequest, memo: currentMemo, ...rest } = current;
      const memo = outcome?.memo ?? (changed ? p.memo : currentMemo);
      const calibration = outcome ? resetCalibration(current.calibration, outcome.calibration.reference?.offset ?? 0) : current.calibration;
      const status = contextWindow === undefined ? {} : { status: { tokens, source: 'estimate' as const, threshold, contextWindow, fraction: tokens / contextWindow } };
      const request = compactRequest && !attempted ? { compactRequest } : {};
      return { ...rest, ...(memo ? { memo } : {}), ...request, calls: current.calls + 1, calibration: { ...calibration, pending }, ...status };
    });
    if (outcome && resolved.afterCompact) {
      try {
        await resolved.afterCompact({ sessionId, result: outcome.result, messages });
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'afterCompact', error });
      }
    }
    const over = contextWindow !== undefined && tokens > threshold;
    const fraction = contextWindow === undefined ? 0 : tokens / contextWindow;
    return { messages, tokens, threshold, contextWindow, fraction, ...(outcome ? { compaction: outcome.result } : {}), ...(over ? { overflow: true } : {}) };
  }

  async function afterModelLocked({ sessionId, usage }: AfterModelInput): Promise<void> {
    const shape = usageShapeProblem(usage);
    if (shape || !usage) return emit({ type: 'usage-ignored', sessionId, reason: shape ?? 'missing', usage });
    const state = await sessions.load(sessionId);
    const pending = state.calibration.pending;
    if (!pending) return emit({ type: 'usage-ignored', sessionId, reason: 'no-request', usage });
    const verdict = judgeUsage(usage, pending, resolved.calibration, state.status?.contextWindow);
    if (!verdict.ok) return emit({ type: 'usage-ignored', sessionId, reason: verdict.reason, usage, ...(verdict.plausible ? { plausible: verdict.plausible } : {}) });
    if (verdict.outputIgnored) emit({ type: 'usage-ignored', sessionId, reason: 'invalid-output-tokens', usage });
    const { inputTokens, outputTokens } = verdict;
    const tokens = inputTokens + (outputTokens ?? 0);
    let recorded: typeof pending | undefined;
    await sessions.commit(sessionId, state, (current) => {
      // Applied to the freshest state: the request waiting for this count is the stored one.
      recorded = current.calibration.pending;
      if (!recorded) return current;
      const status = current.status ? { status: { ...current.status, tokens, source: 'provider' as const, fraction: tokens / current.status.contextWindow } } : {};
      return { ...current, usageRecorded: current.usageRecorded + 1, calibration: recordRealCount(current.calibration, recorded, inputTokens, outputTokens, resolved.calibration), ...status };
    });
    if (!recorded) return emit({ type: 'usage-ignored', sessionId, reason: 'no-request', usage });
    const { estimatedTokens } = recorded as typeof pending;
    emit({ type: 'usage-recorded', sessionId, inputTokens, ...(outputTokens !== undefined ? { outputTokens } : {}), estimatedTokens, relativeError: (estimatedTokens - inputTokens) / inputTokens });
  }

  /** A call that failed inside the guard: never the raw input, the smallest prompt that fits (unguarded only without any window). */
  function failClosed(input: BeforeModelInput | undefined, messages: readonly GuardMessage[]): BeforeModelResult {
    const valid = validMessages(messages).messages;
    let contextWindow: number | undefined;
    try {
      contextWindow = resolver.window(input?.sessionId ?? '', input?.modelId, input?.contextWindow);
    } catch {
      contextWindow = resolved.contextWindow;
    }
    if (contextWindow === undefined) return { messages: valid.slice(), tokens: 0, threshold: Number.POSITIVE_INFINITY, contextWindow, fraction: 0 };
    const threshold = resolver.threshold(input?.sessionId ?? '', contextWindow);
    const sent = failClosedPrompt(valid, threshold, resolved.calibration.default);
    return { ...sent, threshold, contextWindow, fraction: sent.tokens / contextWindow };
  }

  /** Runs a guard operation as the session's only one, turning any failure into an `error` event. */
  async function guarded<T>(stage: 'afterModel' | 'compact' | 'recoverFromOverflow', sessionId: unknown, fallback: T, task: (id: string) => Promise<T>): Promise<T> {
    const id = typeof sessionId === 'string' ? sessionId : '';
    try {
      if (!id) throw new TypeError(`${stage}: \`sessionId\` must be a non-empty string`);
      return await sessions.run(id, () => task(id));
    } catch (error) {
      emit({ type: 'error', ...(id ? { sessionId: id } : {}), stage, error });
      return fallback;
    }
  }

  return {
    options: resolved,

    async beforeModel(input) {
      const raw: readonly unknown[] = Array.isArray(input?.messages) ? input.messages : [];
      const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
      let messages = raw as readonly GuardMessage[];
      try {
        if (!sessionId) throw new TypeError('beforeModel: `sessionId` must be a non-empty string');
        if (!Array.isArray(input.messages)) throw new TypeError('beforeModel: `messages` must be an array');
        const checked = checkedInputs.check(sessionId, raw);
        messages = checked.messages;
        if (checked.dropped.length > 0) emit({ type: 'invalid-messages', sessionId, indices: checked.dropped, reasons: checked.reasons });
        return await sessions.run(sessionId, () => beforeModelLocked({ ...input, messages }));
      } catch (error) {
        emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'beforeModel', error });
        return failClosed(input, messages);
      }
    },

    afterModel: (input) => guarded('afterModel', input?.sessionId, undefined, (sessionId) => afterModelLocked({ ...input, sessionId })),

    async status(sessionId) {
      try {
        const state = await sessions.load(sessionId);
        return state.status ? { sessionId, ...state.status } : undefined;
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'status', error });
        return undefined;
      }
    },

    compact: (sessionId, options = {}) =>
      guarded('compact', sessionId, undefined, async (id) => {
        const focus = typeof options?.focus === 'string' && options.focus.trim() ? options.focus.trim() : undefined;
        const state = await sessions.load(id);
        await sessions.commit(id, state, (current) => ({ ...current, compactRequest: focus !== undefined ? { focus } : {} }));
      }),

    recoverFromOverflow: (input) =>
      guarded('recoverFromOverflow', input?.sessionId, { retry: false }, async (sessionId) => {
        if (!isContextLengthError(input.error)) return { retry: false };
        // The provider's count is a real count of the rejected prompt; then the next beforeModel compacts.
        const reportedTokens = promptTokensFromError(input.error);
        if (reportedTokens !== undefined) await afterModelLocked({ sessionId, usage: { inputTokens: reportedTokens } });
        const state = await sessions.load(sessionId);
        await sessions.commit(sessionId, state, (current) => ({ ...current, compactRequest: current.compactRequest ?? {} }));
        const reported = reportedTokens !== undefined ? { reportedTokens } : {};
        emit({ type: 'overflow-retry', sessionId, ...reported });
        return { retry: true, ...reported };
      }),

    async reset(sessionId) {
      for (const key of [sessionId, hostKey(sessionId), `${sessionId}\u0000apart`]) measurer.forget(key);
      checkedInputs.forget(sessionId);
      pairing.forget(sessionId);
      await sessions.delete(sessionId);
    },
  };
}
