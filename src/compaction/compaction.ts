// Compaction's entry point, the only module the call pipeline imports to compact: `compact` runs one
// compaction of one call. The beforeCompact hook, the pricing the pipeline plans with, the pipeline
// itself (pipeline.ts) with the summarizer wired in (its deadline, its circuit breaker, its events),
// and the afterwards: the archive, events, the result, and the memo the next calls re-apply.
import type { Archive } from '../archive/archive.ts';
import type { ResolvedOptions } from '../config.ts';
import type { ContextGuardEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import type { CalibrationState } from '../state/session.ts';
import { compactionCalibration, priceAfterReset, tokensPerCharAfterReset } from '../tokens/calibration.ts';
import { hashMessage } from '../tokens/hash.ts';
import { CHARS_PER_TOKEN } from '../tokens/heuristic.ts';
import type { CanonicalMessages, MeasuredPrompt } from '../tokens/prompt-measure.ts';
import type { LostWords } from './instructions.ts';
import { emptyMemo, requestEditsDropped, type CompactionMemo, type View } from './memo.ts';
import { runPipeline } from './pipeline.ts';
import { compactionSettings, type CompactionSettings } from './policy.ts';
import { requestIndex } from './request.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { runSummarizer } from './summarizer.ts';
import type { CompactionReason, CompactionResult } from './contract.ts';
import type { PipelineInput, PipelineOutput, PromptSize } from './work.ts';

// The guard's breaker, one per guard, is made from here too: the call pipeline imports one module to compact.
export { CircuitBreaker } from './circuit-breaker.ts';

/**
 * What compaction needs of the call it compacts (the call pipeline's Call satisfies it): its window
 * and threshold, the host's messages and how to measure them.
 */
export interface CompactionCall {
  sessionId: string;
  /** The host's messages (entries that are not messages already left out). */
  hostMessages: readonly GuardMessage[];
  contextWindow: number;
  threshold: number;
  /** A prompt measured with the tools, incrementally against this session's previous prompt. */
  measure: (messages: GuardMessage[]) => MeasuredPrompt;
  /** The host's messages measured on their own (fingerprints and hashes for the memo). */
  measureHost: () => MeasuredPrompt;
  /** Content hash of host message i. */
  hashOf: (index: number) => number;
  /** The host's system messages with the tools, measured once per call (the fixed part of every prompt). */
  measureSystem: () => { chars: number; mediaTokens: number };
  /** The canonical form the history check handed over for `hostMessages`, when it kept one. */
  canonical?: CanonicalMessages | undefined;
}

/** What a call gives `compact`. */
export interface CompactionInput {
  /** The call: its window and threshold, the host's messages and how to measure them. */
  call: CompactionCall;
  env: CompactionEnv;
  /** The session as the call found it. */
  session: SessionFacts;
  /** The prompt the call prepared: the memo re-applied to the host's messages, and its estimate. */
  prepared: PreparedPrompt;
  /** The model call's signal: when it fires, a summarizer in flight is aborted. */
  signal: AbortSignal | undefined;
}

/** What compaction reads of the session's state. */
export interface SessionFacts {
  /** A compaction asked for (the compact tool, `guard.compact`, an overflow retry), with its focus. */
  compactRequest?: { focus?: string };
  calibration: CalibrationState;
  /** Real counts recorded in the session so far. */
  usageRecorded: number;
  /** When the session started (ISO), the start of its first archive batch. */
  startedAt?: string;
  /** How much the session's prompt grows per call (decayed mean), for the depth of the cut. */
  pace?: { growth: number };
}

/** What compaction reads of the prompt the call prepared. */
export interface PreparedPrompt {
  /** The prompt as it would be sent now. */
  view: View;
  est: { tokens: number };
  /** The view's messages measured (with the tools): a compaction does not measure them again. */
  measured: { chars: number; mediaTokens: number };
  /** The memo it was rendered with (undefined: none yet). */
  memo: CompactionMemo | undefined;
  /** Whether the memo's summary covers the start of the host's messages. */
  summaryApplies: boolean;
}

/** The guard's part in every compaction: its options, its events, its summarizer breaker, its archive. */
export interface CompactionEnv {
  options: ResolvedOptions;
  emit: (event: ContextGuardEvent) => void;
  /** One per guard: a failing summarizer fails for every session. */
  breaker: CircuitBreaker;
  archive: Archive;
}

export interface CompactionOutcome {
  messages: GuardMessage[];
  tokens: number;
  /** The measure of `messages` (with the tools), taken once by the compaction: the call records it, not measuring again. */
  measured: PromptSize;
  memo: CompactionMemo;
  /** The calibration the compaction planned with: the session's, reset. */
  calibration: CalibrationState;
  result: CompactionResult;
}

/** The prompt before the compaction, why it is compacted and what prices it. */
interface Before {
  reason: CompactionReason;
  focus: string | undefined;
  signal: AbortSignal | undefined;
  /** The prompt as it would be sent now, its estimate, and the memo and calibration it came from. */
  view: View;
  tokens: number;
  /** The view's measure: characters and media tokens. */
  measured: { chars: number; mediaTokens: number };
  memo: CompactionMemo;
  summaryApplies: boolean;
  calibration: CalibrationState;
  usageRecorded: number;
  startedAt: string | undefined;
  growthPerCall: number;
}

/** One compaction's plan: its settings, its pricing, its deadline and its archive batch. */
interface Plan {
  settings: CompactionSettings;
  /** The session's calibration reset: the pipeline prices prompts as the calls after the compaction will. */
  reset: CalibrationState;
  /** A summary the beforeCompact hook wrote, used instead of the summarizer's. */
  override: string | undefined;
  started: number;
  /** One deadline for every summarizer call of this compaction; past it the rest folds mechanically. */
  deadline: number;
  /** The archive batch of this compaction, and the time span it covers. */
  label: string;
  start: string;
  end: string;
}

/** The pipeline's output when a step changed the prompt. */
type Compacted = PipelineOutput & { result: NonNullable<PipelineOutput['result']> };

/** Compacts the call's prompt, with its hooks and events; undefined when nothing was done (or a hook cancelled it). */
export async function compact({
  call,
  env,
  session,
  prepared,
  signal,
}: CompactionInput): Promise<CompactionOutcome | undefined> {
  const before = beforeOf(session, prepared, signal);
  const settings = compactionSettings(env.options, call.contextWindow as number, call.threshold, before.growthPerCall);
  const hook = await askBeforeCompact(call, before, env, settings.target);
  if (hook === 'cancel') return undefined;
  const plan = planOf(call, before, env, settings, hook);
  const input = pipelineInput(call, before, env, plan);
  let output: PipelineOutput;
  try {
    output = await runPipeline(input(env.options.summarizer));
  } catch (error) {
    // A bug in a compaction step must not send the bloated prompt: report it and compact again
    // the plainest way (mechanical summary, no summarizer involved).
    env.emit({ type: 'error', sessionId: call.sessionId, stage: 'compaction', error });
    output = await runPipeline(input(undefined));
  }
  if (!output.result) return undefined;
  return archiveAndReport(call, before, env, plan, output as Compacted);
}

function beforeOf(session: SessionFacts, prepared: PreparedPrompt, signal: AbortSignal | undefined): Before {
  const requested = session.compactRequest;
  return {
    // A requested compaction (the compact tool, an overflow retry) summarizes even when pruning would do.
    reason: requested ? 'manual' : 'threshold',
    focus: requested?.focus,
    signal,
    view: prepared.view,
    tokens: prepared.est.tokens,
    measured: prepared.measured,
    memo: prepared.memo ?? emptyMemo(),
    summaryApplies: prepared.summaryApplies,
    calibration: session.calibration,
    usageRecorded: session.usageRecorded,
    startedAt: session.startedAt,
    growthPerCall: session.pace?.growth ?? 0,
  };
}

function planOf(
  call: CompactionCall,
  before: Before,
  env: CompactionEnv,
  settings: CompactionSettings,
  override: string | undefined,
): Plan {
  const started = Date.now();
  const { label, end } = env.archive.label(call.sessionId, started);
  // The pipeline prices prompts as the calls after the compaction will (see compactionCalibration).
  const { chars, mediaTokens } = before.measured;
  const reset = compactionCalibration(before.calibration, env.options.calibration, before.tokens, chars, mediaTokens);
  return {
    settings,
    reset,
    override,
    started,
    deadline: started + settings.compactionTimeoutMs,
    label,
    // The batch holds what arrived since the previous batch (or the session's start).
    start: before.memo.archivedUntil ?? before.startedAt ?? end,
    end,
  };
}

/** The originals archived before the prompt without them is sent; then the events and the outcome. */
async function archiveAndReport(
  call: CompactionCall,
  before: Before,
  env: CompactionEnv,
  plan: Plan,
  output: Compacted,
): Promise<CompactionOutcome> {
  const receipt = await env.archive.record({
    sessionId: call.sessionId,
    label: plan.label,
    start: plan.start,
    end: plan.end,
    input: call.hostMessages,
    before: before.view,
    after: output.view,
    oldMemo: before.memo,
    newMemo: output.memo,
    hashOf: call.hashOf,
    result: output.result,
    extraBatches: output.batches,
    redact: env.options.redact,
  });
  output.memo.archivedUntil = plan.end;
  const result: CompactionResult = {
    ...output.result,
    cacheBrokenTokens: cacheBroken(before.view.messages, output),
    durationMs: Date.now() - plan.started,
  };
  const tokens = Math.ceil(output.tokens);
  const { sessionId, threshold } = call;
  if (result.overflow)
    env.emit({ type: 'overflow', sessionId, tokens, threshold, contextWindow: call.contextWindow as number });
  env.emit({ type: 'compaction-end', sessionId, ...result, receipt });
  const { chars, mediaTokens, toolChars, prompt } = output.measured;
  return {
    messages: output.view.messages,
    tokens,
    measured: { chars, mediaTokens, toolChars, prompt },
    memo: withRequestDecision(call, output.memo, before.usageRecorded),
    calibration: plan.reset,
    result,
  };
}

/**
 * Tokens of the compacted prompt from the first message that differs from the prompt the call would
 * have sent without compacting (which extends the previous call's): the part the provider must
 * write to its cache again. Messages are compared by content: an edit re-applied on every call is
 * a new object with the same bytes.
 */
function cacheBroken(before: readonly GuardMessage[], { view, tokens, measured }: Compacted): number {
  const after = view.messages;
  let k = 0;
  while (k < before.length && k < after.length && (before[k] === after[k] || sameContent(before[k], after[k]))) k++;
  if (k >= after.length) return 0;
  // The pipeline's own measure of the prompt it produced (its entries copied), not a new one.
  const total = measured.chars + measured.mediaTokens * CHARS_PER_TOKEN;
  let kept = 0;
  for (let i = 0; i < k; i++) {
    const e = measured.entries[i];
    if (e) kept += e.chars + e.mediaTokens * CHARS_PER_TOKEN;
  }
  return total > 0 ? Math.ceil(tokens * (1 - kept / total)) : Math.ceil(tokens);
}

function sameContent(a: GuardMessage | undefined, b: GuardMessage | undefined): boolean {
  return a !== undefined && b !== undefined && a.role === b.role && hashMessage(a) === hashMessage(b);
}

/** The hook's answer: 'cancel', a summary to use instead of the summarizer's, or undefined. */
async function askBeforeCompact(
  call: CompactionCall,
  before: Before,
  env: CompactionEnv,
  target: number,
): Promise<'cancel' | string | undefined> {
  const hook = env.options.beforeCompact;
  if (!hook) return undefined;
  try {
    const answer = await hook({
      sessionId: call.sessionId,
      reason: before.reason,
      // A copy: the view may be the host's own array, which a hook must not be able to change.
      messages: before.view.messages.slice(),
      tokens: before.tokens,
      threshold: call.threshold,
      target,
      focus: before.focus,
    });
    // Cancelling is honoured while the prompt still fits the window; past it, the guard never sends it.
    if (answer?.cancel === true && before.tokens <= (call.contextWindow as number)) return 'cancel';
    if (typeof answer?.summary === 'string' && answer.summary.trim()) return answer.summary.trim();
  } catch (error) {
    env.emit({ type: 'error', sessionId: call.sessionId, stage: 'beforeCompact', error });
  }
  return undefined;
}

/** The pipeline's input for a summarizer (undefined: the mechanical digest only). */
function pipelineInput(call: CompactionCall, before: Before, env: CompactionEnv, plan: Plan) {
  const reports = reporters(call, before, env, plan);
  const tokensPerChar = tokensPerCharAfterReset(plan.reset, env.options.calibration);
  return (summarizer: ResolvedOptions['summarizer']): PipelineInput => ({
    sessionId: call.sessionId,
    reason: before.reason,
    focus: before.focus,
    hostMessages: call.hostMessages,
    hashOf: call.hashOf,
    prefixOf: (n) => {
      const host = call.measureHost();
      return { messages: n, chars: host.cumChars[n - 1] ?? 0, hash: n > 0 ? (host.cumHash[n - 1] ?? 0) : 0 };
    },
    memo: before.memo,
    summaryApplies: before.summaryApplies,
    settings: plan.settings,
    threshold: call.threshold,
    contextWindow: call.contextWindow as number,
    redact: env.options.redact,
    archive: plan.settings.archive ? { label: plan.label, start: plan.start, end: plan.end } : undefined,
    tokensBefore: before.tokens,
    measure: call.measure,
    measureSystem: () => call.measureSystem(),
    price: priceAfterReset(plan.reset, env.options.calibration),
    tokensPerChar,
    onStart: reports.onStart,
    onDigestLoss: reports.onDigestLoss,
    onUserWordsLost: reports.onUserWordsLost,
    summarize: summarizeWith(call, before, env, plan, {
      summarizer,
      tokensPerChar,
      onDigestLoss: reports.onDigestLoss,
    }),
  });
}

/** The pipeline's callbacks that report what it did: the compaction's start (once), digest losses, the user's words lost. */
function reporters(call: CompactionCall, before: Before, env: CompactionEnv, plan: Plan) {
  const { sessionId } = call;
  const { emit } = env;
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
    const { reason, tokens, focus } = before;
    emit({
      type: 'compaction-start',
      sessionId,
      reason,
      tokens,
      threshold: call.threshold,
      target: plan.settings.target,
      messages: before.view.messages.length,
      ...(focus !== undefined ? { focus } : {}),
    });
  };
  return { onStart, onDigestLoss, onUserWordsLost };
}

/** The pipeline's `summarize`: the summarizer (or the mechanical digest) run with this compaction's budgets, deadline and breaker. */
function summarizeWith(
  call: CompactionCall,
  before: Before,
  env: CompactionEnv,
  plan: Plan,
  given: {
    summarizer: ResolvedOptions['summarizer'];
    /** The calibrated tokens per character the compaction plans with. */
    tokensPerChar: number;
    onDigestLoss: PipelineInput['onDigestLoss'];
  },
): PipelineInput['summarize'] {
  const { sessionId } = call;
  const { options, emit } = env;
  const { tokensPerChar } = given;
  return async (messages, previousSummary, roomTokens, userRoomTokens, contextOnly) => {
    const outcome = await runSummarizer(
      {
        sessionId,
        messages,
        previousSummary,
        focus: before.focus,
        maxSummaryTokens: plan.settings.maxSummaryTokens,
        readTokens: plan.settings.summarizerInputTokens,
        summarizerContextWindow: plan.settings.summarizerContextWindow,
        timeoutMs: plan.settings.summarizerTimeoutMs,
        deadline: plan.deadline,
        tokensPerChar: Math.max(tokensPerChar, options.calibration.default / CHARS_PER_TOKEN),
        reportTokensPerChar: tokensPerChar,
        summarizer: given.summarizer,
        roomTokens,
        userRoomTokens,
        ...(contextOnly && contextOnly.size > 0 ? { contextOnly } : {}),
        redact: options.redact,
        ...(before.signal ? { signal: before.signal } : {}),
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
    given.onDigestLoss(outcome.lostMessages, outcome.lostUserMessages);
    return outcome;
  };
}

/** A request left cut or without its media is not retried until the history or the calibration changes. */
function withRequestDecision(call: CompactionCall, memo: CompactionMemo, usageRecorded: number): CompactionMemo {
  const request = requestIndex(call.hostMessages, memo.own, call.canonical);
  const { requestDecided: _old, ...rest } = memo;
  if (!requestEditsDropped(memo, request)) return rest;
  return { ...rest, requestDecided: { request, messages: call.hostMessages.length, usage: usageRecorded } };
}
