// Judging a provider's usage report before it becomes a real count. What a provider or an adapter
// reports can be missing, malformed, or a number no provider could have counted for the request (a
// corrupted 1e12, a cache count that overflows to Infinity, 1 token for a long prompt): one such
// count would anchor every later estimate, so it is ignored with the reason, never recorded. A count
// within the window is a count the provider accepted: it is real, however far it is from what the
// visible text suggests (a system prompt or tool schemas the host keeps out of the guard's sight),
// and it is always recorded; calibration.ts decides how much of what it reveals later calls carry.
import type { ModelUsage } from './api.ts';
import type { ResolvedCalibration } from './config.ts';
import type { UsageIgnoredEvent } from './events.ts';
import type { PendingRequest } from './state/session.ts';
import { plausibleInputRange, plausibleOutputMax } from './tokens/calibration.ts';

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
  c: ResolvedCalibration,
  contextWindow: number | undefined,
): UsageVerdict {
  const extra = (usage.cacheReadInputTokens ?? 0) + (usage.cacheWriteInputTokens ?? 0);
  // Each count finite, the sum too: two cache counts of 1e308 add up to Infinity.
  const inputTokens = usage.inputTokens + extra;
  const plausible = plausibleInputRange(pending, c, contextWindow);
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
