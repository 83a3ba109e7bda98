// Decide: whether this call compacts, the call a compaction runs with, and whether a state loaded
// again asks for a new decision. Pure: no store, no events.
import { hasCompactable } from '../compaction/request.ts';
import type { SessionState } from '../state/session.ts';
import { limitOf, type Prepared } from './estimate.ts';
import type { Call } from './measure.ts';

/**
 * Whether this call compacts: on request (the compact tool, an overflow retry), to send a request
 * whole that an earlier compaction had to cut, or over the threshold. Not when the last compaction
 * already sent the smallest prompt (an overflow, reported once) and nothing was added since that
 * another could remove; but never past the window itself (a real count may since have shown the
 * prompt costs more), and never over the threshold with a request that was cut anyway.
 */
export function needsCompaction(call: Call, state: SessionState, prepared: Prepared): boolean {
  if (call.contextWindow === undefined) return false;
  if (state.compactRequest !== undefined || prepared.requestEdited === true) return true;
  const { est, memo, request } = prepared;
  if (est.tokens <= limitOf(call, prepared)) return false;
  if (memo?.overflowed !== true || est.tokens > call.contextWindow) return true;
  return memo.requestClip?.index === request || hasCompactable(prepared.view, request);
}

/**
 * The call a compaction runs with. When the fixed part alone is over the threshold, its threshold is
 * half way from the fixed part to the limit: a compaction that stopped just under the limit would
 * leave no room, and the next call would compact again.
 */
export function compactionCall(call: Call, prepared: Prepared): Call {
  const { fixed } = prepared;
  if (!fixed) return call;
  const threshold = Math.floor(fixed.tokens + Math.max(0, fixed.limit - fixed.tokens) / 2);
  // The call's own measures and caches, seen through an object that answers another threshold.
  return Object.create(call, { threshold: { value: Math.max(call.threshold, threshold) } }) as Call;
}

/**
 * Whether a state loaded again differs from the one an estimate was made on in anything the
 * estimate, the decision or the compaction read. Every write of the memo or the calibration counts
 * a call or a real count; a compaction request counts neither, and a reset starts the session anew.
 */
export function stateMovedOn(before: SessionState, after: SessionState): boolean {
  if (before === after) return false;
  return (
    before.calls !== after.calls ||
    before.usageRecorded !== after.usageRecorded ||
    before.startedAt !== after.startedAt ||
    before.compactRequest?.focus !== after.compactRequest?.focus ||
    (before.compactRequest === undefined) !== (after.compactRequest === undefined)
  );
}
