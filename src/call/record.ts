// Record: what a call leaves behind, the estimate it reports and the request it sends (waiting for
// its real count) with what it changed in the session, in one commit through the session repository.
// The real count that comes back after the model call is usage.ts's.
import type { BeforeModelResult } from '../api.ts';
import type { Call } from './measure.ts';
import type { CompactionOutcome } from '../compaction/compaction.ts';
import type { ResolvedOptions } from '../config.ts';
import type { ContextGuardEvent, EstimateEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import type { SessionRepository } from '../state/repository.ts';
import type { PendingRequest, SessionCosts, SessionState } from '../state/session.ts';
import type { CompactionResult } from '../compaction/contract.ts';
import { resetCalibration } from '../tokens/calibration.ts';
import type { MeasuredPrompt } from '../tokens/prompt-measure.ts';
import type { Turn } from './turn.ts';

/** What the recording needs of the guard. */
export interface RecordContext {
  options: ResolvedOptions;
  sessions: SessionRepository;
  emit: (event: ContextGuardEvent) => void;
  /** Whether anyone hears this session's events (onEvent, or a subscription): events are built only then. */
  listens(sessionId: string): boolean;
}

/** The `estimate` event (and a `warning` past `warnAt`, a `tool-pairing-repaired` for a repair), when anyone listens. */
export function reportEstimate(ctx: RecordContext, { call, prepared, input }: Turn): void {
  const { sessionId, contextWindow, threshold } = call;
  // None are built when nobody listens.
  if (!ctx.listens(sessionId)) return;
  const { unansweredCalls, orphanResults, restoredCalls = 0 } = prepared.view;
  if (unansweredCalls + orphanResults > 0)
    ctx.emit({ type: 'tool-pairing-repaired', sessionId, unansweredCalls, orphanResults, restoredCalls });
  const fraction = contextWindow === undefined ? 0 : prepared.est.tokens / contextWindow;
  const { tokens, heuristicTokens, correction, method } = prepared.est;
  const messages = prepared.view.messages.length;
  const event: EstimateEvent = { type: 'estimate', sessionId, tokens, heuristicTokens, correction, method, messages };
  if (input.modelId) event.modelId = input.modelId;
  if (contextWindow !== undefined) {
    event.threshold = threshold;
    event.contextWindow = contextWindow;
    event.fraction = fraction;
  }
  ctx.emit(event);
  const warnAt = ctx.options.warnAt;
  if (contextWindow !== undefined && fraction >= warnAt)
    ctx.emit({ type: 'warning', sessionId, tokens, threshold, contextWindow, fraction, warnAt });
}

/** What a turn that decided to compact did: the compaction's outcome (none when a hook cancelled it, or nothing was done). */
export interface CompactionAttempt {
  outcome: CompactionOutcome | undefined;
  /** Whether it compacted or tried to (a pending compaction request is then done with). */
  attempted: boolean;
}

const NOT_ATTEMPTED: CompactionAttempt = { outcome: undefined, attempted: false };

/** The prompt a call sends, its estimate and its measure. */
interface Sent {
  messages: GuardMessage[];
  tokens: number;
  measured: Pick<MeasuredPrompt, 'chars' | 'mediaTokens' | 'toolChars' | 'prompt'>;
}

/**
 * Stores what this call sends (the request waiting for its real count) and what it changed, then
 * answers: at once, without a promise, into the default in-memory store when it did not compact.
 */
export function recordCall(
  ctx: RecordContext,
  turn: Turn,
  attempt: CompactionAttempt = NOT_ATTEMPTED,
): BeforeModelResult | Promise<BeforeModelResult> {
  const { call, state, prepared } = turn;
  const { outcome } = attempt;
  const messages = outcome?.messages ?? prepared.view.messages;
  const sent: Sent = {
    messages,
    tokens: outcome?.tokens ?? prepared.est.tokens,
    // Measured once: by the estimate, or by the compaction that produced the prompt.
    measured: outcome ? outcome.measured : prepared.measured,
  };
  const result = resultOf(call, sent, outcome);
  if (prepared.fixed && !state.fixedReported && call.contextWindow !== undefined)
    ctx.emit({
      type: 'fixed-over-threshold',
      sessionId: call.sessionId,
      fixedTokens: prepared.fixed.tokens,
      hiddenTokens: prepared.fixed.hidden,
      threshold: call.threshold,
      limit: prepared.fixed.limit,
      contextWindow: call.contextWindow,
    });
  const committed = ctx.sessions.commit(call.sessionId, state, (current) =>
    recordedState(ctx, turn, attempt, sent, current),
  );
  if (!outcome && !(committed instanceof Promise)) return result;
  return afterCommit(ctx, call.sessionId, committed, outcome, result);
}

/** What beforeModel answers. */
function resultOf(call: Call, { messages, tokens }: Sent, outcome: CompactionOutcome | undefined): BeforeModelResult {
  const { contextWindow, threshold } = call;
  const result: BeforeModelResult = {
    messages,
    tokens,
    threshold,
    contextWindow,
    fraction: contextWindow === undefined ? 0 : tokens / contextWindow,
  };
  // Set only when there (no spread of a conditional object: a slower copy, on every call).
  if (outcome) result.compaction = outcome.result;
  if ((contextWindow !== undefined && tokens > threshold) || outcome?.result.overflow) result.overflow = true;
  return result;
}

/**
 * The session's state after this call, applied to the freshest one: a new object (stores may keep
 * values by reference), built field by field, with no rest copy.
 */
function recordedState(
  ctx: RecordContext,
  { call, state, prepared, staleCompared }: Turn,
  { outcome, attempted }: CompactionAttempt,
  { tokens, measured }: Sent,
  current: SessionState,
): SessionState {
  const { contextWindow, threshold } = call;
  // This call's memo wins when it compacted or changed the stored one (a stale summary dropped, a
  // request sent whole again); otherwise what is stored is kept (another process may have compacted).
  const changed = (state.memo?.summary !== undefined && !prepared.summaryApplies) || prepared.memoChanged === true;
  const memo = outcome?.memo ?? (changed ? prepared.memo : current.memo);
  // A request sent whole again (the guard dropped its own cut) no longer extends the last count's
  // prompt: like a compaction, the guard's own edit, so that count becomes the reference and the next
  // one goes on comparing the invisible share (as the anchor, it would read as a host's rewrite).
  const calibration = outcome
    ? resetCalibration(current.calibration, outcome.calibration.reference?.offset ?? 0)
    : prepared.memoChanged === true && current.calibration.anchor
      ? resetCalibration(current.calibration)
      : current.calibration;
  const next: SessionState = { ...current, calls: current.calls + 1 };
  // Deleted only when present (rare): a delete makes the object slower to read.
  if (memo) next.memo = memo;
  else if ('memo' in next) delete next.memo;
  if ('compactRequest' in next && (!current.compactRequest || attempted)) delete next.compactRequest;
  // The mark this call read and compared the whole history for (turn.ts); a newer one stays.
  if (staleCompared !== undefined && current.historyStale === staleCompared) delete next.historyStale;
  if (prepared.fixed) next.fixedReported = true;
  else if ('fixedReported' in next && tokens <= threshold) delete next.fixedReported;
  const { pace, costs } = paceAndCosts(current, tokens, outcome?.result, ctx.options.cost);
  next.pace = pace;
  next.costs = costs;
  next.startedAt = current.startedAt ?? new Date().toISOString();
  const { chars, mediaTokens, toolChars, prompt } = measured;
  const extendsAnchor = outcome ? false : prepared.extendsAnchor;
  const pending: PendingRequest = { chars, mediaTokens, toolChars, prompt, extendsAnchor, estimatedTokens: tokens };
  // The anchor's response measured in the host's prompt, compacted or not: the provider's output count is for it.
  if (prepared.response) pending.response = prepared.response;
  next.calibration = { ...calibration, pending };
  if (contextWindow !== undefined)
    next.status = { tokens, source: 'estimate', threshold, contextWindow, fraction: tokens / contextWindow };
  return next;
}

/** After a commit that waits for the store or follows a compaction: the afterCompact hook, then the answer. */
async function afterCommit(
  ctx: RecordContext,
  sessionId: string,
  committed: SessionState | Promise<SessionState>,
  outcome: CompactionOutcome | undefined,
  result: BeforeModelResult,
): Promise<BeforeModelResult> {
  await committed;
  if (outcome) await afterCompact(ctx, sessionId, outcome, result.messages);
  return result;
}

/** Decay of the growth per call: recent calls weigh most, one outlier does not set the pace. */
const GROWTH_DECAY = 0.7;

/** The session's pace of growth and running costs, with this call's prompt counted. */
function paceAndCosts(
  current: SessionState,
  tokens: number,
  compaction: CompactionResult | undefined,
  prices: { cacheRead: number; cacheWrite: number },
): Pick<SessionState, 'pace' | 'costs'> {
  const previous = current.pace;
  let growth = previous?.growth ?? 0;
  if (!compaction && previous && tokens > previous.last) {
    const added = tokens - previous.last;
    growth = growth > 0 ? GROWTH_DECAY * growth + (1 - GROWTH_DECAY) * added : added;
  }
  // What repeats the previous prompt is a cache read: all of it when the prompt only grew, the part
  // before the first changed message after a compaction.
  const cached = compaction
    ? Math.max(0, tokens - compaction.cacheBrokenTokens)
    : previous
      ? Math.min(previous.last, tokens)
      : 0;
  const before = current.costs;
  const costs: SessionCosts = {
    calls: (before?.calls ?? 0) + 1,
    promptTokens: (before?.promptTokens ?? 0) + tokens,
    cachedTokens: (before?.cachedTokens ?? 0) + cached,
    billedInputUnits:
      (before?.billedInputUnits ?? 0) + cached * prices.cacheRead + (tokens - cached) * prices.cacheWrite,
    compactions: (before?.compactions ?? 0) + (compaction ? 1 : 0),
    cacheBrokenTokens: (before?.cacheBrokenTokens ?? 0) + (compaction?.cacheBrokenTokens ?? 0),
    summarizerInputTokens: (before?.summarizerInputTokens ?? 0) + (compaction?.summarizerInputTokens ?? 0),
    tokensRemoved:
      (before?.tokensRemoved ?? 0) + (compaction ? Math.max(0, compaction.tokensBefore - compaction.tokensAfter) : 0),
  };
  return { pace: { last: tokens, growth }, costs };
}

async function afterCompact(
  ctx: RecordContext,
  sessionId: string,
  outcome: CompactionOutcome,
  messages: GuardMessage[],
): Promise<void> {
  try {
    await ctx.options.afterCompact?.({ sessionId, result: outcome.result, messages });
  } catch (error) {
    ctx.emit({ type: 'error', sessionId, stage: 'afterCompact', error });
  }
}
