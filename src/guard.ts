// createContextGuard: the orchestration of one model call. beforeModel measures the prompt with the
// session's memo applied (call.ts, prepare.ts), decides, compacts when it must (compact.ts) and
// records what it sends; afterModel folds the provider's real count into the calibration (usage.ts).
// State goes through the session repository (state/repository.ts). Nothing here ever throws into
// the host agent: failures become events, and a call that fails inside the guard fails closed.
import type {
  AfterModelInput,
  BeforeModelInput,
  BeforeModelResult,
  CompactOptions,
  ContextGuard,
  RecoverFromOverflowInput,
  RecoverFromOverflowResult,
} from './api.ts';
import { CallResolver, contextWindowFor, hostKey, type Call } from './call.ts';
import { resolveOptions, type ContextGuardOptions, type ResolvedOptions } from './config.ts';
import { compact, compactionRequest, type CompactionEnv, type CompactionOutcome } from './compact.ts';
import { CircuitBreaker } from './compaction/summarize.ts';
import type { ContextGuardEvent, ErrorEvent, UsageIgnoredEvent } from './events.ts';
import type { GuardMessage } from './messages.ts';
import { isContextLengthError, promptTokensFromError } from './overflow.ts';
import { needsCompaction, PairingProgress, prepare, type Prepared } from './prepare.ts';
import { CheckedInputs, failClosedPrompt, validMessages } from './safety.ts';
import { SessionRepository } from './state/repository.ts';
import type { SessionState, SessionStatus } from './state/session.ts';
import { recordRealCount, resetCalibration } from './tokens/calibration.ts';
import { PromptMeasurer } from './tokens/prompt-measure.ts';
import { judgeUsage, usageShapeProblem } from './usage.ts';

export type * from './api.ts';

export function createContextGuard(options: ContextGuardOptions = {}): ContextGuard {
  return new Guard(resolveOptions(options));
}

class Guard implements ContextGuard {
  readonly options: Readonly<ResolvedOptions>;
  private readonly sessions: SessionRepository;
  private readonly resolver: CallResolver;
  private readonly measurer: PromptMeasurer;
  private readonly checkedInputs: CheckedInputs;
  private readonly pairing: PairingProgress;
  private readonly compaction: CompactionEnv;
  /** A compaction may hold its lock for all its summarizer calls, with room. */
  private readonly lockTtlMs: number;

  constructor(resolved: ResolvedOptions) {
    this.options = resolved;
    this.sessions = new SessionRepository({
      store: resolved.store,
      maxSessions: resolved.maxSessions,
      storeTimeoutMs: resolved.storeTimeoutMs,
      onStoreFailed: (event) => this.emit({ type: 'store-failed', ...event }),
    });
    this.resolver = new CallResolver(resolved, this.emit);
    this.measurer = new PromptMeasurer(resolved.maxSessions);
    this.checkedInputs = new CheckedInputs(resolved.maxSessions);
    this.pairing = new PairingProgress(resolved.maxSessions);
    // One breaker per guard: a failing summarizer fails for every session.
    this.compaction = {
      options: resolved,
      emit: this.emit,
      breaker: new CircuitBreaker(resolved.circuitBreaker.failures, resolved.circuitBreaker.cooldownMs),
    };
    this.lockTtlMs = Math.max(30_000, resolved.compactionTimeoutMs + 10_000);
  }

  readonly beforeModel = async (input: BeforeModelInput): Promise<BeforeModelResult> => {
    const raw: readonly unknown[] = Array.isArray(input?.messages) ? input.messages : [];
    const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
    let messages = raw as readonly GuardMessage[];
    try {
      if (!sessionId) throw new TypeError('beforeModel: `sessionId` must be a non-empty string');
      if (!Array.isArray(input.messages)) throw new TypeError('beforeModel: `messages` must be an array');
      const checked = this.checkedInputs.check(sessionId, raw);
      messages = checked.messages;
      if (checked.dropped.length > 0)
        this.emit({ type: 'invalid-messages', sessionId, indices: checked.dropped, reasons: checked.reasons });
      return await this.sessions.run(sessionId, () => this.beforeModelLocked({ ...input, messages }));
    } catch (error) {
      this.emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'beforeModel', error });
      return this.failClosed(input, messages);
    }
  };

  readonly afterModel = (input: AfterModelInput): Promise<void> =>
    this.guarded('afterModel', input?.sessionId, undefined, (sessionId) => this.recordUsage({ ...input, sessionId }));

  readonly status = async (sessionId: string): Promise<SessionStatus | undefined> => {
    try {
      const state = await this.sessions.load(sessionId);
      return state.status ? { sessionId, ...state.status } : undefined;
    } catch (error) {
      this.emit({ type: 'error', sessionId, stage: 'status', error });
      return undefined;
    }
  };

  readonly compact = (sessionId: string, options: CompactOptions = {}): Promise<void> =>
    this.guarded('compact', sessionId, undefined, async (id) => {
      const focus = typeof options?.focus === 'string' && options.focus.trim() ? options.focus.trim() : undefined;
      const state = await this.sessions.load(id);
      await this.sessions.commit(id, state, (current) => ({
        ...current,
        compactRequest: focus !== undefined ? { focus } : {},
      }));
    });

  readonly recoverFromOverflow = (input: RecoverFromOverflowInput): Promise<RecoverFromOverflowResult> =>
    this.guarded('recoverFromOverflow', input?.sessionId, { retry: false }, async (sessionId) => {
      if (!isContextLengthError(input.error)) return { retry: false };
      // The provider's count is a real count of the rejected prompt; then the next beforeModel compacts.
      const reportedTokens = promptTokensFromError(input.error);
      if (reportedTokens !== undefined) await this.recordUsage({ sessionId, usage: { inputTokens: reportedTokens } });
      const state = await this.sessions.load(sessionId);
      await this.sessions.commit(sessionId, state, (current) => ({
        ...current,
        compactRequest: current.compactRequest ?? {},
      }));
      const reported = reportedTokens !== undefined ? { reportedTokens } : {};
      this.emit({ type: 'overflow-retry', sessionId, ...reported });
      return { retry: true, ...reported };
    });

  readonly contextWindowFor: ContextGuard['contextWindowFor'] = (query) => contextWindowFor(this.options, query ?? {});

  readonly reportError: ContextGuard['reportError'] = ({ sessionId, stage, error }) =>
    this.emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage, error });

  readonly reset = async (sessionId: string): Promise<void> => {
    for (const key of [sessionId, hostKey(sessionId), `${sessionId}\u0000apart`]) this.measurer.forget(key);
    this.checkedInputs.forget(sessionId);
    this.pairing.forget(sessionId);
    await this.sessions.delete(sessionId);
  };

  /** Estimate → decide → compact → record, as the session's only call in this process. */
  private async beforeModelLocked(input: BeforeModelInput): Promise<BeforeModelResult> {
    const call = await this.resolver.call(this.measurer, input);
    let state = await this.sessions.load(call.sessionId);
    let p = prepare(call, state, this.options.calibration, this.pairing);
    this.reportEstimate(call, p, input.modelId);
    let outcome: CompactionOutcome | undefined;
    let attempted = false;
    if (needsCompaction(call, state, p)) {
      // Across processes, one compaction per session at a time: the others wait for its result and
      // use it (the summary is in the shared state when they read it again); they give up after
      // two summarizer timeouts and compact on their own.
      const { release } = await this.sessions.lockCompaction(
        call.sessionId,
        this.lockTtlMs,
        this.options.summarizerTimeoutMs * 2,
        async () => {
          state = await this.sessions.load(call.sessionId);
          p = prepare(call, state, this.options.calibration, this.pairing);
          return needsCompaction(call, state, p);
        },
      );
      try {
        attempted = needsCompaction(call, state, p);
        if (attempted) outcome = await compact(call, compactionRequest(state, p, input.signal), this.compaction);
      } finally {
        await release?.();
      }
    }
    return this.record(call, state, p, outcome, attempted);
  }

  private reportEstimate(call: Call, p: Prepared, modelId: string | undefined): void {
    const { sessionId, contextWindow, threshold } = call;
    const { unansweredCalls, orphanResults } = p.view;
    if (unansweredCalls + orphanResults > 0)
      this.emit({ type: 'tool-pairing-repaired', sessionId, unansweredCalls, orphanResults });
    const fraction = contextWindow === undefined ? 0 : p.est.tokens / contextWindow;
    const { tokens, heuristicTokens, correction, method } = p.est;
    const window = contextWindow === undefined ? {} : { threshold, contextWindow, fraction };
    this.emit({
      type: 'estimate',
      sessionId,
      ...(modelId ? { modelId } : {}),
      tokens,
      heuristicTokens,
      correction,
      method,
      ...window,
      messages: p.view.messages.length,
    });
    const warnAt = this.options.warnAt;
    if (contextWindow !== undefined && fraction >= warnAt)
      this.emit({ type: 'warning', sessionId, tokens, threshold, contextWindow, fraction, warnAt });
  }

  /** Stores what this call sends (the request waiting for its real count) and what it changed, then answers. */
  private async record(
    call: Call,
    state: SessionState,
    p: Prepared,
    outcome: CompactionOutcome | undefined,
    attempted: boolean,
  ): Promise<BeforeModelResult> {
    const { sessionId, contextWindow, threshold } = call;
    const messages = outcome?.messages ?? p.view.messages;
    const tokens = outcome?.tokens ?? p.est.tokens;
    const { chars, mediaTokens, toolChars, prompt } = outcome ? call.measure(messages) : p.measured;
    const pending = {
      chars,
      mediaTokens,
      toolChars,
      prompt,
      extendsAnchor: outcome ? false : p.extendsAnchor,
      estimatedTokens: tokens,
    };
    // This call's memo wins when it compacted or changed the stored one (a stale summary dropped, a
    // request sent whole again); otherwise what is stored is kept (another process may have compacted).
    const changed = (state.memo?.summary !== undefined && !p.summaryApplies) || p.memoChanged === true;
    await this.sessions.commit(sessionId, state, (current) => {
      const { compactRequest, memo: currentMemo, ...rest } = current;
      const memo = outcome?.memo ?? (changed ? p.memo : currentMemo);
      const calibration = outcome
        ? resetCalibration(current.calibration, outcome.calibration.reference?.offset ?? 0)
        : current.calibration;
      const status =
        contextWindow === undefined
          ? {}
          : {
              status: {
                tokens,
                source: 'estimate' as const,
                threshold,
                contextWindow,
                fraction: tokens / contextWindow,
              },
            };
      const request = compactRequest && !attempted ? { compactRequest } : {};
      return {
        ...rest,
        ...(memo ? { memo } : {}),
        ...request,
        calls: current.calls + 1,
        calibration: { ...calibration, pending },
        ...status,
      };
    });
    if (outcome) await this.afterCompact(sessionId, outcome, messages);
    const over = contextWindow !== undefined && tokens > threshold ? { overflow: true } : {};
    const fraction = contextWindow === undefined ? 0 : tokens / contextWindow;
    return {
      messages,
      tokens,
      threshold,
      contextWindow,
      fraction,
      ...(outcome ? { compaction: outcome.result } : {}),
      ...over,
    };
  }

  private async afterCompact(sessionId: string, outcome: CompactionOutcome, messages: GuardMessage[]): Promise<void> {
    try {
      await this.options.afterCompact?.({ sessionId, result: outcome.result, messages });
    } catch (error) {
      this.emit({ type: 'error', sessionId, stage: 'afterCompact', error });
    }
  }

  /** afterModel: the real count, judged against the request waiting for it, folded into the calibration. */
  private async recordUsage({ sessionId, usage }: AfterModelInput): Promise<void> {
    const ignore = (reason: UsageIgnoredEvent['reason'], extra = {}) =>
      this.emit({ type: 'usage-ignored', sessionId, reason, usage, ...extra });
    const shape = usageShapeProblem(usage);
    if (shape || !usage) return ignore(shape ?? 'missing');
    const state = await this.sessions.load(sessionId);
    const pending = state.calibration.pending;
    if (!pending) return ignore('no-request');
    const verdict = judgeUsage(usage, pending, this.options.calibration, state.status?.contextWindow);
    if (!verdict.ok) return ignore(verdict.reason, verdict.plausible ? { plausible: verdict.plausible } : {});
    if (verdict.outputIgnored) ignore('invalid-output-tokens');
    const { inputTokens, outputTokens } = verdict;
    const tokens = inputTokens + (outputTokens ?? 0);
    let recorded: typeof pending | undefined;
    await this.sessions.commit(sessionId, state, (current) => {
      // Applied to the freshest state: the request waiting for this count is the stored one.
      recorded = current.calibration.pending;
      if (!recorded) return current;
      const status = current.status
        ? {
            status: {
              ...current.status,
              tokens,
              source: 'provider' as const,
              fraction: tokens / current.status.contextWindow,
            },
          }
        : {};
      const calibration = recordRealCount(
        current.calibration,
        recorded,
        inputTokens,
        outputTokens,
        this.options.calibration,
      );
      return { ...current, usageRecorded: current.usageRecorded + 1, calibration, ...status };
    });
    if (!recorded) return ignore('no-request');
    const { estimatedTokens } = recorded as typeof pending;
    const output = outputTokens !== undefined ? { outputTokens } : {};
    this.emit({
      type: 'usage-recorded',
      sessionId,
      inputTokens,
      ...output,
      estimatedTokens,
      relativeError: (estimatedTokens - inputTokens) / inputTokens,
    });
  }

  /** A call that failed inside the guard: never the raw input, the smallest prompt that fits (unguarded only without any window). */
  private failClosed(input: BeforeModelInput | undefined, messages: readonly GuardMessage[]): BeforeModelResult {
    const sessionId = input?.sessionId ?? '';
    let contextWindow = this.options.contextWindow;
    try {
      contextWindow = this.resolver.window(sessionId, input?.modelId, input?.contextWindow);
    } catch {
      // The configured window, if any: resolving it again is what failed.
    }
    const threshold =
      contextWindow === undefined ? Number.POSITIVE_INFINITY : this.resolver.threshold(sessionId, contextWindow);
    const sent = failClosedPrompt(validMessages(messages).messages, threshold, this.options.calibration.default);
    return { ...sent, threshold, contextWindow, fraction: contextWindow ? sent.tokens / contextWindow : 0 };
  }

  /** Runs a guard operation as the session's only one, turning any failure into an `error` event. */
  private async guarded<T>(
    stage: ErrorEvent['stage'],
    sessionId: unknown,
    fallback: T,
    task: (id: string) => Promise<T>,
  ): Promise<T> {
    const id = typeof sessionId === 'string' ? sessionId : '';
    try {
      if (!id) throw new TypeError(`${stage}: \`sessionId\` must be a non-empty string`);
      return await this.sessions.run(id, () => task(id));
    } catch (error) {
      this.emit({ type: 'error', ...(id ? { sessionId: id } : {}), stage, error });
      return fallback;
    }
  }

  private readonly emit = (event: ContextGuardEvent): void => {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A logging callback must never break the agent it observes.
    }
  };
}
