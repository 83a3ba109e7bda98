// createContextGuard: the orchestration of one model call. beforeModel measures the prompt,
// estimates its real cost from the session's calibration and compares it with the threshold;
// afterModel folds the provider's real count back into the calibration. Neither ever throws into
// the host agent: failures become events and the call goes on unchanged.
import { compactionSettings, MIN_CONTEXT_WINDOW, resolveOptions, thresholdFor, type ContextGuardOptions, type ResolvedOptions } from './config.ts';
import { emptyMemo, renderView, requestEditsDropped, type CompactionMemo, type View } from './compaction/memo.ts';
import { hasCompactable, requestIndex, runPipeline } from './compaction/pipeline.ts';
import { lastUnitStart, repairToolPairing } from './compaction/structure.ts';
import { CircuitBreaker, summarize } from './compaction/summarize.ts';
import type { CompactionReason, CompactionResult } from './compaction/types.ts';
import type { ContextGuardEvent, StoreFailedEvent } from './events.ts';
import type { GuardMessage, ToolDefinition } from './messages.ts';
import { isContextLengthError, promptTokensFromError } from './overflow.ts';
import { CheckedInputs, minimalPrompt, validMessages } from './safety.ts';
import { KeyedLock } from './state/lock.ts';
import { MemoryStore } from './state/memory.ts';
import { emptySessionState, type CalibrationState, type PendingRequest, type SessionState, type SessionStatus } from './state/session.ts';
import type { StateStore } from './state/store.ts';
import {
  compactionCalibration,
  estimate,
  plausibleInputRange,
  plausibleOutputMax,
  priceAfterReset,
  recordRealCount,
  resetCalibration,
  tokensPerCharAfterReset,
} from './tokens/calibration.ts';
import { CHARACTER_MEASURE, encodingFor, textMeasure, type TextMeasure } from './tokens/exact.ts';
import { mediaProviderForModel } from './tokens/media.ts';
import { extendsPrompt, PromptMeasurer, type MeasuredPrompt } from './tokens/prompt-measure.ts';
import { CHARS_PER_TOKEN, measureMessage } from './tokens/heuristic.ts';
import { resolveModelInfo } from './tokens/windows.ts';

export interface BeforeModelInput {
  /** Identifies the conversation: calibration and summaries are per session. */
  sessionId: string;
  /** Resolves the window when `contextWindow` is not set, and the media pricing. */
  modelId?: string;
  messages: readonly GuardMessage[];
  /** Function-tool definitions sent with the call; they count toward the prompt. */
  tools?: readonly ToolDefinition[];
  /**
   * The model's window as the host knows it (a LangChain model profile's `maxInputTokens`, say).
   * Used when the `contextWindow` option is not set; wins over `models` and the registry.
   */
  contextWindow?: number;
  /**
   * The model call's abort signal. When it fires during a compaction, the summarizer's signal
   * fires too and the mechanical digest is used, so an aborted call does not wait for a summary.
   */
  signal?: AbortSignal;
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
  /** Set only when this call ran a new compaction (re-applying a stored summary is not one). */
  compaction?: CompactionResult;
  /**
   * True when `tokens` is over the threshold because of what the guard may not touch (system
   * messages, tools, the latest request): the smallest prompt was sent. The `overflow` event says
   * so once, on the compaction that found it; later calls with nothing new to compact send the
   * same prompt without compacting again.
   */
  overflow?: boolean;
}

export interface CompactOptions {
  /** What the summary should emphasize. */
  focus?: string;
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

export interface RecoverFromOverflowInput {
  sessionId: string;
  /** What the model call threw (or the error part a stream ended with). */
  error: unknown;
}

export interface RecoverFromOverflowResult {
  /** Whether the error is a context-length rejection the guard prepared a retry for. */
  retry: boolean;
  /** The prompt's size as the provider reported it, when the error says. */
  reportedTokens?: number;
}

export interface ContextGuard {
  beforeModel(input: BeforeModelInput): Promise<BeforeModelResult>;
  afterModel(input: AfterModelInput): Promise<void>;
  /** What a UI shows: tokens, threshold and fraction of the window; undefined for an unknown session. */
  status(sessionId: string): Promise<SessionStatus | undefined>;
  /**
   * Marks the session so that its next beforeModel compacts even under the threshold (a user's
   * `/compact`, or the model's compact tool), with `focus` steering the summary.
   */
  compact(sessionId: string, options?: CompactOptions): Promise<void>;
  /** Drops a session's state (its calibration, summary and cached measures). */
  reset(sessionId: string): Promise<void>;
  /**
   * After a model call failed: when the error is a provider's context-length rejection, records the
   * prompt size it reports (a real count), requests a compaction and answers `retry: true`: the
   * caller then runs beforeModel again and retries the call once. Any other error: `retry: false`,
   * nothing changes. One guard operation (one lock, one store round trip); never throws.
   */
  recoverFromOverflow(input: RecoverFromOverflowInput): Promise<RecoverFromOverflowResult>;
  /** The validated options with their defaults. */
  readonly options: Readonly<ResolvedOptions>;
}

class StoreTimeout extends Error {
  constructor(ms: number) {
    super(`the store did not answer within ${ms} ms`);
    this.name = 'StoreTimeout';
  }
}

/** How far a session has gone: calls seen plus real counts recorded, which only grow. */
const progress = (state: SessionState): number => state.calls + state.usageRecorded;

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

export function createContextGuard(options: ContextGuardOptions = {}): ContextGuard {
  const resolved = resolveOptions(options);
  const store: StateStore<SessionState> = resolved.store ?? new MemoryStore<SessionState>({ maxSessions: resolved.maxSessions });
  const measurer = new PromptMeasurer(resolved.maxSessions);
  const lock = new KeyedLock();
  const checkedInputs = new CheckedInputs(resolved.maxSessions);
  const reportedModels = new Set<string>();
  /** Per session: the view's messages before this index were checked and needed no repair. */
  const validUpTo = new Map<string, number>();
  // One breaker per guard: a failing summarizer fails for every session.
  const breaker = new CircuitBreaker(resolved.circuitBreaker.failures, resolved.circuitBreaker.cooldownMs);

  const emit = (event: ContextGuardEvent): void => {
    if (!resolved.onEvent) return;
    try {
      resolved.onEvent(event);
    } catch {
      // A logging callback must never break the agent it observes.
    }
  };

  // A shared store (Redis) can fail or stall. The guard then goes on with the state this process
  // last saw, kept in a bounded in-process copy, and reports it; once the store answers again the
  // next save brings it up to date. The default in-memory store needs no copy.
  const shadow = resolved.store ? new MemoryStore<SessionState>({ maxSessions: resolved.maxSessions }) : undefined;

  /** The store's answer, or a `store-failed` report and undefined when it throws or is too slow. */
  // Once the store failed during a call, the rest of that call uses the in-process copy at once:
  // a call waits for a failing store once at most, not once per operation. Calls of one session
  // never overlap (the session lock), so the mark is per session and cleared by each new call.
  const storeFailedInCall = new Set<string>();
  const inCall = <T>(sessionId: string, task: () => Promise<T>): Promise<T> =>
    lock.run(sessionId, async () => {
      storeFailedInCall.delete(sessionId);
      try {
        return await task();
      } finally {
        storeFailedInCall.delete(sessionId);
      }
    });

  async function withStore<T>(sessionId: string, operation: StoreFailedEvent['operation'], run: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    if (storeFailedInCall.has(sessionId)) return { ok: false };
    if (!resolved.store) {
      // The default in-memory store answers at once: no timer on the per-call path.
      try {
        return { ok: true, value: await run() };
      } catch (error) {
        emit({ type: 'store-failed', sessionId, operation, reason: 'error', error });
        return { ok: false };
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StoreTimeout(resolved.storeTimeoutMs)), resolved.storeTimeoutMs);
        (timer as { unref?: () => void }).unref?.();
      });
      return { ok: true, value: await Promise.race([Promise.resolve().then(run), timeout]) };
    } catch (error) {
      if (resolved.store) storeFailedInCall.add(sessionId);
      emit({ type: 'store-failed', sessionId, operation, reason: error instanceof StoreTimeout ? 'timeout' : 'error', error });
      return { ok: false };
    } finally {
      clearTimeout(timer);
    }
  }

  async function load(sessionId: string): Promise<SessionState> {
    const got = await withStore(sessionId, 'get', () => store.get(sessionId));
    const local = shadow ? await shadow.get(sessionId) : undefined;
    if (!got.ok) return local ?? emptySessionState();
    const remote = got.value;
    // After an outage this process may be ahead of the store (it went on alone), or another
    // process may be: the state with more recorded progress wins.
    if (local && (!remote || progress(local) > progress(remote))) return local;
    if (remote && shadow) await shadow.set(sessionId, remote);
    return remote ?? emptySessionState();
  }

  async function save(sessionId: string, state: SessionState): Promise<void> {
    if (shadow) await shadow.set(sessionId, state);
    await withStore(sessionId, 'set', () => store.set(sessionId, state));
  }

  /**
   * Writes what a call changed, applied to the freshest stored state: atomically with a store
   * that can (another process's update in between is kept), else onto `loaded`.
   */
  async function commit(sessionId: string, loaded: SessionState, change: (current: SessionState) => SessionState): Promise<SessionState> {
    const update = store.update?.bind(store);
    if (update) {
      const local = shadow ? await shadow.get(sessionId) : undefined;
      // After an outage the store may hold less than this process went on with: start from
      // whichever has recorded more progress, so the calls made meanwhile are not lost.
      const done = await withStore(sessionId, 'update', () =>
        update(sessionId, (current) => change(local && (!current || progress(local) > progress(current)) ? local : (current ?? emptySessionState()))),
      );
      if (done.ok) {
        if (shadow) await shadow.set(sessionId, done.value);
        return done.value;
      }
      const next = change((shadow ? await shadow.get(sessionId) : undefined) ?? loaded);
      if (shadow) await shadow.set(sessionId, next);
      return next;
    }
    const next = change(loaded);
    await save(sessionId, next);
    return next;
  }

  /** The window of this call, or undefined (reported once per model) when none is known. */
  function windowFor(sessionId: string, modelId: string | undefined, callWindow: number | undefined): number | undefined {
    if (resolved.contextWindow !== undefined) return resolved.contextWindow;
    // A host's window below the minimum (a profile's placeholder, a fraction) is no window at all.
    if (typeof callWindow === 'number' && Number.isFinite(callWindow) && callWindow >= MIN_CONTEXT_WINDOW) return callWindow;
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

  /** The host's messages measured on their own (for the memo's fingerprints and hashes). */
  const inputKey = (sessionId: string) => `${sessionId}\u0000input`;

  /** Everything a call works out from the session's state before deciding to compact. */
  interface Prepared {
    memo: CompactionMemo | undefined;
    summaryApplies: boolean;
    view: View;
    measured: MeasuredPrompt;
    extendsAnchor: boolean;
    est: ReturnType<typeof estimate>;
    /** The memo was changed by this call (not by a compaction) and must be stored. */
    memoChanged?: boolean;
    /** The latest request is sent cut or without its media although, with only the fixed part, it would fit whole. */
    requestEdited?: boolean;
  }

  async function beforeModelLocked(input: BeforeModelInput): Promise<BeforeModelResult> {
    const { sessionId, modelId, tools } = input;
    const hostMessages = input.messages;
    const contextWindow = windowFor(sessionId, modelId, input.contextWindow);
    const threshold = contextWindow === undefined ? Number.POSITIVE_INFINITY : thresholdOf(sessionId, contextWindow);

    const text = await textMeasureFor(sessionId, modelId);
    const provider = mediaProviderForModel(modelId);
    let hostMeasure: MeasuredPrompt | undefined;
    const measureHost = () => (hostMeasure ??= measurer.measure(inputKey(sessionId), hostMessages, undefined, provider, text));
    const hashOf = (i: number) => measureHost().entries[i]?.hash ?? 0;
    const measure = (messages: GuardMessage[]) => measurer.measure(sessionId, messages, tools, provider, text);

    /** The prompt this state makes of the host's messages, and its estimate. */
    const prepare = (state: SessionState): Prepared => {
      const p = prepareWith(state, state.memo);
      // The latest request cut, or its images left out, to fit is sent whole again as soon as it
      // fits (the calibration learned the provider counts less than feared): the edits are dropped,
      // all of them or the cut alone.
      const request = p.memo ? requestIndex(hostMessages, p.memo.own) : -1;
      if (!p.memo || request < 0) return p;
      let best = p;
      for (const keepMedia of [false, true]) {
        const relaxed = requestEditsDropped(p.memo, request, keepMedia);
        if (!relaxed) continue;
        // Decided on the estimate the next calls will make of it too (or a replay would compact again).
        const whole = prepareWith(state, relaxed);
        if (whole.est.tokens > threshold) continue;
        best = { ...whole, memoChanged: true };
        break;
      }
      // Still edited although the request alone would fit: a compaction can make room for it
      // (the steps before the last resort never touch the request).
      const edited = best.memo !== undefined && requestEditsDropped(best.memo, request) !== undefined;
      // Once per new information: a compaction that kept them decided on this very history and calibration.
      const decided = best.memo?.requestDecided;
      const unchanged = decided?.request === request && decided.messages === hostMessages.length && decided.usage === state.usageRecorded;
      return edited && !unchanged && requestFitsAlone(state, request, best) ? { ...best, requestEdited: true } : best;
    };
    /** Whether the system messages, tools and the latest request, whole, fit under the threshold. */
    /** Priced as a compaction of the prompt `p` would price its smallest prompt. */
    const requestFitsAlone = (state: SessionState, request: number, p: Prepared): boolean => {
      const alone = measurer.measure(`${sessionId}\u0000alone`, hostMessages.filter((m, i) => m.role === 'system' || i === request), tools, provider, text);
      const planned = compactionCalibration(state.calibration, resolved.calibration, p.est.tokens, p.measured.chars, p.measured.mediaTokens);
      return priceAfterReset(planned, resolved.calibration)(alone.chars, alone.mediaTokens) <= threshold;
    };
    const prepareWith = (state: SessionState, stored: CompactionMemo | undefined): Prepared => {
      // Re-apply what earlier compactions did to this history (the summary, pruned outputs).
      let memo = stored;
      let summaryApplies = false;
      if (memo?.summary) {
        summaryApplies = extendsPrompt(measureHost(), memo.summary.covers);
        if (!summaryApplies) {
          // The host's history no longer starts with what the summary covers (a new conversation
          // on this session id, or a host that stores the compacted history itself): it is stale.
          const { summary: _stale, ...rest } = memo;
          memo = rest;
        }
      }
      const view = renderView(hostMessages, memo, summaryApplies, hashOf, false);
      let measured = measure(view.messages);
      // Tool pairing, checked from where the previous call left it valid: the unchanged prefix
      // was checked then, so the cost follows what was added.
      const repaired = repairToolPairing(view.messages, Math.min(validUpTo.get(sessionId) ?? 0, measured.unchanged));
      validUpTo.delete(sessionId);
      if (repaired.unansweredCalls + repaired.orphanResults > 0) {
        view.messages = repaired.messages;
        view.unansweredCalls = repaired.unansweredCalls;
        view.orphanResults = repaired.orphanResults;
        measured = measure(view.messages);
      } else {
        validUpTo.set(sessionId, lastUnitStart(view.messages));
        if (validUpTo.size > resolved.maxSessions) validUpTo.delete(validUpTo.keys().next().value as string);
      }
      const anchor = state.calibration.anchor;
      const extendsAnchor = anchor !== undefined && extendsPrompt(measured, anchor.prompt);
      const response = extendsAnchor ? measured.entries[anchor.prompt.messages] : undefined;
      const est = estimate(
        measured,
        state.calibration,
        resolved.calibration,
        extendsAnchor ? { responseChars: response?.message.role === 'assistant' ? response.chars : undefined } : undefined,
      );
      return { memo, summaryApplies, view, measured, extendsAnchor, est };
    };
    // Over the threshold, a compaction runs, unless the last one already sent the smallest prompt
    // (an overflow, reported once) and nothing was added since that another could remove.
    // Never past the window itself: a real count may since have shown the prompt costs more.
    // Never past the window itself (a real count may since have shown the prompt costs more), and
    // never over the threshold with a request that was cut anyway: cut it to fit.
    const stuck = (p: Prepared) => {
      if (p.memo?.overflowed !== true || p.est.tokens > (contextWindow ?? 0)) return false;
      const request = requestIndex(hostMessages, p.memo.own);
      return p.memo.requestClip?.index !== request && !hasCompactable(p.view, request);
    };
    const needsCompaction = (state: SessionState, p: Prepared) =>
      contextWindow !== undefined && (state.compactRequest !== undefined || p.requestEdited === true || (p.est.tokens > threshold && !stuck(p)));

    let state = await load(sessionId);
    let p = prepare(state);
    if (p.view.unansweredCalls + p.view.orphanResults > 0) {
      emit({ type: 'tool-pairing-repaired', sessionId, unansweredCalls: p.view.unansweredCalls, orphanResults: p.view.orphanResults });
    }
    const fraction = contextWindow === undefined ? 0 : p.est.tokens / contextWindow;
    emit({
      type: 'estimate',
      sessionId,
      ...(modelId ? { modelId } : {}),
      tokens: p.est.tokens,
      heuristicTokens: p.est.heuristicTokens,
      correction: p.est.correction,
      method: p.est.method,
      ...(contextWindow === undefined ? {} : { threshold, contextWindow, fraction }),
      messages: p.view.messages.length,
    });
    if (contextWindow !== undefined && fraction >= resolved.warnAt) {
      emit({ type: 'warning', sessionId, tokens: p.est.tokens, threshold, contextWindow, fraction, warnAt: resolved.warnAt });
    }

    let messages = p.view.messages;
    let tokens = p.est.tokens;
    let sent: MeasuredPrompt = p.measured;
    let extendsSent = p.extendsAnchor;
    let compaction: CompactionResult | undefined;
    let compactedMemo: CompactionMemo | undefined;
    let compactedCalibration: CalibrationState | undefined;
    let consumedRequest = false;
    if (contextWindow !== undefined && needsCompaction(state, p)) {
      // Across processes, one compaction per session at a time: the others wait for its result
      // and use it (the summary is in the shared state when they read it again).
      let release: (() => Promise<void>) | undefined;
      if (store.lock) {
        const acquired = await acquireCompactionLock(sessionId, async () => {
          state = await load(sessionId);
          p = prepare(state);
          return needsCompaction(state, p);
        });
        release = acquired.release;
        messages = p.view.messages;
        tokens = p.est.tokens;
        sent = p.measured;
        extendsSent = p.extendsAnchor;
      }
      try {
        if (needsCompaction(state, p)) {
          const request = state.compactRequest;
          consumedRequest = request !== undefined;
          const outcome = await compactLocked({
            sessionId,
            // A requested compaction (the compact tool, an overflow retry) summarizes even when pruning would do.
            reason: request ? 'manual' : 'threshold',
            focus: request?.focus,
            signal: input.signal,
            hostMessages,
            view: p.view,
            tokens: p.est.tokens,
            contextWindow,
            threshold,
            memo: p.memo ?? emptyMemo(),
            summaryApplies: p.summaryApplies,
            hashOf,
            measureHost,
            measure,
            calibration: state.calibration,
            usageRecorded: state.usageRecorded,
          });
          if (outcome) {
            messages = outcome.messages;
            tokens = outcome.tokens;
            sent = measure(messages);
            extendsSent = false;
            compactedMemo = outcome.memo;
            compactedCalibration = outcome.calibration;
            compaction = outcome.result;
          }
        }
      } finally {
        if (release) await withStore(sessionId, 'lock', release);
      }
    }

    const { chars, mediaTokens, toolChars, prompt } = sent;
    const pending = { chars, mediaTokens, toolChars, prompt, extendsAnchor: extendsSent, estimatedTokens: tokens };
    const memoSeen = p.memo;
    const staleDropped = (state.memo?.summary !== undefined && !p.summaryApplies) || p.memoChanged === true;
    await commit(sessionId, state, (current) => {
      const { compactRequest, memo: currentMemo, ...rest } = current;
      // Our compaction's memo wins; otherwise keep what is stored (another process may have
      // compacted meanwhile), unless this call found the stored summary stale for its history.
      const memo = compactedMemo ?? (staleDropped ? memoSeen : currentMemo);
      const calibration = compactedCalibration ? resetCalibration(current.calibration, compactedCalibration.reference?.offset ?? 0) : current.calibration;
      return {
        ...rest,
        ...(memo ? { memo } : {}),
        ...(compactRequest && !consumedRequest ? { compactRequest } : {}),
        calls: current.calls + 1,
        calibration: { ...calibration, pending },
        ...(contextWindow === undefined
          ? {}
          : { status: { tokens, source: 'estimate' as const, threshold, contextWindow, fraction: tokens / contextWindow } }),
      };
    });
    if (compaction && resolved.afterCompact) {
      try {
        await resolved.afterCompact({ sessionId, result: compaction, messages });
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'afterCompact', error });
      }
    }
    return {
      messages,
      tokens,
      threshold,
      contextWindow,
      fraction: contextWindow === undefined ? 0 : tokens / contextWindow,
      ...(compaction ? { compaction } : {}),
      ...(contextWindow !== undefined && tokens > threshold ? { overflow: true } : {}),
    };
  }

  /**
   * Takes the session's compaction lock, waiting while another process holds it. `stillNeeded`
   * reloads the state: when the holder's compaction already covers this call, there is nothing
   * left to do. Never waits past the lock's lifetime, and never blocks on a failing store.
   */
  async function acquireCompactionLock(sessionId: string, stillNeeded: () => Promise<boolean>): Promise<{ release?: () => Promise<void> }> {
    const lock = store.lock?.bind(store);
    if (!lock) return {};
    const ttl = lockTtlMs();
    // A holder that crashed keeps the lock until it expires: waiters give up earlier and compact
    // on their own (a duplicate summary at worst, never a stalled agent).
    const deadline = Date.now() + Math.min(ttl, resolved.summarizerTimeoutMs * 2);
    for (let wait = 25; ; wait = Math.min(wait * 2, 500)) {
      const attempt = lock(sessionId, ttl);
      const got = await withStore(sessionId, 'lock', () => attempt);
      if (!got.ok) {
        // Given up on (the store stalled): if the lock is granted late, nobody would hold it.
        attempt.then((release) => release?.()).catch(() => {});
        return {};
      }
      if (got.value) {
        // Another process may have finished just before: decide again on the fresh state.
        if (await stillNeeded()) return { release: got.value };
        await withStore(sessionId, 'lock', got.value);
        return {};
      }
      if (Date.now() >= deadline) return {};
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (!(await stillNeeded())) return {};
    }
  }

  /** How long a compaction may hold its lock: every summarizer call of a long compaction, with room. */
  const lockTtlMs = () => Math.max(30_000, resolved.compactionTimeoutMs + 10_000);

  interface CompactRequest {
    sessionId: string;
    reason: CompactionReason;
    focus: string | undefined;
    signal: AbortSignal | undefined;
    hostMessages: readonly GuardMessage[];
    view: View;
    tokens: number;
    contextWindow: number;
    threshold: number;
    memo: CompactionMemo;
    summaryApplies: boolean;
    hashOf: (i: number) => number;
    measureHost: () => MeasuredPrompt;
    measure: (messages: GuardMessage[]) => MeasuredPrompt;
    calibration: CalibrationState;
    /** Real counts recorded in the session so far. */
    usageRecorded: number;
  }

  /** Runs the compaction pipeline with its hooks and events; undefined when nothing was done. */
  async function compactLocked(r: CompactRequest): Promise<
    { messages: GuardMessage[]; tokens: number; memo: CompactionMemo; calibration: CalibrationState; result: CompactionResult } | undefined
  > {
    const { sessionId } = r;
    const settings = compactionSettings(resolved, r.contextWindow, r.threshold);
    let override: string | undefined;
    if (resolved.beforeCompact) {
      try {
        const answer = await resolved.beforeCompact({
          sessionId,
          reason: r.reason,
          messages: r.view.messages,
          tokens: r.tokens,
          threshold: r.threshold,
          target: settings.target,
          focus: r.focus,
        });
        // Cancelling is honoured while the prompt still fits the window; past it, the guard never sends it.
        if (answer?.cancel === true && r.tokens <= r.contextWindow) return undefined;
        if (typeof answer?.summary === 'string' && answer.summary.trim()) override = answer.summary.trim();
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'beforeCompact', error });
      }
    }

    const started = Date.now();
    // One deadline for every summarizer call of this compaction; past it the rest folds mechanically.
    const deadline = started + settings.compactionTimeoutMs;
    const onDigestLoss = (lostMessages: number, lostUserMessages: number) => {
      if (lostMessages > 0) emit({ type: 'digest-loss', sessionId, lostMessages, lostUserMessages });
    };
    let startEmitted = false;
    const onStart = () => {
      if (startEmitted) return;
      startEmitted = true;
      emit({
        type: 'compaction-start',
        sessionId,
        reason: r.reason,
        tokens: r.tokens,
        threshold: r.threshold,
        target: settings.target,
        messages: r.view.messages.length,
        ...(r.focus !== undefined ? { focus: r.focus } : {}),
      });
    };
    // The pipeline prices prompts as the calls after the compaction will. What this call's own
    // estimate knew beyond that pricing (the part of a single real count no model of growth
    // explains yet) is carried as an offset, so that no compaction stops short of the target.
    const now = r.measure(r.view.messages);
    const reset = compactionCalibration(r.calibration, resolved.calibration, r.tokens, now.chars, now.mediaTokens);
    const price = priceAfterReset(reset, resolved.calibration);
    const tokensPerChar = tokensPerCharAfterReset(reset, resolved.calibration);
    const pipelineInput = (summarizer: typeof resolved.summarizer): Parameters<typeof runPipeline>[0] => ({
      sessionId,
      reason: r.reason,
      focus: r.focus,
      input: r.hostMessages,
      hashOf: r.hashOf,
      prefixOf: (n) => {
        const host = r.measureHost();
        return { messages: n, chars: host.cumChars[n - 1] ?? 0, hash: n > 0 ? (host.cumHash[n - 1] ?? 0) : 0 };
      },
      memo: r.memo,
      summaryApplies: r.summaryApplies,
      settings,
      threshold: r.threshold,
      contextWindow: r.contextWindow,
      redact: resolved.redact,
      tokensBefore: r.tokens,
      measure: r.measure,
      price,
      tokensPerChar,
      onStart,
      onDigestLoss,
      summarize: async (messages, previousSummary, roomTokens, userRoomTokens) => {
        const outcome = await summarize(
          {
            sessionId,
            messages,
            previousSummary,
            focus: r.focus,
            maxSummaryTokens: settings.maxSummaryTokens,
            summarizerContextWindow: settings.summarizerContextWindow,
            timeoutMs: settings.summarizerTimeoutMs,
            deadline,
            tokensPerChar: Math.max(tokensPerChar, resolved.calibration.default / CHARS_PER_TOKEN),
            summarizer,
            roomTokens,
            userRoomTokens,
            redact: resolved.redact,
            ...(r.signal ? { signal: r.signal } : {}),
            breaker,
            onFailure: (reason, consecutiveFailures, error) =>
              emit({ type: 'summarizer-failed', sessionId, reason, consecutiveFailures, ...(error !== undefined ? { error } : {}) }),
          },
          override,
        );
        onDigestLoss(outcome.lostMessages, outcome.lostUserMessages);
        return outcome;
      },
    });
    let output: Awaited<ReturnType<typeof runPipeline>>;
    try {
      output = await runPipeline(pipelineInput(resolved.summarizer));
    } catch (error) {
      // A bug in a compaction step must not send the bloated prompt: report it and compact again
      // the plainest way (mechanical summary, no summarizer involved).
      emit({ type: 'error', sessionId, stage: 'compaction', error });
      output = await runPipeline(pipelineInput(undefined));
    }
    if (!output.result) return undefined;
    const result: CompactionResult = { ...output.result, durationMs: Date.now() - started };
    if (result.overflow) {
      emit({ type: 'overflow', sessionId, tokens: Math.ceil(output.tokens), threshold: r.threshold, contextWindow: r.contextWindow });
    }
    emit({ type: 'compaction-end', sessionId, ...result });
    // A request left cut or without its media is not retried until the history or the calibration changes.
    const request = requestIndex(r.hostMessages, output.memo.own);
    const memo: CompactionMemo = requestEditsDropped(output.memo, request)
      ? { ...output.memo, requestDecided: { request, messages: r.hostMessages.length, usage: r.usageRecorded } }
      : output.memo;
    if (memo.requestDecided && memo === output.memo) delete memo.requestDecided;
    return { messages: output.view.messages, tokens: Math.ceil(output.tokens), memo, calibration: reset, result };
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
    const state = await load(sessionId);
    const pending = state.calibration.pending;
    if (!pending) {
      emit({ type: 'usage-ignored', sessionId, reason: 'no-request', usage });
      return;
    }
    const contextWindow = state.status?.contextWindow;
    // Each count finite, the sum too: two cache counts of 1e308 add up to Infinity.
    const inputTokens = usage.inputTokens + (extra as number[]).reduce((a, b) => a + b, 0);
    const plausible = plausibleInputRange(pending, resolved.calibration, contextWindow);
    if (!Number.isFinite(inputTokens) || inputTokens < plausible.min || inputTokens > plausible.max) {
      emit({ type: 'usage-ignored', sessionId, reason: 'implausible', usage, plausible });
      return;
    }
    const outputValid = usage.outputTokens === undefined || (isCount(usage.outputTokens) && usage.outputTokens <= plausibleOutputMax(contextWindow));
    if (!outputValid) emit({ type: 'usage-ignored', sessionId, reason: 'invalid-output-tokens', usage });
    const outputTokens = outputValid ? usage.outputTokens : undefined;

    const tokens = inputTokens + (outputTokens ?? 0);
    let recorded: PendingRequest | undefined;
    await commit(sessionId, state, (current) => {
      // Applied to the freshest state: the request waiting for this count is the stored one.
      const pending = current.calibration.pending;
      recorded = pending;
      if (!pending) return current;
      return {
        ...current,
        usageRecorded: current.usageRecorded + 1,
        calibration: recordRealCount(current.calibration, pending, inputTokens, outputTokens, resolved.calibration),
        ...(current.status
          ? { status: { ...current.status, tokens, source: 'provider' as const, fraction: tokens / current.status.contextWindow } }
          : {}),
      };
    });
    if (!recorded) {
      emit({ type: 'usage-ignored', sessionId, reason: 'no-request', usage });
      return;
    }
    emit({
      type: 'usage-recorded',
      sessionId,
      inputTokens,
      ...(outputTokens !== undefined ? { outputTokens } : {}),
      estimatedTokens: recorded.estimatedTokens,
      relativeError: (recorded.estimatedTokens - inputTokens) / inputTokens,
    });
  }

  /**
   * What a call that failed inside the guard sends: never the raw input (it may be far over the
   * window), but the smallest prompt that fits, priced at the default correction. Unguarded only
   * when no window is known at all, as any call for that model would be.
   */
  function failClosed(input: BeforeModelInput | undefined, messages: readonly GuardMessage[]): BeforeModelResult {
    let contextWindow: number | undefined;
    try {
      contextWindow = windowFor(input?.sessionId ?? '', input?.modelId, input?.contextWindow);
    } catch {
      contextWindow = resolved.contextWindow;
    }
    const valid = validMessages(messages).messages;
    if (contextWindow === undefined) return { messages: valid.slice(), tokens: 0, threshold: Number.POSITIVE_INFINITY, contextWindow, fraction: 0 };
    const threshold = thresholdFor(contextWindow, resolved.buffer) > 0 ? thresholdFor(contextWindow, resolved.buffer) : thresholdFor(contextWindow, undefined);
    const correction = resolved.calibration.default;
    const out = minimalPrompt(valid, threshold, correction);
    let tokens = 0;
    for (const m of out) {
      try {
        const measure = measureMessage(m, 'generic');
        tokens += (measure.chars / CHARS_PER_TOKEN) * correction + measure.mediaTokens;
      } catch {
        // Counted as nothing: minimalPrompt already priced what it kept.
      }
    }
    tokens = Math.ceil(tokens);
    return { messages: out, tokens, threshold, contextWindow, fraction: tokens / contextWindow };
  }

  return {
    options: resolved,

    async beforeModel(input) {
      const raw: readonly unknown[] = Array.isArray(input?.messages) ? input.messages : [];
      const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
      let messages: readonly GuardMessage[] = raw as readonly GuardMessage[];
      try {
        if (!sessionId) throw new TypeError('beforeModel: `sessionId` must be a non-empty string');
        if (!Array.isArray(input.messages)) throw new TypeError('beforeModel: `messages` must be an array');
        const checked = checkedInputs.check(sessionId, raw);
        messages = checked.messages;
        if (checked.dropped.length > 0) emit({ type: 'invalid-messages', sessionId, indices: checked.dropped, reasons: checked.reasons });
        return await inCall(sessionId, () => beforeModelLocked({ ...input, messages }));
      } catch (error) {
        emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'beforeModel', error });
        return failClosed(input, messages);
      }
    },

    async afterModel(input) {
      const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
      try {
        if (!sessionId) throw new TypeError('afterModel: `sessionId` must be a non-empty string');
        await inCall(sessionId, () => afterModelLocked(input));
      } catch (error) {
        emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'afterModel', error });
      }
    },

    async status(sessionId) {
      try {
        const state = await load(sessionId);
        return state.status ? { sessionId, ...state.status } : undefined;
      } catch (error) {
        emit({ type: 'error', sessionId, stage: 'status', error });
        return undefined;
      }
    },

    async compact(sessionId, options = {}) {
      try {
        if (typeof sessionId !== 'string' || !sessionId) throw new TypeError('compact: `sessionId` must be a non-empty string');
        const focus = typeof options?.focus === 'string' && options.focus.trim() ? options.focus.trim() : undefined;
        await inCall(sessionId, async () => {
          const state = await load(sessionId);
          await commit(sessionId, state, (current) => ({ ...current, compactRequest: focus !== undefined ? { focus } : {} }));
        });
      } catch (error) {
        emit({ type: 'error', ...(typeof sessionId === 'string' && sessionId ? { sessionId } : {}), stage: 'compact', error });
      }
    },

    async recoverFromOverflow(input) {
      const sessionId = typeof input?.sessionId === 'string' ? input.sessionId : '';
      try {
        if (!sessionId || !isContextLengthError(input.error)) return { retry: false };
        const reportedTokens = promptTokensFromError(input.error);
        await inCall(sessionId, async () => {
          if (reportedTokens !== undefined) await afterModelLocked({ sessionId, usage: { inputTokens: reportedTokens } });
          const state = await load(sessionId);
          await commit(sessionId, state, (current) => ({ ...current, compactRequest: current.compactRequest ?? {} }));
        });
        emit({ type: 'overflow-retry', sessionId, ...(reportedTokens !== undefined ? { reportedTokens } : {}) });
        return { retry: true, ...(reportedTokens !== undefined ? { reportedTokens } : {}) };
      } catch (error) {
        emit({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'recoverFromOverflow', error });
        return { retry: false };
      }
    },

    async reset(sessionId) {
      measurer.forget(sessionId);
      measurer.forget(inputKey(sessionId));
      checkedInputs.forget(sessionId);
      validUpTo.delete(sessionId);
      if (shadow) await shadow.delete(sessionId);
      await withStore(sessionId, 'delete', () => store.delete(sessionId));
    },
  };
}
