// afterModel's stage: a provider's usage report judged, then recorded as a real count. What a
// provider or an adapter reports can be missing, malformed, or a number no provider could have counted for the request (a
// corrupted 1e12, a cache count that overflows to Infinity, 1 token for a long prompt): one such
// count would anchor every later estimate, so it is ignored with the reason, never recorded. A count
// within the window is a count the provider accepted: it is real, however far it is from what the
// visible text suggests (a system prompt or tool schemas the host keeps out of the guard's sight),
// and it is always recorded; calibration.ts decides how much of what it reveals later calls carry.
import type { ModelUsage } from '../api.ts';
import type { ResolvedCalibration } from '../config.ts';
import type { UsageIgnoredEvent, UsageRecordedEvent } from '../events.ts';
import type { PendingRequest, SessionState } from '../state/session.ts';
import { plausibleInputRange, plausibleOutputMax, recordRealCount } from '../tokens/calibration.ts';
import type { RecordContext } from './record.ts';

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

export type UsageVerdict =
  | { ok: true; inputTokens: number; outputTokens: number | undefined; outputIgnored: boolean }
  | { ok: false; reason: UsageIgnoredEvent['reason']; plausible?: { min: number; max: number } };

/** Whether `usage` has the shape of a real count, before any request is looked at. */
export function usageShapeProblem(usage: ModelUsage | undefined | null): UsageIgnoredEvent['reason'] | undefined {
  if (usage === undefined || usage === null || typeof usage !== 'object') return 'missing';
  const { cacheReadInputTokens: read, cacheWriteInputTokens: write } = usage;
  // Zero is no real count either: no prompt costs nothing, and some providers report 0 when unknown.
  if (!isCount(usage.inputTokens) || usage.inputTokens === 0) return 'invalid-input-tokens';
  // The cache counts, when given, are counts too (checked without building an array on every call).
  if ((read !== undefined && !isCount(read)) || (write !== undefined && !isCount(write))) return 'invalid-input-tokens';
  return undefined;
}

/**
 * The real count `usage` gives for the `pending` request, or why it is ignored. The input count is
 * the total (cached tokens reported apart are added); it is taken when it lies in the range the
 * request could plausibly cost (plausibleInputRange): any count up to the window, and beyond it
 * (a window set below the model's) what the visible text with an invisible part could cost; never
 * one absurdly low for the text. An implausible output count alone is dropped and the input count kept.
 */
export function judgeUsage(
  usage: ModelUsage,
  pending: PendingRequest,
  calibration: ResolvedCalibration,
  contextWindow: number | undefined,
): UsageVerdict {
  const extra = (usage.cacheReadInputTokens ?? 0) + (usage.cacheWriteInputTokens ?? 0);
  // Each count finite, the sum too: two cache counts of 1e308 add up to Infinity.
  const inputTokens = usage.inputTokens + extra;
  const plausible = plausibleInputRange(pending, calibration, contextWindow);
  if (!Number.isFinite(inputTokens) || inputTokens < plausible.min || inputTokens > plausible.max)
    return { ok: false, reason: 'implausible', plausible };
  const outputValid =
    usage.outputTokens === undefined ||
    (isCount(usage.outputTokens) && usage.outputTokens <= plausibleOutputMax(contextWindow));
  return {
    ok: true,
    inputTokens,
    outputTokens: outputValid ? usage.outputTokens : undefined,
    outputIgnored: !outputValid,
  };
}

/**
 * A real count this far from the estimate (relative) marks the session's view of its history as
 * possibly stale (SessionState.historyStale): several times the calibrated estimate's usual error
 * (p95 about 1%, see BENCHMARKS.md), so that only a view gone stale, not the calibration's noise,
 * triggers a comparison of the whole history.
 */
export const STALE_VIEW_ERROR = 0.03;

/**
 * afterModel: the real count, judged against the request waiting for it, folded into the
 * calibration (and, when far off its estimate, marking the history as possibly stale). At once (no
 * promise) with the default in-memory store.
 */
export function recordUsage(
  ctx: RecordContext,
  sessionId: string,
  usage: ModelUsage | null | undefined,
): undefined | Promise<void> {
  const shape = usageShapeProblem(usage);
  if (shape || !usage) return ignoreUsage(ctx, sessionId, usage, shape ?? 'missing');
  const state = ctx.sessions.load(sessionId);
  if (state instanceof Promise) return state.then((loaded) => usageOn(ctx, sessionId, usage, loaded));
  return usageOn(ctx, sessionId, usage, state);
}

/** A real count not recorded, reported (no closure built per call for it). */
function ignoreUsage(
  ctx: RecordContext,
  sessionId: string,
  usage: ModelUsage | null | undefined,
  reason: UsageIgnoredEvent['reason'],
  extra = {},
): undefined {
  ctx.emit({ type: 'usage-ignored', sessionId, reason, usage, ...extra });
  return undefined;
}

/** A count judged plausible, and the request it was recorded for (the stored one, when the commit found one). */
interface AcceptedCount {
  inputTokens: number;
  outputTokens: number | undefined;
  recorded?: PendingRequest;
}

function usageOn(
  ctx: RecordContext,
  sessionId: string,
  usage: ModelUsage,
  state: SessionState,
): undefined | Promise<void> {
  const pending = state.calibration.pending;
  if (!pending) return ignoreUsage(ctx, sessionId, usage, 'no-request');
  const verdict = judgeUsage(usage, pending, ctx.options.calibration, state.status?.contextWindow);
  if (!verdict.ok) {
    const extra = verdict.plausible ? { plausible: verdict.plausible } : {};
    return ignoreUsage(ctx, sessionId, usage, verdict.reason, extra);
  }
  if (verdict.outputIgnored) ignoreUsage(ctx, sessionId, usage, 'invalid-output-tokens');
  const count: AcceptedCount = { inputTokens: verdict.inputTokens, outputTokens: verdict.outputTokens };
  const committed = ctx.sessions.commit(sessionId, state, (current) => withRealCount(ctx, current, count));
  if (committed instanceof Promise) return committed.then(() => reportCount(ctx, sessionId, usage, count));
  return reportCount(ctx, sessionId, usage, count);
}

/** The state with the real count folded in, applied to the freshest state: the request waiting for it is the stored one. */
function withRealCount(ctx: RecordContext, current: SessionState, count: AcceptedCount): SessionState {
  const recorded = current.calibration.pending;
  count.recorded = recorded;
  if (!recorded) return current;
  const { inputTokens, outputTokens } = count;
  const calibration = recordRealCount(
    current.calibration,
    recorded,
    inputTokens,
    outputTokens,
    ctx.options.calibration,
  );
  // Fields set on the copy, not spread from objects built for the purpose (a slower copy, every call).
  const next: SessionState = { ...current, usageRecorded: current.usageRecorded + 1, calibration };
  // Far off: the guard's view of the history may be stale (see SessionState.historyStale). Stored,
  // so that the next call compares everything whichever process it lands on.
  if (Math.abs(recorded.estimatedTokens - inputTokens) > STALE_VIEW_ERROR * inputTokens)
    next.historyStale = next.usageRecorded;
  const status = current.status;
  const tokens = inputTokens + (outputTokens ?? 0);
  if (status) next.status = { ...status, tokens, source: 'provider', fraction: tokens / status.contextWindow };
  return next;
}

/** The count recorded (`usage-recorded`), or ignored when the stored state had no request waiting for it. */
function reportCount(
  ctx: RecordContext,
  sessionId: string,
  usage: ModelUsage,
  { inputTokens, outputTokens, recorded }: AcceptedCount,
): undefined {
  if (!recorded) return ignoreUsage(ctx, sessionId, usage, 'no-request');
  // None is built when nobody listens.
  if (!ctx.listens(sessionId)) return undefined;
  const { estimatedTokens } = recorded;
  const event: UsageRecordedEvent = {
    type: 'usage-recorded',
    sessionId,
    inputTokens,
    estimatedTokens,
    relativeError: (estimatedTokens - inputTokens) / inputTokens,
  };
  if (outputTokens !== undefined) event.outputTokens = outputTokens;
  ctx.emit(event);
  return undefined;
}
