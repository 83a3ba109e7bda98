// The public contract of a guard: what beforeModel and afterModel take and return, and the
// guard's methods. The implementation is createContextGuard (guard.ts).
import type { CompactionReceipt, RecalledItem, RecallOptions } from './archive/types.ts';
import type { ResolvedOptions } from './config.ts';
import type { CompactionResult } from './compaction/contract.ts';
import type { GuardMessage, ToolDefinition } from './messages.ts';
import type { ContextGuardEvent, ErrorEvent } from './events.ts';
import type { SessionStatus } from './state/session.ts';

export interface BeforeModelInput {
  /** Identifies the conversation: calibration and summaries are per session. */
  sessionId: string;
  /** Resolves the window when `contextWindow` is not set, and the media pricing. */
  modelId?: string;
  messages: readonly GuardMessage[];
  /** Function-tool definitions sent with the call; they count toward the prompt. */
  tools?: readonly ToolDefinition[];
  /**
   * The model's window as the host knows it (a LangChain model profile's `maxInputTokens`, say).
   * Used when the `contextWindow` option is not set; wins over `models` and the registry.
   */
  contextWindow?: number;
  /**
   * The model call's abort signal. When it fires during a compaction, the summarizer's signal
   * fires too and the mechanical digest is used, so an aborted call does not wait for a summary.
   */
  signal?: AbortSignal;
}

export interface BeforeModelResult {
  /**
   * The messages to send. The input array is never mutated. When the guard changes nothing (no
   * summary, edit or repair applies: nearly every call) this is the input array itself, not a
   * copy, so that a long history costs nothing to hand back: copy it before changing it.
   */
  messages: GuardMessage[];
  /** Calibrated estimate of what `messages` + `tools` will cost. */
  tokens: number;
  /** window − buffer. */
  threshold: number;
  /**
   * The window the call was measured against: the `contextWindow` option, the host's, a `models`
   * entry, the registry's, or `fallbackContextWindow` when none is known (a `window-fallback` event
   * says so); never above a limit the provider named in a rejection. Typed as possibly undefined for
   * compatibility: the guard always sets it.
   */
  contextWindow: number | undefined;
  /** tokens / contextWindow. */
  fraction: number;
  /** Set only when this call ran a new compaction (re-applying a stored summary is not one). */
  compaction?: CompactionResult;
  /**
   * True when what the guard may not touch (system messages, tools, the latest request) did not
   * fit: `tokens` is over the threshold, or this call's compaction had to cut the request (the
   * same as `compaction.overflow`). The `overflow` event says so once, on the compaction that
   * found it; later calls with nothing new to compact send the same prompt without compacting again.
   */
  overflow?: boolean;
}

export interface CompactOptions {
  /** What the summary should emphasize. */
  focus?: string;
}

export interface ModelUsage {
  /**
   * The prompt's total input tokens, cached tokens included (the AI SDK's
   * `usage.inputTokens.total`, LangChain's `usage_metadata.input_tokens`).
   */
  inputTokens: number;
  outputTokens?: number;
  /**
   * Cached tokens a provider reports *apart from* `inputTokens` (Anthropic's raw
   * `cache_read_input_tokens` / `cache_creation_input_tokens`): added to it. Leave them out when
   * `inputTokens` already includes them.
   */
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

export interface AfterModelInput {
  sessionId: string;
  /** Usage as the provider reported it; missing or malformed usage is ignored with an event. */
  usage: ModelUsage | undefined | null;
}

export interface RecoverFromOverflowInput {
  sessionId: string;
  /** What the model call threw (or the error part a stream ended with). */
  error: unknown;
  /**
   * The model of the rejected call, whose window a limit named in the error teaches; default: the
   * model of the session's last beforeModel in this guard.
   */
  modelId?: string;
  /** The window the host declared for the rejected call; default: the session's last beforeModel's. */
  contextWindow?: number;
}

export interface RecoverFromOverflowResult {
  /** Whether the error is a context-length rejection the guard prepared a retry for. */
  retry: boolean;
  /** The prompt's size as the provider reported it, when the error says. */
  reportedTokens?: number;
}

export interface ContextGuard {
  beforeModel(input: BeforeModelInput): Promise<BeforeModelResult>;
  afterModel(input: AfterModelInput): Promise<void>;
  /** What a UI shows: tokens, threshold and fraction of the window; undefined for an unknown session. */
  status(sessionId: string): Promise<SessionStatus | undefined>;
  /**
   * Marks the session so that its next beforeModel compacts even under the threshold (a user's
   * `/compact`, or the model's compact tool), with `focus` steering the summary.
   */
  compact(sessionId: string, options?: CompactOptions): Promise<void>;
  /** Drops a session's state (its calibration, summary and cached measures). */
  reset(sessionId: string): Promise<void>;
  /**
   * After a model call failed: when the error is a provider's context-length rejection, learns the
   * limit it names as the model's window (a `window-learned` event), records the
   * prompt size it reports (a real count), requests a compaction and answers `retry: true`: the
   * caller then runs beforeModel again and retries the call once. Any other error: `retry: false`,
   * nothing changes. One guard operation (one lock, one store round trip); never throws.
   */
  recoverFromOverflow(input: RecoverFromOverflowInput): Promise<RecoverFromOverflowResult>;
  /**
   * The window a call for `modelId` is measured against, the user's settings first: the
   * `contextWindow` option, else a `models` entry naming the model, else the window the host
   * declares (`contextWindow`, a LangChain profile's `maxInputTokens`; at least 1,000), else the
   * built-in registry. Undefined when none is known. Sends no event.
   */
  contextWindowFor(query: { modelId?: string | undefined; contextWindow?: number | undefined }): number | undefined;
  /**
   * What compaction took out of the session's prompt, found again: by `id` (the tool-call id a
   * placeholder names, an item id, a batch label) exactly, or by `query`, ranked by relevance. At
   * most `limit` items (default 5), their text within `maxChars` in all. Never throws: `[]` when
   * nothing matches, the archive is off, or the store failed (an event says so).
   */
  recall(sessionId: string, options: RecallOptions): Promise<RecalledItem[]>;
  /** The receipts of the session's compactions, oldest first (the most recent 200). */
  compactions(sessionId: string): Promise<CompactionReceipt[]>;
  /**
   * Hears the events of one session (the objects `onEvent` receives, those without a session
   * excepted) until the returned function is called; what a live view of the context listens to
   * (`writeContextParts` in `context-guard/ai-sdk`). A listener that throws is ignored. At most
   * `maxSessions` subscriptions are held per guard: past that the oldest is dropped, so that
   * subscriptions a host forgets to end cannot grow without bound.
   */
  subscribe(sessionId: string, listener: (event: ContextGuardEvent) => void): () => void;
  /** Reports a failure outside the guard (an adapter's) to `onEvent` as an `error` event; never throws. */
  reportError(report: { sessionId?: string | undefined; stage: ErrorEvent['stage']; error: unknown }): void;
  /** The validated options with their defaults. */
  readonly options: Readonly<ResolvedOptions>;
}
