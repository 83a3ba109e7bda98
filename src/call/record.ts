// Record: what a call leaves behind, the estimate it reports and the request it sends (waiting for
// its real count) with what it changed in the session, in one commit through the session repository.
// The real count that comes back after the model call is usage.ts's.
import type { BeforeModelResult } from '../api.ts';
import type { Call } from './measure.ts';
import type { CompactionOutcome } from '../compaction/compaction.ts';
import type { ResolvedOptions } from '../config.ts';
import type { ContextGuardEvent, EstimateEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import type { Prepared } from './estimate.ts';
import type { SessionRepository } from '../state/repository.ts';
import type { SessionCosts, SessionState } from '../state/session.ts';
import type { CompactionResult } from '../compaction/contract.ts';
import { resetCalibration } from '../tokens/calibration.ts';

/** What the recording needs of the guard. */
export interface RecordContext {
  options: ResolvedOptions;
  sessions: SessionRepository;
  emit: (event: ContextGuardEvent) => void;
  /** Whether anyone hears this session's events (onEvent, or a subscription): events are built only then. */
  listens(sessionId: string): boolean;
}

export function reportEstimate(ctx: RecordContext, call: Call, p: Prepared, modelId: string | undefined): void {
  const { sessionId, contextWindow, threshold } = call;
  // None are built when nobody listens.
  if (!ctx.listens(sessionId)) return;
  const { unansweredCalls, orphanResults } = p.view;
  if (unansweredCalls + orphanResults > 0)
    ctx.emit({ type: 'tool-pairing-repaired', sessionId, unansweredCalls, orphanResults });
  const fraction = contextWindow === undefined ? 0 : p.est.tokens / contextWindow;
  const { tokens, heuristicTokens, correction, method } = p.est;
  const messages = p.view.messages.length;
  const event: EstimateEvent = { type: 'estimate', sessionId, tokens, heuristicTokens, correction, method, messages };
  if (modelId) event.modelId = modelId;
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

/**
 * Stores what this call sends (the request waiting for its real count) and what it changed, then
 * answers. `staleCompared`: the stale-history mark the call read and compared the whole history
 * for (SessionState.historyStale), cleared unless a newer one came meanwhile.
 */
export function recordCall(
  ctx: RecordContext,
  call: Call,
  state: SessionState,
  p: Prepared,
  outcome: CompactionOutcome | undefined,
  attempted: boolean,
  staleCompared?: number,
): BeforeModelResult | Promise<BeforeModelResult> {
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
  // A new state object (stores may keep values by reference), built field by field: no rest copy.
  const change = (current: SessionState): SessionState => {
    const memo = outcome?.memo ?? (changed ? p.memo : current.memo);
    const calibration = outcome
      ? resetCalibration(current.calibration, outcome.calibration.reference?.offset ?? 0)
      : current.calibration;
    const next: SessionState = { ...current, calls: current.calls + 1 };
    // Deleted only when present (rare): a delete makes the object slower to read.
    if (memo) next.memo = memo;
    else if ('memo' in next) delete next.memo;
    if ('compactRequest' in next && (!current.compactRequest || attempted)) delete next.compactRequest;
    // The mark this call read and compared the whole history for (guard.ts); a newer one stays.
    if (staleCompared !== undefined && current.historyStale === staleCompared) delete next.historyStale;
    if (p.fixed) next.fixedReported = true;
    else if ('fixedReported' in next && tokens <= threshold) delete next.fixedReported;
    const { pace, costs } = paceAndCosts(current, tokens, outcome?.result, ctx.options.cost);
    next.pace = pace;
    next.costs = costs;
    next.startedAt = current.startedAt ?? new Date().toISOString();
    next.calibration = { ...calibration, pending };
    if (contextWindow !== undefined)
      next.status = { tokens, source: 'estimate', threshold, contextWindow, fraction: tokens / contextWindow };
    return next;
  };
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
  if (p.fixed && !state.fixedReported && contextWindow !== undefined)
    ctx.emit({
      type: 'fixed-over-threshold',
      sessionId,
      fixedTokens: p.fixed.tokens,
      hiddenTokens: p.fixed.hidden,
      threshold,
      limit: p.fixed.limit,
      contextWindow,
    });
  // The default in-memory store: no promise on the common path.
  if (!outcome && ctx.sessions.commitNow(sessionId, state, change)) return result;
  return (async () => {
    await ctx.sessions.commit(sessionId, state, change);
    if (outcome) await afterCompact(ctx, sessionId, outcome, messages);
    return result;
  })();
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
  const c = current.costs;
  const costs: SessionCosts = {
    calls: (c?.calls ?? 0) + 1,
    promptTokens: (c?.promptTokens ?? 0) + tokens,
    cachedTokens: (c?.cachedTokens ?? 0) + cached,
    billedInputUnits: (c?.billedInputUnits ?? 0) + cached * prices.cacheRead + (tokens - cached) * prices.cacheWrite,
    compactions: (c?.compactions ?? 0) + (compaction ? 1 : 0),
    cacheBrokenTokens: (c?.cacheBrokenTokens ?? 0) + (compaction?.cacheBrokenTokens ?? 0),
    summarizerInputTokens: (c?.summarizerInputTokens ?? 0) + (compaction?.summarizerInputTokens ?? 0),
    tokensRemoved:
      (c?.tokensRemoved ?? 0) + (compaction ? Math.max(0, compaction.tokensBefore - compaction.tokensAfter) : 0),
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
