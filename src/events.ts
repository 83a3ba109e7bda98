// The typed event stream: everything a user may want to log or show, one discriminated union.
// Events are how the guard reports problems at call time, since it never throws into the agent.
import type { CompactionReceipt } from './archive/types.ts';
import type { CompactionReason, CompactionResult } from './compaction/contract.ts';

interface SessionEvent {
  sessionId: string;
}

/** Emitted by every beforeModel: the measurements behind the decision. */
export interface EstimateEvent extends SessionEvent {
  type: 'estimate';
  modelId?: string;
  /** Calibrated estimate of the prompt. */
  tokens: number;
  /** Plain chars/4 (plus media) of the same prompt, before calibration. */
  heuristicTokens: number;
  /** Correction applied to what the heuristic measured (real / heuristic, clamped). */
  correction: number;
  /**
   * `anchored`: the last real count plus the calibrated size of what was added since;
   * `scaled`: heuristic × correction (the prompt does not extend the last measured one);
   * `default`: heuristic × the default correction (no real count yet).
   */
  method: 'anchored' | 'scaled' | 'default';
  /** Undefined when no window is known for the model (see `config-error`). */
  threshold?: number;
  contextWindow?: number;
  /** tokens / contextWindow. */
  fraction?: number;
  messages: number;
}

/** The prompt reached `warnAt` of the window: the moment a UI shows `[ctx: 72%]` in amber. */
export interface WarningEvent extends SessionEvent {
  type: 'warning';
  tokens: number;
  threshold: number;
  contextWindow: number;
  fraction: number;
  warnAt: number;
}

/** afterModel accepted a real count. `estimatedTokens` is what beforeModel predicted for it. */
export interface UsageRecordedEvent extends SessionEvent {
  type: 'usage-recorded';
  inputTokens: number;
  outputTokens?: number;
  estimatedTokens: number;
  /** (estimated − real) / real: negative means the estimate was low. */
  relativeError: number;
}

/**
 * afterModel got usage it cannot trust and ignored it: missing, NaN, negative, or `implausible`: a
 * count far outside what the request could cost (relative to its estimate, the window and the
 * previous counts), such as `1e12` or a cache count that overflows to `Infinity`. An ignored count
 * never changes the calibration, so it can never drive a compaction.
 */
export interface UsageIgnoredEvent extends SessionEvent {
  type: 'usage-ignored';
  reason: 'missing' | 'invalid-input-tokens' | 'invalid-output-tokens' | 'no-request' | 'implausible';
  usage: unknown;
  /** For `implausible`: the range of input tokens the request could plausibly have cost. */
  plausible?: { min: number; max: number };
}

/** A configuration problem found at call time. */
export interface ConfigErrorEvent {
  type: 'config-error';
  sessionId?: string;
  field: string;
  message: string;
  modelId?: string;
}

/**
 * No window is known for the model of a call (no `contextWindow`, no `models` entry, none from the
 * host or the registry): the guard guards it with `fallbackContextWindow`. Once per model and guard.
 */
export interface WindowFallbackEvent {
  type: 'window-fallback';
  sessionId: string;
  /** Absent when the call had no model id. */
  modelId?: string;
  /** The fallback window the model's calls are measured against. */
  contextWindow: number;
  message: string;
}

/**
 * A provider rejected a prompt as too long and named its limit: from now on the model's calls are
 * measured against it (in this guard; the smallest limit learned is kept).
 */
export interface WindowLearnedEvent {
  type: 'window-learned';
  sessionId: string;
  modelId?: string;
  /** The window learned: the limit the provider named, less the completion it said it reserved. */
  contextWindow: number;
  /** The window the call was measured against before. */
  previous: number;
}

/** A setting that works but probably is not what the user meant. */
export interface ConfigWarningEvent {
  type: 'config-warning';
  sessionId?: string;
  field: string;
  message: string;
}

/** Something failed inside the guard, its store or a hook; the call went on with a safe fallback. */
export interface ErrorEvent {
  type: 'error';
  sessionId?: string;
  stage:
    | 'beforeModel'
    | 'afterModel'
    | 'status'
    | 'store'
    | 'compaction'
    | 'beforeCompact'
    | 'afterCompact'
    | 'compact'
    | 'recoverFromOverflow'
    | 'recall'
    | 'compactions';
  error: unknown;
}

/**
 * The store threw or did not answer within `storeTimeoutMs`. The call went on with the state this
 * process last saw (kept in memory); the next successful save brings the store up to date.
 */
export interface StoreFailedEvent extends SessionEvent {
  type: 'store-failed';
  operation: 'get' | 'set' | 'delete' | 'update' | 'lock';
  reason: 'error' | 'timeout';
  error: unknown;
}

/**
 * The prompt held tool calls without results or results without calls (which providers reject):
 * an unanswered call became a text note in its assistant message, an orphan result an assistant
 * note that attributes it to its tool (never a user message: tool output never takes the user's
 * voice), except orphan results in the tool messages that end the prompt: those got their calls
 * back, in one assistant message inserted before them (`restoredCalls` of them), so that the
 * prompt still ends on a tool message.
 */
export interface ToolPairingRepairedEvent extends SessionEvent {
  type: 'tool-pairing-repaired';
  unansweredCalls: number;
  /** Orphan results, however repaired (those that got their call back included). */
  orphanResults: number;
  /** Calls given back to orphan results that end the prompt (0: none; see above). */
  restoredCalls: number;
}

/** A compaction begins. */
export interface CompactionStartEvent extends SessionEvent {
  type: 'compaction-start';
  reason: CompactionReason;
  tokens: number;
  threshold: number;
  target: number;
  messages: number;
  focus?: string;
}

/** A compaction ended; the same fields as `BeforeModelResult.compaction`. */
export interface CompactionEndEvent extends SessionEvent, CompactionResult {
  type: 'compaction-end';
  /** What the compaction replaced and where the originals are archived (the same as `guard.compactions`). */
  receipt: CompactionReceipt;
}

/** The summarizer failed and the mechanical digest took its place (for this chunk and the rest). */
export interface SummarizerFailedEvent extends SessionEvent {
  type: 'summarizer-failed';
  /**
   * `circuit-open`: skipped after repeated failures, without calling it; `missing`: no summarizer
   * is configured; `no-room`: the instructions alone would fill the summarizer's window;
   * `aborted`: the model call's own signal fired (not counted by the circuit breaker);
   * `deadline`: the whole compaction reached `compactionTimeoutMs`, the rest was folded mechanically.
   */
  reason: 'error' | 'timeout' | 'empty' | 'too-large' | 'circuit-open' | 'missing' | 'no-room' | 'aborted' | 'deadline';
  error?: unknown;
  /** Consecutive failures so far (the circuit breaker's count). */
  consecutiveFailures: number;
}

/**
 * The irreducible part of the prompt (system messages, tool definitions and the latest user
 * request) is over the threshold. The guard sent the smallest prompt it could: the system messages
 * and the latest request, the request cut (head and tail kept) to the room left when it alone was
 * too large. The messages left out are kept in the session's summary for later calls. `tokens` is
 * the estimate of what was sent: over the threshold only when the system messages and tools alone are.
 */
export interface OverflowEvent extends SessionEvent {
  type: 'overflow';
  tokens: number;
  threshold: number;
  contextWindow: number;
}

/**
 * The fixed part of every prompt (the system messages, the tool definitions, and what the provider
 * counts beyond the messages: its formatting, a system prompt or tool schemas the host keeps
 * elsewhere, as its real counts show) is over the threshold on its own: no compaction can bring a
 * prompt under it. Rather than compacting on every call, the guard holds prompts under `limit`
 * instead (half way from the fixed part to the window) and compacts only past it. Reported once per
 * session until a call is under the threshold again. `hiddenTokens`: the part no message shows.
 */
export interface FixedOverThresholdEvent extends SessionEvent {
  type: 'fixed-over-threshold';
  fixedTokens: number;
  hiddenTokens: number;
  threshold: number;
  limit: number;
  contextWindow: number;
}

/**
 * A mechanical digest could not keep the start of every message it stands for, even with each
 * entry cut to its shortest: tool output and assistant text went first, and `lostUserMessages`
 * user messages could not be kept at all (the digest says so too). Only on very small windows.
 */
export interface DigestLossEvent extends SessionEvent {
  type: 'digest-loss';
  /** Messages the digest names only by count. */
  lostMessages: number;
  /** Of those, user messages. */
  lostUserMessages: number;
}

/**
 * Sentences the user wrote (prose of summarized user messages: not pasted code, logs or data) that
 * are not in the prompt: the footer under the summary keeps them verbatim, the newest first, each
 * whole, within `budget` characters, and these did not fit (or, after an overflow, the smallest
 * prompt left the summary out for this call). They are in the archive (`guard.recall`).
 */
export interface UserWordsDroppedEvent extends SessionEvent {
  type: 'user-words-dropped';
  /**
   * Per message: its index among the messages beforeModel kept (the host's `messages` without the
   * entries an `invalid-messages` event named; -1 for sentences kept under an earlier summary, whose
   * message is no longer known), and how many of its sentences and characters.
   */
  messages: Array<{ index: number; sentences: number; chars: number }>;
  sentences: number;
  chars: number;
  /** The footer's budget, in characters. */
  budget: number;
}

/**
 * beforeModel received entries it cannot send (`null`, a non-object, a message without a known
 * role, content that cannot be measured such as a cyclic value): they were left out of the prompt.
 */
export interface InvalidMessagesEvent extends SessionEvent {
  type: 'invalid-messages';
  /** Indices in the host's `messages`. */
  indices: number[];
  /** Why, per index (same order). */
  reasons: string[];
}

/**
 * The provider rejected a prompt for its length. The count it reported (when it did) was recorded,
 * a compaction was requested, and the adapter retries the call once with the compacted prompt.
 */
export interface OverflowRetryEvent extends SessionEvent {
  type: 'overflow-retry';
  /** The prompt's size as the provider reported it in its error, when it did. */
  reportedTokens?: number;
}

/**
 * The store failed to take an archive batch (the `store-failed` event before it says why): the
 * compaction went ahead (the prompt must fit), the batch is kept in this process (recall finds it)
 * and written with the session's next call.
 */
export interface ArchiveDeferredEvent extends SessionEvent {
  type: 'archive-deferred';
  labels: string[];
}

/** Archive batches written to the store after it had failed them (see `archive-deferred`). */
export interface ArchiveWrittenEvent extends SessionEvent {
  type: 'archive-written';
  labels: string[];
  deferred: true;
}

/** The session's archive outgrew `archive.maxChars`: its oldest batches were dropped. */
export interface ArchiveEvictedEvent extends SessionEvent {
  type: 'archive-evicted';
  labels: string[];
  /** Characters of archived text dropped. */
  chars: number;
}

/**
 * A compaction's write was refused: another process was granted the session's compaction lease
 * after this one (this one paused past its lease, or lost it to a failover), so the newer
 * compaction's state and archive stand. This call still sent its compacted prompt; it wrote
 * nothing of its compaction.
 */
export interface CompactionFencedEvent extends SessionEvent {
  type: 'compaction-fenced';
  /** What was refused: the session's state, or its archive batch and receipt. */
  record: 'state' | 'archive';
  /** The fencing token of this process's lease (a newer one was granted). */
  token: number;
}

export type ContextGuardEvent =
  | EstimateEvent
  | WarningEvent
  | UsageRecordedEvent
  | UsageIgnoredEvent
  | ConfigErrorEvent
  | ConfigWarningEvent
  | WindowFallbackEvent
  | WindowLearnedEvent
  | ErrorEvent
  | StoreFailedEvent
  | ToolPairingRepairedEvent
  | CompactionStartEvent
  | CompactionEndEvent
  | SummarizerFailedEvent
  | OverflowEvent
  | FixedOverThresholdEvent
  | DigestLossEvent
  | UserWordsDroppedEvent
  | InvalidMessagesEvent
  | OverflowRetryEvent
  | ArchiveDeferredEvent
  | ArchiveWrittenEvent
  | ArchiveEvictedEvent
  | CompactionFencedEvent;

export type ContextGuardEventType = ContextGuardEvent['type'];
