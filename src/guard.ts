// createContextGuard: the guard's public methods, wired to the stages of one model call.
// beforeModel runs call/stages.ts (check, measure, estimate, decide, compact when it must, record);
// afterModel folds the provider's real count into the calibration (call/usage.ts). State goes
// through the session repository (state/repository.ts). Nothing here ever throws into the host
// agent: failures become events, and a call that fails inside the guard fails closed.
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
import { failClosed } from './call/fail-closed.ts';
import { CallResolver, contextWindowFor } from './call/measure.ts';
import { isContextLengthError, promptTokensFromError, windowFromError } from './call/overflow.ts';
import { CallStages } from './call/stages.ts';
import { recordUsage } from './call/usage.ts';
import { DEFAULTS, resolveOptions, type ContextGuardOptions, type ResolvedOptions } from './config.ts';
import { CircuitBreaker } from './compaction/compaction.ts';
import type { ContextGuardEvent, ErrorEvent } from './events.ts';
import type { GuardMessage } from './messages.ts';
import { BoundedMap } from './state/bounded.ts';
import { SessionRepository } from './state/repository.ts';
import type { SessionStatus } from './state/session.ts';
import type { StateStore } from './state/store.ts';
import { SessionSubscriptions, type SessionListener } from './subscriptions.ts';

export type * from './api.ts';

const DONE: Promise<void> = Promise.resolve();

export function createContextGuard(options: ContextGuardOptions = {}): ContextGuard {
  return new Guard(resolveOptions(options));
}

class Guard implements ContextGuard {
  readonly options: Readonly<ResolvedOptions>;
  readonly sessions: SessionRepository;
  private readonly resolver: CallResolver;
  private readonly stages: CallStages;
  private readonly archive: Archive;
  private readonly subscriptions: SessionSubscriptions;
  /**
   * Each session's last call as far as its window goes (model id, host window), so that a provider's
   * rejection of that call teaches the window of the right model. In-process (the rejection comes
   * back to the process that sent the call), bounded by `maxSessions`, the least recently changed forgotten first.
   */
  private readonly lastModels: BoundedMap<string, { modelId: string | undefined; contextWindow: number | undefined }>;

  constructor(resolved: ResolvedOptions) {
    this.options = resolved;
    this.subscriptions = new SessionSubscriptions(resolved.maxSessions);
    this.lastModels = new BoundedMap(resolved.maxSessions);
    this.sessions = new SessionRepository({
      store: resolved.store,
      maxSessions: resolved.maxSessions,
      storeTimeoutMs: resolved.storeTimeoutMs,
      onStoreFailed: (event) => this.emit({ type: 'store-failed', ...event }),
      onFenced: (event) => this.emit({ type: 'compaction-fenced', ...event }),
    });
    this.resolver = new CallResolver(resolved, this.emit);
    this.archive = new Archive(
      resolved.archive,
      resolved.store as StateStore<unknown> | undefined,
      resolved.maxSessions,
      (sessionId, operation, run) => this.sessions.withStore(sessionId, operation, run),
      this.emit,
      (sessionId) => this.sessions.fence(sessionId),
    );
    // One breaker per guard: a failing summarizer fails for every session.
    const breaker = new CircuitBreaker(resolved.circuitBreaker.failures, resolved.circuitBreaker.cooldownMs);
    const compaction = { options: resolved, emit: this.emit, breaker, archive: this.archive };
    this.stages = new CallStages({ ctx: this, resolver: this.resolver, archive: this.archive, compaction });
  }

  // Not an async function: the common call answers a promise of its result without the generator
  // an async function allocates. Whatever it throws becomes a rejection, as from an async function.
  readonly beforeModel = (input: BeforeModelInput): Promise<BeforeModelResult> => {
    try {
      return this.beforeModelTurn(input);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  /**
   * The input checked (outside the session's lock), then the stages of src/call/ as the session's
   * only call (see CallStages). The common call (default store, session idle, nothing to compact)
   * is synchronous: no lock to wait for, no promise but the one answered.
   */
  private beforeModelTurn(input: BeforeModelInput): Promise<BeforeModelResult> {
    const raw: readonly unknown[] = Array.isArray(input?.messages) ? input.messages : [];
    const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
    let messages = raw as readonly GuardMessage[];
    try {
      if (!sessionId) throw new TypeError('beforeModel: `sessionId` must be a non-empty string');
      if (!Array.isArray(input.messages)) throw new TypeError('beforeModel: `messages` must be an array');
      this.rememberModel(sessionId, input);
      const turn = this.stages.check(input, raw);
      messages = turn.input.messages;
      const sent = this.sessions.run(sessionId, () => this.stages.run(turn));
      if (!(sent instanceof Promise)) return Promise.resolve(sent);
      const failed = messages;
      return sent.catch((error: unknown) => this.failedBeforeModel(error, sessionId, input, failed));
    } catch (error) {
      return Promise.resolve(this.failedBeforeModel(error, sessionId, input, messages));
    }
  }

  /** Keeps the session's model and host window (a look-up and nothing else when they did not change). */
  private rememberModel(sessionId: string, input: BeforeModelInput): void {
    const modelId = typeof input.modelId === 'string' ? input.modelId : undefined;
    const contextWindow = typeof input.contextWindow === 'number' ? input.contextWindow : undefined;
    const last = this.lastModels.peek(sessionId);
    if (last && last.modelId === modelId && last.contextWindow === contextWindow) return;
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
    try {
      if (!id) throw new TypeError('afterModel: `sessionId` must be a non-empty string');
      // A real count far off its estimate marks the session state (SessionState.historyStale): the
      // next call, in whichever process, compares the whole history (see CallStages).
      const recorded = this.sessions.run(id, () => recordUsage(this, id, input.usage));
      // The default in-memory store with the session idle: recorded at once, synchronously.
      if (!(recorded instanceof Promise)) return DONE;
      return recorded.catch((error: unknown) =>
        this.emit({ type: 'error', sessionId: id, stage: 'afterModel', error }),
      );
    } catch (error) {
      this.emit({ type: 'error', ...(id ? { sessionId: id } : {}), stage: 'afterModel', error });
      return DONE;
    }
  };

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
        const last = this.lastModels.peek(sessionId);
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
    this.stages.forget(sessionId);
    this.lastModels.delete(sessionId);
    await this.sessions.delete(sessionId);
    await this.archive.delete(sessionId);
  };

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
