// Compaction's entry point, the only module the call pipeline imports to compact. One compaction of
// one call: the beforeCompact hook, the pricing the pipeline plans with, the pipeline itself with
// the summarizer wired in (its deadline, its circuit breaker, its events), and the afterwards:
// events, the result, and the memo the next calls re-apply.
import type { LostWords } from './instructions.ts';
import type { Archive } from '../archive/archive.ts';
import type { Call } from '../call.ts';
import { compactionSettings, type ResolvedOptions } from '../config.ts';
import type { ContextGuardEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import type { CalibrationState } from '../state/session.ts';
import { compactionCalibration, priceAfterReset, tokensPerCharAfterReset } from '../tokens/calibration.ts';
import { hashMessage } from '../tokens/hash.ts';
import { CHARS_PER_TOKEN } from '../tokens/heuristic.ts';
import { emptyMemo, requestEditsDropped, type CompactionMemo, type View } from './memo.ts';
import { runPipeline, type PipelineInput } from './pipeline.ts';
import { requestIndex } from './request.ts';
import { summarize, type CircuitBreaker } from './summarizer.ts';
import type { CompactionReason, CompactionResult } from './types.ts';

// The call pipeline imports this module alone to compact: the breaker it gives every compaction too.
export { CircuitBreaker } from './summarizer.ts';

/** What the call knows when it compacts. */
export interface CompactionRequest {
  reason: CompactionReason;
  focus: string | undefined;
  signal: AbortSignal | undefined;
  /** The prompt as it would be sent now, its estimate, and the memo and calibration it came from. */
  view: View;
  tokens: number;
  memo: CompactionMemo;
  summaryApplies: boolean;
  calibration: CalibrationState;
  /** Real counts recorded in the session so far. */
  usageRecorded: number;
  /** When the session started (ISO), the start of its first archive batch. */
  startedAt: string | undefined;
  /** How much the session's prompt grows per call (decayed mean), for the depth of the cut. */
  growthPerCall: number;
}

export interface CompactionOutcome {
  messages: GuardMessage[];
  tokens: number;
  memo: CompactionMemo;
  /** The calibration the compaction planned with: the session's, reset. */
  calibration: CalibrationState;
  result: CompactionResult;
}

export interface CompactionEnv {
  options: ResolvedOptions;
  emit: (event: ContextGuardEvent) => void;
  /** One per guard: a failing summarizer fails for every session. */
  breaker: CircuitBreaker;
  archive: Archive;
}

/** What a call that compacts knows: the session's state and the prompt it prepared. */
export function compactionRequest(
  state: {
    compactRequest?: { focus?: string };
    calibration: CalibrationState;
    usageRecorded: number;
    startedAt?: string;
    pace?: { growth: number };
  },
  p: { view: View; est: { tokens: number }; memo: CompactionMemo | undefined; summaryApplies: boolean },
  signal: AbortSignal | undefined,
): CompactionRequest {
  const requested = state.compactRequest;
  return {
    // A requested compaction (the compact tool, an overflow retry) summarizes even when pruning would do.
    reason: requested ? 'manual' : 'threshold',
    focus: requested?.focus,
    signal,
    view: p.view,
    tokens: p.est.tokens,
    memo: p.memo ?? emptyMemo(),
    summaryApplies: p.summaryApplies,
    calibration: state.calibration,
    usageRecorded: state.usageRecorded,
    startedAt: state.startedAt,
    growthPerCall: state.pace?.growth ?? 0,
  };
}

/** Runs the compaction pipeline with its hooks and events; undefined when nothing was done (or a hook cancelled it). */
export async function compact(
  call: Call,
  r: CompactionRequest,
  env: CompactionEnv,
): Promise<CompactionOutcome | undefined> {
  const contextWindow = call.contextWindow as number;
  const settings = compactionSettings(env.options, contextWindow, call.threshold, r.growthPerCall);
  const hook = await askBeforeCompact(call, r, env, settings.target);
  if (hook === 'cancel') return undefined;
  const started = Date.now();
  const { label, end } = env.archive.label(call.sessionId, started);
  // The batch holds what arrived since the previous batch (or the session's start).
  const start = r.memo.archivedUntil ?? r.startedAt ?? end;
  // The pipeline prices prompts as the calls after the compaction will (see compactionCalibration).
  const now = call.measure(r.view.messages);
  const reset = compactionCalibration(r.calibration, env.options.calibration, r.tokens, now.chars, now.mediaTokens);
  const input = pipelineInput(call, r, env, {
    settings,
    reset,
    override: hook,
    deadline: started + settings.compactionTimeoutMs,
    label,
    start,
    end,
  });
  let output: Awaited<ReturnType<typeof runPipeline>>;
  try {
    output = await runPipeline(input(env.options.summarizer));
  } catch (error) {
    // A bug in a compaction step must not send the bloated prompt: report it and compact again
    // the plainest way (mechanical summary, no summarizer involved).
    env.emit({ type: 'error', sessionId: call.sessionId, stage: 'compaction', error });
    output = await runPipeline(input(undefined));
  }
  if (!output.result) return undefined;
  // The originals are archived before the prompt without them is sent.
  const receipt = await env.archive.record({
    sessionId: call.sessionId,
    label,
    start,
    end,
    input: call.hostMessages,
    before: r.view,
    after: output.view,
    oldMemo: r.memo,
    newMemo: output.memo,
    hashOf: call.hashOf,
    result: output.result,
    extraBatches: output.batches,
    redact: env.options.redact,
  });
  output.memo.archivedUntil = end;
  const result: CompactionResult = {
    ...output.result,
    cacheBrokenTokens: cacheBroken(call, r.view.messages, output.view.messages, output.tokens),
    durationMs: Date.now() - started,
  };
  const tokens = Math.ceil(output.tokens);
  if (result.overflow)
    env.emit({ type: 'overflow', sessionId: call.sessionId, tokens, threshold: call.threshold, contextWindow });
  env.emit({ type: 'compaction-end', sessionId: call.sessionId, ...result, receipt });
  return {
    messages: output.view.messages,
    tokens,
    memo: withRequestDecision(call, output.memo, r.usageRecorded),
    calibration: reset,
    result,
  };
}

/**
 * Tokens of the compacted prompt from the first message that differs from the prompt the call would
 * have sent without compacting (which extends the previous call's): the part the provider must
 * write to its cache again. Messages are compared by content: an edit re-applied on every call is
 * a new object with the same bytes.
 */
function cacheBroken(
  call: Call,
  before: readonly GuardMessage[],
  after: readonly GuardMessage[],
  tokens: number,
): number {
  let k = 0;
  while (k < before.length && k < after.length && (before[k] === after[k] || sameContent(before[k], after[k]))) k++;
  if (k >= after.length) return 0;
  const whole = call.measure(after as GuardMessage[]);
  const total = whole.chars + whole.mediaTokens * CHARS_PER_TOKEN;
  let kept = 0;
  for (let i = 0; i < k; i++) {
    const e = whole.entries[i];
    if (e) kept += e.chars + e.mediaTokens * CHARS_PER_TOKEN;
  }
  return total > 0 ? Math.ceil(tokens * (1 - kept / total)) : Math.ceil(tokens);
}

function sameContent(a: GuardMessage | undefined, b: GuardMessage | undefined): boolean {
  return a !== undefined && b !== undefined && a.role === b.role && hashMessage(a) === hashMessage(b);
}

/** The hook's answer: 'cancel', a summary to use instead of the summarizer's, or undefined. */
async function askBeforeCompact(
  call: Call,
  r: CompactionRequest,
  env: CompactionEnv,
  target: number,
): Promise<'cancel' | string | undefined> {
  const hook = env.options.beforeCompact;
  if (!hook) return undefined;
  try {
    const answer = await hook({
      sessionId: call.sessionId,
      reason: r.reason,
      // A copy: the view may be the host's own array, which a hook must not be able to change.
      messages: r.view.messages.slice(),
      tokens: r.tokens,
      threshold: call.threshold,
      target,
      focus: r.focus,
    });
    // Cancelling is honoured while the prompt still fits the window; past it, the guard never sends it.
    if (answer?.cancel === true && r.tokens <= (call.contextWindow as number)) return 'cancel';
    if (typeof answer?.summary === 'string' && answer.summary.trim()) return answer.summary.trim();
  } catch (error) {
    env.emit({ type: 'error', sessionId: call.sessionId, stage: 'beforeCompact', error });
  }
  return undefined;
}

interface Plan {
  settings: ReturnType<typeof compactionSettings>;
  reset: CalibrationState;
  override: string | undefined;
  /** One deadline for every summarizer call of this compaction; past it the rest folds mechanically. */
  deadline: number;
  /** The archive batch of this compaction, and the time span it covers. */
  label: string;
  start: string;
  end: string;
}

/** The pipeline's input for a summarizer (undefined: the mechanical digest only). */
function pipelineInput(call: Call, r: CompactionRequest, env: CompactionEnv, plan: Plan) {
  const { sessionId } = call;
  const { options, emit } = env;
  const tokensPerChar = tokensPerCharAfterReset(plan.reset, options.calibration);
  const onDigestLoss = (lostMessages: number, lostUserMessages: number) => {
    if (lostMessages > 0) emit({ type: 'digest-loss', sessionId, lostMessages, lostUserMessages });
  };
  const onUserWordsLost = (lost: readonly LostWords[], budget: number) => {
    const messages = lost.map((l) => ({ ...l }));
    const sentences = messages.reduce((n, l) => n + l.sentences, 0);
    const chars = messages.reduce((n, l) => n + l.chars, 0);
    if (sentences > 0) emit({ type: 'user-words-dropped', sessionId, messages, sentences, chars, budget });
  };
  let startEmitted = false;
  const onStart = () => {
    if (startEmitted) return;
    startEmitted = true;
    const { reason, tokens, focus } = r;
    emit({
      type: 'compaction-start',
      sessionId,
      reason,
      tokens,
      threshold: call.threshold,
      target: plan.settings.target,
      messages: r.view.messages.length,
      ...(focus !== undefined ? { focus } : {}),
    });
  };
  return (summarizer: ResolvedOptions['summarizer']): PipelineInput => ({
    sessionId,
    reason: r.reason,
    focus: r.focus,
    input: call.hostMessages,
    hashOf: call.hashOf,
    prefixOf: (n) => {
      const host = call.measureHost();
      return { messages: n, chars: host.cumChars[n - 1] ?? 0, hash: n > 0 ? (host.cumHash[n - 1] ?? 0) : 0 };
    },
    memo: r.memo,
    summaryApplies: r.summaryApplies,
    settings: plan.settings,
    threshold: call.threshold,
    contextWindow: call.contextWindow as number,
    redact: options.redact,
    archive: plan.settings.archive ? { label: plan.label, start: plan.start, end: plan.end } : undefined,
    tokensBefore: r.tokens,
    measure: call.measure,
    price: priceAfterReset(plan.reset, options.calibration),
    tokensPerChar,
    onStart,
    onDigestLoss,
    onUserWordsLost,
    summarize: async (messages, previousSummary, roomTokens, userRoomTokens, contextOnly) => {
      const outcome = await summarize(
        {
          sessionId,
          messages,
          previousSummary,
          focus: r.focus,
          maxSummaryTokens: plan.settings.maxSummaryTokens,
          readTokens: plan.settings.summarizerInputTokens,
          summarizerContextWindow: plan.settings.summarizerContextWindow,
          timeoutMs: plan.settings.summarizerTimeoutMs,
          deadline: plan.deadline,
          tokensPerChar: Math.max(tokensPerChar, options.calibration.default / CHARS_PER_TOKEN),
          reportTokensPerChar: tokensPerChar,
          summarizer,
          roomTokens,
          userRoomTokens,
          ...(contextOnly && contextOnly.size > 0 ? { contextOnly } : {}),
          redact: options.redact,
          ...(r.signal ? { signal: r.signal } : {}),
          breaker: env.breaker,
          onFailure: (reason, consecutiveFailures, error) =>
            emit({
              type: 'summarizer-failed',
              sessionId,
              reason,
              consecutiveFailures,
              ...(error !== undefined ? { error } : {}),
            }),
        },
        plan.override,
      );
      onDigestLoss(outcome.lostMessages, outcome.lostUserMessages);
      return outcome;
    },
  });
}

/** A request left cut or without its media is not retried until the history or the calibration changes. */
function withRequestDecision(call: Call, memo: CompactionMemo, usageRecorded: number): CompactionMemo {
  const request = requestIndex(call.hostMessages, memo.own);
  const { requestDecided: _old, ...rest } = memo;
  if (!requestEditsDropped(memo, request)) return rest;
  return { ...rest, requestDecided: { request, messages: call.hostMessages.length, usage: usageRecorded } };
}
