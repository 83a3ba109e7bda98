// createContextGuard: the orchestration of one model call. beforeModel checks the input, measures
// the prompt with the session's memo applied and estimates it (call/), decides, compacts when it
// must (compaction/compaction.ts) and records what it sends; afterModel folds the provider's real
// count into the calibration (call/usage.ts).
// State goes through the session repository (state/repository.ts). Nothing here ever throws into
// the host agent: failures become events, and a call that fails inside the guard fails closed.
import { Archive } from './archive/archive.ts';
import type { CompactionReceipt, RecalledItem, RecallOptions } from './archive/types.ts';
import type {
  AfterModelInput,
  BeforeModelInput,
  BeforeModelResult,
  CompactOptions,
  ContextGuard,
  RecoverFromOverflowInput,
  RecoverFromOverflowResult,
} from './api.ts';
import { CallResolver, contextWindowFor, measurerKeys, type Call } from './call/measure.ts';
import { DEFAULTS, resolveOptions, type ContextGuardOptions, type ResolvedOptions } from './config.ts';
import { CircuitBreaker, compact, type CompactionEnv, type CompactionOutcome } from './compaction/compaction.ts';
import type { ContextGuardEvent, ErrorEvent } from './events.ts';
import type { GuardMessage } from './messages.ts';
import { isContextLengthError, promptTokensFromError, windowFromError } from './call/overflow.ts';
import { compactionCall, needsCompaction } from './call/decide.ts';
import { PairingProgress, prepare } from './call/estimate.ts';
import { recordCall, reportEstimate } from './call/record.ts';
import { recordUsage } from './call/usage.ts';
import { failClosed } from './call/fail-closed.ts';
import { CheckedInputs } from './call/history.ts';
import { SessionRepository } from './state/repository.ts';
import type { SessionState, SessionStatus } from './state/session.ts';
import type { StateStore } from './state/store.ts';
import { SessionSubscriptions, type SessionListener } from './subscriptions.ts';
import { PromptMeasurer } from './tokens/prompt-measure.ts';

export type * from './api.ts';

const DONE: Promise<void> = Promise.resolve();

export function createContextGuard(options: ContextGuardOptions = {}): ContextGuard {
  return new Guard(resolveOptions(options));
}

class Guard implements ContextGuard {
  readonly options: Readonly<ResolvedOptions>;
  readonly sessions: SessionRepository;
  private readonly resolver: CallResolver;
  private readonly measurer: PromptMeasurer;
  private readonly checkedInputs: CheckedInputs;
  private readonly pairing: PairingProgress;
  private readonly compaction: CompactionEnv;
  private readonly archive: Archive;
  private readonly subscriptions: SessionSubscriptions;
  /** A compaction may hold its lock for all its summarizer calls, with room. */
  private readonly lockTtlMs: number;
  /**
   * Each session's last call as far as its window goes (model id, host window), so that a provider's
   * rejection of that call teaches the window of the right model. In-process (the rejection comes
   * back to the process that sent the call), bounded by `maxSessions`, the oldest forgotten first.
   */
  private readonly lastModels = new Map<string, { modelId: string | undefined; contextWindow: number | undefined }>();

  constructor(resolved: ResolvedOptions) {
    this.options = resolved;
    this.subscriptions = new SessionSubscriptions(resolved.maxSessions);
    this.sessions = new SessionRepository({
      store: resolved.store,
      maxSessions: resolved.maxSessions,
      storeTimeoutMs: resolved.storeTimeoutMs,
      onStoreFailed: (event) => this.emit({ type: 'store-failed', ...event }),
      onFenced: (event) => this.emit({ type: 'compaction-fenced', ...event }),
    });
    this.resolver = new CallResolver(resolved, this.emit);
    this.measurer = new PromptMeasurer(resolved.maxSessions);
    this.checkedInputs = new CheckedInputs(resolved.maxSessions, resolved.historyCheck);
    this.pairing = new PairingProgress(resolved.maxSessions);
    this.archive = new Archive(
      resolved.archive,
      resolved.store as StateStore<unknown> | undefined,
      resolved.maxSessions,
      (sessionId, operation, run) => this.sessions.withStore(sessionId, operation, run),
      this.emit,
      (sessionId) => this.sessions.fence(sessionId),
    );
    // One breaker per guard: a failing summarizer fails for every session.
    this.compaction = {
      options: resolved,
      emit: this.emit,
      breaker: new CircuitBreaker(resolved.circuitBreaker.failures, resolved.circuitBreaker.cooldownMs),
      archive: this.archive,
    };
    this.lockTtlMs = Math.max(30_000, resolved.compactionTimeoutMs + 10_000);
  }

  // Not an async function: the common call answers a promise of its result without the generator
  // an async function allocates. Whatever it throws becomes a rejection, as from an async function.
  readonly beforeModel = (input: BeforeModelInput): Promise<BeforeModelResult> => {
    try {
      return this.beforeModelSync(input);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  private beforeModelSync(input: BeforeModelInput): Promise<BeforeModelResult> {
    const raw: readonly unknown[] = Array.isArray(input?.messages) ? input.messages : [];
    const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
    let messages = raw as readonly GuardMessage[];
    try {
      if (!sessionId) throw new TypeError('beforeModel: `sessionId` must be a non-empty string');
      if (!Array.isArray(input.messages)) throw new TypeError('beforeModel: `messages` must be an array');
      this.rememberModel(sessionId, input);
      const checked = this.checkedInputs.check(sessionId, raw);
      messages = checked.messages;
      if (checked.dropped.length > 0)
        this.emit({ type: 'invalid-messages', sessionId, indices: checked.dropped, reasons: checked.reasons });
      // The host's own input when nothing was left out (no copy of it on every call).
      const valid = messages === input.messages ? input : { ...input, messages };
      // The common call (default store, session idle, nothing to compact) is synchronous: no lock
      // to wait for, no promise but the one answered.
      const started: { call?: Call } = {};
      const now = this.sessions.runNow(sessionId, () => this.beforeModelNow(valid, started));
      if (now) return Promise.resolve(now);
      const failed = messages;
      return this.sessions
        .run(sessionId, () => this.beforeModelLocked(valid, raw, started.call))
        .catch((error: unknown) => this.failedBeforeModel(error, sessionId, input, failed));
    } catch (error) {
      return Promise.resolve(this.failedBeforeModel(error, sessionId, input, messages));
    }
  }

  /** Keeps the session's model and host window (a look-up and nothing else when they did not change). */
  private rememberModel(sessionId: string, input: BeforeModelInput): void {
    const modelId = typeof input.modelId === 'string' ? input.modelId : undefined;
    const contextWindow = typeof input.contextWindow === 'number' ? input.contextWindow : undefined;
    const last = this.lastModels.get(sessionId);
    if (last && last.modelId === modelId && last.contextWindow === contextWindow) return;
    if (!last && this.lastModels.size >= this.options.maxSessions) {
      const oldest = this.lastModels.keys().next().value;
      if (oldest !== undefined) this.lastModels.delete(oldest);
    }
    this.lastModels.set(sessionId, { modelId, contextWindow });
  }

  /** A beforeModel that failed inside the guard: reported, and the smallest prompt that fits. */
  private failedBeforeModel(
    error: unknown,
    sessionId: string,
    input: BeforeModelInput,
    messages: readonly GuardMessage[],
  ): BeforeModelResult {
    this.emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'beforeModel', error });
    return failClosed(this.resolver, this.options, input, messages);
  }

  readonly afterModel = (input: AfterModelInput): Promise<void> => {
    const id = typeof input?.sessionId === 'string' ? input.sessionId : '';
    if (id) {
      try {
        // The default in-memory store with the session idle: recorded at once, synchronously.
        if (this.sessions.runNow(id, () => this.recordCount(id, input) === undefined)) return DONE;
      } catch (error) {
        this.emit({ type: 'error', sessionId: id, stage: 'afterModel', error });
        return DONE;
      }
    }
    return this.guarded('afterModel', input?.sessionId, undefined, async (sessionId) => {
      await this.recordCount(sessionId, input);
    });
  };

  /**
   * Records a real count; a promise only when the store answers asynchronously. A count far off its
   * estimate marks the session state (SessionState.historyStale): the next call, in whichever
   * process, compares the whole history (see beforeModelLocked).
   */
  private recordCount(sessionId: string, input: AfterModelInput): Promise<void> | undefined {
    return recordUsage(this, sessionId, input.usage);
  }

  readonly status = async (sessionId: string): Promise<SessionStatus | undefined> => {
    try {
      const state = await this.sessions.load(sessionId);
      return state.status ? { sessionId, ...state.status, ...(state.costs ? { costs: state.costs } : {}) } : undefined;
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
      // A limit the provider names becomes the model's window (the retry's compaction fits it).
      const limit = windowFromError(input.error);
      if (limit !== undefined) {
        const last = this.lastModels.get(sessionId);
        const modelId = typeof input.modelId === 'string' ? input.modelId : last?.modelId;
        const hostWindow = typeof input.contextWindow === 'number' ? input.contextWindow : last?.contextWindow;
        this.resolver.learn(sessionId, modelId, limit, hostWindow);
      }
      // The provider's count is a real count of the rejected prompt; then the next beforeModel compacts.
      const reportedTokens = promptTokensFromError(input.error);
      if (reportedTokens !== undefined) await recordUsage(this, sessionId, { inputTokens: reportedTokens });
      const state = await this.sessions.load(sessionId);
      await this.sessions.commit(sessionId, state, (current) => ({
        ...current,
        compactRequest: current.compactRequest ?? {},
      }));
      const reported = reportedTokens !== undefined ? { reportedTokens } : {};
      this.emit({ type: 'overflow-retry', sessionId, ...reported });
      return { retry: true, ...reported };
    });

  readonly recall = async (sessionId: string, options: RecallOptions = {}): Promise<RecalledItem[]> => {
    try {
      if (typeof sessionId !== 'string' || !sessionId)
        throw new TypeError('recall: `sessionId` must be a non-empty string');
      // A recall answer goes back into the prompt: by default at most about a tenth of the window.
      const window = (await this.status(sessionId))?.contextWindow;
      const { recallMaxChars } = this.options.archive;
      // The user's bound always holds; the window's share is floored so a small window still reads something.
      const maxChars =
        window !== undefined
          ? Math.min(recallMaxChars, Math.max(800, Math.floor(window * DEFAULTS.recallWindowChars)))
          : recallMaxChars;
      return await this.archive.recall(sessionId, options ?? {}, maxChars);
    } catch (error) {
      this.emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'recall', error });
      return [];
    }
  };

  readonly compactions = async (sessionId: string): Promise<CompactionReceipt[]> => {
    try {
      if (typeof sessionId !== 'string' || !sessionId)
        throw new TypeError('compactions: `sessionId` must be a non-empty string');
      return await this.archive.compactions(sessionId);
    } catch (error) {
      this.emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'compactions', error });
      return [];
    }
  };

  readonly contextWindowFor: ContextGuard['contextWindowFor'] = (query) => contextWindowFor(this.options, query ?? {});

  readonly reportError: ContextGuard['reportError'] = ({ sessionId, stage, error }) =>
    this.emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage, error });

  readonly reset = async (sessionId: string): Promise<void> => {
    for (const key of measurerKeys(sessionId)) this.measurer.forget(key);
    this.lastModels.delete(sessionId);
    this.checkedInputs.forget(sessionId);
    this.pairing.forget(sessionId);
    await this.sessions.delete(sessionId);
    await this.archive.delete(sessionId);
  };

  /**
   * beforeModelLocked's common case, synchronously: undefined, having changed nothing but caches,
   * when the call needs anything asynchronous (a tokenizer, an archive write, a compaction); the
   * call it set up is then left in `started` for beforeModelLocked (its events are not sent twice).
   */
  private beforeModelNow(input: BeforeModelInput, started: { call?: Call }): BeforeModelResult | undefined {
    if (this.archive.hasPending(input.sessionId)) return undefined;
    const call = this.resolver.callNow(this.measurer, input);
    if (!call) return undefined;
    started.call = call;
    // Set: runNow runs this only with the default in-memory store, whose commit is synchronous too.
    const state = this.sessions.loadNow(call.sessionId) as SessionState;
    // A stale-history mark is compared for, and cleared, on the asynchronous path.
    if (state.historyStale !== undefined) return undefined;
    const p = prepare(call, state, this.options.calibration, this.pairing);
    if (needsCompaction(call, state, p)) return undefined;
    reportEstimate(this, call, p, input.modelId);
    return recordCall(this, call, state, p, undefined, false) as BeforeModelResult;
  }

  /**
   * Estimate → decide → compact → record, as the session's only call in this process. `raw` is the
   * host's array as it came, which the input check compared (`input.messages` without its junk).
   */
  private async beforeModelLocked(
    input: BeforeModelInput,
    raw: readonly unknown[],
    started?: Call,
  ): Promise<BeforeModelResult> {
    // Archive batches the store failed earlier are written before anything else leaves the prompt.
    if (this.archive.hasPending(input.sessionId)) await this.archive.flush(input.sessionId);
    const made = started ?? this.resolver.call(this.measurer, input);
    let call = made instanceof Promise ? await made : made;
    let state = this.sessions.loadNow(call.sessionId) ?? (await this.sessions.load(call.sessionId));
    let p = prepare(call, state, this.options.calibration, this.pairing);
    const staleCompared = state.historyStale;
    if (staleCompared !== undefined || needsCompaction(call, state, p)) {
      // A compaction decides on the whole history, and a real count far off the estimate, recorded
      // by any process, says the view may be stale: what the input check took on trust is compared
      // first, and a difference found means a new estimate before deciding.
      const verified = this.checkedInputs.verify(call.sessionId, raw);
      if (verified) {
        if (verified.dropped.length > 0)
          this.emit({
            type: 'invalid-messages',
            sessionId: call.sessionId,
            indices: verified.dropped,
            reasons: verified.reasons,
          });
        call = await this.resolver.call(this.measurer, { ...input, messages: verified.messages });
        p = prepare(call, state, this.options.calibration, this.pairing);
      }
    }
    reportEstimate(this, call, p, input.modelId);
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
        if (attempted)
          outcome = await compact({
            call: compactionCall(call, p),
            env: this.compaction,
            session: state,
            prepared: p,
            signal: input.signal,
          });
        // Committed under the lock (and its fence): a process waiting for it finds the new summary
        // in the state as soon as it may take the lock.
        return await recordCall(this, call, state, p, outcome, attempted, staleCompared);
      } finally {
        await release?.();
      }
    }
    return recordCall(this, call, state, p, outcome, attempted, staleCompared);
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

  readonly subscribe = (sessionId: string, listener: SessionListener): (() => void) => {
    if (typeof sessionId !== 'string' || !sessionId || typeof listener !== 'function') return () => {};
    return this.subscriptions.add(sessionId, listener);
  };

  readonly listens = (sessionId: string): boolean =>
    this.options.onEvent !== undefined || this.subscriptions.has(sessionId);

  readonly emit = (event: ContextGuardEvent): void => {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A logging callback must never break the agent it observes.
    }
    this.subscriptions.deliver(event);
  };
}
