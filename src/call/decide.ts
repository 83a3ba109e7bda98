// Decide: whether this call compacts, and the call a compaction runs with. Pure: no store, no events.
import { hasCompactable, requestIndex } from '../compaction/request.ts';
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
export function needsCompaction(call: Call, state: SessionState, p: Prepared): boolean {
  if (call.contextWindow === undefined) return false;
  if (state.compactRequest !== undefined || p.requestEdited === true) return true;
  if (p.est.tokens <= limitOf(call, p)) return false;
  if (p.memo?.overflowed !== true || p.est.tokens > call.contextWindow) return true;
  const request = requestIndex(call.hostMessages, p.memo.own);
  return p.memo.requestClip?.index === request || hasCompactable(p.view, request);
}

/**
 * The call a compaction runs with. When the fixed part alone is over the threshold, its threshold is
 * half way from the fixed part to the limit: a compaction that stopped just under the limit would
 * leave no room, and the next call would compact again.
 */
export function compactionCall(call: Call, p: Prepared): Call {
  if (!p.fixed) return call;
  const threshold = Math.floor(p.fixed.tokens + Math.max(0, p.fixed.limit - p.fixed.tokens) / 2);
  // The call's own measures and caches, seen through an object that answers another threshold.
  return Object.create(call, { threshold: { value: Math.max(call.threshold, threshold) } }) as Call;
}
