// What the guard remembers per session. Plain JSON (no class instances, no message objects) so
// that any store can serialize it; the guard never mutates a stored value, it writes a new one.
import type { CompactionMemo } from '../compaction/memo.ts';
import type { RequestMeasure } from '../tokens/fingerprint.ts';

export type { PromptFingerprint, RequestMeasure } from '../tokens/fingerprint.ts';

/** A request beforeModel measured, and what it predicted for it. */
export interface PendingRequest extends RequestMeasure {
  /** Whether it started with the anchor's prompt (its growth then calibrates the marginal rate). */
  extendsAnchor: boolean;
  estimatedTokens: number;
  /**
   * The response right after the anchor's prompt, as this request measured it (heuristic tokens),
   * and the output tokens the provider reported for it: a real count of visible text alone, with
   * no invisible share in it (tokens/calibration.ts, outputRate). Absent when the request did not
   * extend the anchor, or no output count was reported.
   */
  response?: { heuristicTokens: number; outputTokens: number };
}

export interface CalibrationState {
  /** The latest request with a real count: the anchor of the next estimate. */
  anchor?: RequestMeasure & { realTokens: number; outputTokens?: number };
  /**
   * Decayed sums of growth between consecutive anchors (real tokens added, heuristic tokens
   * added): their ratio is the marginal correction, free of any constant invisible part of the
   * prompt (a provider's hidden system prompt) that inflates real / heuristic on small prompts.
   * With the messages added (Σ n, Σ n² / heuristic, Σ n × real / heuristic) they fit a cost per
   * message beside the rate (tokens/calibration.ts, growthModel); absent in states stored before.
   */
  growth?: {
    realTokens: number;
    heuristicTokens: number;
    messages?: number;
    messageLoad?: number;
    messageReal?: number;
  };
  /** The last request sent, waiting for its real count in afterModel. */
  pending?: PendingRequest;
  /**
   * The invisible share real counts reveal: what the provider counts beyond the visible prompt
   * priced at the growth model's rate (its formatting, a system prompt or tool schemas the host
   * keeps elsewhere). `last`: the latest count's; `recent`: the last three counts' (since the host
   * last rewrote its history), all read at the latest count's rate; `consistent`: the smallest of
   * them, set from the second count on. A
   * share consistent from call to call is real and survives a compaction (it does not shrink with
   * the visible prompt); a one-off jump (a host reporting the sum of several steps) is at most an
   * upper bound and is not carried (tokens/calibration.ts). `floors`: for the same counts, what
   * lies beyond calibration.max × the visible text, invisible for sure even from a single count.
   */
  hidden?: {
    last: number;
    consistent?: number;
    recent?: number[];
    floors?: number[];
    /**
     * The counts behind the last entries of `recent` (the same number or fewer: states stored
     * before kept none), as [real tokens without media, visible heuristic tokens]: each is read
     * again at the rate of the latest count, so that the shares compared were all read alike.
     */
    counts?: Array<[number, number]>;
  };
  /**
   * Decayed sums of the output tokens the provider reported for responses the guard measured
   * afterwards, and of those responses' heuristic tokens: the rate the provider counts visible text
   * at, no invisible share in it; absent in states stored before, and until such a response.
   */
  output?: { realTokens: number; heuristicTokens: number };
  /**
   * The largest recent shortfall of an anchored estimate: real tokens beyond what was estimated,
   * decayed at each real count (tokens/calibration.ts, shortfallMargin); absent in states stored
   * before, and where no estimate fell short.
   */
  shortfall?: number;
  /**
   * The last anchor before a compaction reset the calibration: until the compacted prompt gets
   * its own real count, it still tells how this provider counts (see calibration.ts).
   */
  reference?: {
    realTokens: number;
    chars: number;
    mediaTokens: number;
    /**
     * Tokens the last estimate knew of beyond this pricing (a hidden prompt seen through a single
     * real count): added to every prompt priced from the reference, so the compacted prompt is
     * estimated on the next call exactly as the compaction planned it.
     */
    offset?: number;
  };
}

/**
 * What the session's prompts cost, as a provider with prompt caching bills them: the part of each
 * prompt that repeats the previous one is a cache read; the rest (what was added, and everything
 * after the first message a compaction changed) is written. In tokens, as estimated.
 */
export interface SessionCosts {
  /** Model calls counted. */
  calls: number;
  /** Prompt tokens sent, all calls together. */
  promptTokens: number;
  /** Of those, the tokens that repeated the previous call's prompt (cache reads). */
  cachedTokens: number;
  /** `cachedTokens × cacheRead + (promptTokens − cachedTokens) × cacheWrite` (the `cost` option's prices). */
  billedInputUnits: number;
  compactions: number;
  /** Tokens after the first message each compaction changed: what it made the provider write again. */
  cacheBrokenTokens: number;
  /** Tokens the summarizer was sent (billed at full price, by another call). */
  summarizerInputTokens: number;
  /** Tokens compactions took out of the prompt (before − after), all together. */
  tokensRemoved: number;
}

export interface SessionStatus {
  sessionId: string;
  /** Tokens the conversation holds: the last estimate, or the real count once afterModel saw it. */
  tokens: number;
  /** Whether `tokens` is the provider's count (plus the response) or the guard's estimate. */
  source: 'estimate' | 'provider';
  threshold: number;
  contextWindow: number;
  /** tokens / contextWindow, what a UI shows as `[ctx: 72%]`. */
  fraction: number;
  /** The session's running totals: what its prompts and compactions cost. */
  costs?: SessionCosts;
}

export interface SessionState {
  version: 1;
  calibration: CalibrationState;
  /** Model calls seen by beforeModel. */
  calls: number;
  /** When beforeModel first saw the session (ISO): where its first archive batch starts. */
  startedAt?: string;
  /** Real counts accepted by afterModel. */
  usageRecorded: number;
  /** What status() reports; absent until a window is known. */
  status?: Omit<SessionStatus, 'sessionId' | 'costs'>;
  costs?: SessionCosts;
  /**
   * How the prompt grows: the last prompt sent (tokens) and the mean growth per call between
   * compactions (decayed), which sets how deep the next compaction cuts.
   */
  pace?: { last: number; growth: number };
  /** What compaction did to the host's history, re-applied on every call. */
  memo?: CompactionMemo;
  /** Set by guard.compact(): the next beforeModel compacts even under the threshold. */
  compactRequest?: { focus?: string };
  /**
   * Set by a real count further from its estimate than STALE_VIEW_ERROR (in call/usage.ts), to that
   * count's `usageRecorded`: the next beforeModel, in whichever process it runs, compares the whole
   * history with what its input check took on trust (an old message edited in place shows there
   * first). Cleared by a call that did so after reading this very mark, never by one that read the
   * state before it was set.
   */
  historyStale?: number;
  /**
   * Set when a `fixed-over-threshold` event reported that the fixed part of every prompt alone is
   * over the threshold (call/record.ts): reported once, until a call is under the threshold again.
   */
  fixedReported?: boolean;
}

export function emptySessionState(): SessionState {
  return { version: 1, calibration: {}, calls: 0, usageRecorded: 0 };
}

/**
 * A state read from the user's store with its invisible-share readings dropped when they are not
 * as the guard writes them (finite numbers, at most three in each array, the counts in pairs):
 * another version or a broken write left something else there. Read as absent, they start again at
 * the next real count. Checked here, once per read from the store, so that the calibration reads
 * them as it wrote them on every count.
 */
export function withReadableHidden(state: SessionState): SessionState {
  const hidden = state.calibration.hidden;
  if (hidden === undefined || readableHidden(hidden)) return state;
  const { hidden: _unreadable, ...calibration } = state.calibration;
  return { ...state, calibration };
}

/** Readings, floors and counts the guard keeps: those of the last three real counts. */
const KEPT_READINGS = 3;

const finite = (value: unknown): boolean => Number.isFinite(value);
const pair = (value: unknown): boolean => Array.isArray(value) && value.length === 2 && value.every(finite);
/** Absent, or an array of at most KEPT_READINGS entries that `each` accepts. */
const kept = (value: unknown, each: (entry: unknown) => boolean): boolean =>
  value === undefined || (Array.isArray(value) && value.length <= KEPT_READINGS && value.every(each));

function readableHidden(hidden: unknown): boolean {
  if (typeof hidden !== 'object' || hidden === null) return false;
  const { last, consistent, recent, floors, counts } = hidden as Record<string, unknown>;
  return (
    finite(last) &&
    (consistent === undefined || finite(consistent)) &&
    kept(recent, finite) &&
    kept(floors, finite) &&
    kept(counts, pair)
  );
}
