// The public contract of compaction: what a summarizer receives and returns, what the hooks see,
// and the result a compacting call reports.
import type { GuardMessage } from '../messages.ts';

export interface SummarizerInput {
  /**
   * The messages to summarize, oldest first, with tool results clipped and the previous summary
   * left out (it is in `previousSummary`). When they do not fit the summarizer's window at once,
   * the summarizer is called once per chunk, each call folding into the summary so far.
   */
  messages: GuardMessage[];
  /** The summary so far, to be updated rather than summarized again; undefined on a first compaction. */
  previousSummary: string | undefined;
  /**
   * The summarizer's instructions (the seven-section template, the update variant, the length budget): send as the
   * system prompt.
   */
  instructions: string;
  /**
   * `messages` (and `previousSummary`) rendered as a delimited transcript with a closing request:
   * send as the user turn. Built so that text inside the conversation cannot act as instructions.
   */
  prompt: string;
  /** What to emphasize, from a compact tool call or `guard.compact(sessionId, { focus })`. */
  focus: string | undefined;
  /** Aborted at `summarizerTimeoutMs`: pass it to the model call. */
  signal: AbortSignal;
  sessionId: string;
  /**
   * The summary's budget in tokens: a longer answer is rejected and the mechanical fallback used.
   * The instructions ask for 80% of it, since models overshoot a little.
   */
  maxSummaryTokens: number;
}

/**
 * Writes a summary. Return the text, or any object with a `text` field (an AI SDK `generateText`
 * result works as is). Throwing, timing out, returning nothing or returning more than
 * `maxSummaryTokens` makes the guard fall back to a mechanical summary.
 *
 * ```ts
 * summarizer: ({ instructions, prompt, signal }) =>
 *   generateText({ model, instructions, prompt, abortSignal: signal })
 * ```
 */
export type Summarizer = (input: SummarizerInput) => string | { text: string } | Promise<string | { text: string }>;

/** Why a compaction ran. */
export type CompactionReason = 'threshold' | 'manual';

/**
 * The steps of the pipeline, cheapest first: `prune` (tool outputs truncated or replaced by a
 * placeholder), `summary` (older messages summarized by the summarizer), `mechanical` (the
 * summarizer failed or was skipped: a model-free digest), `hard-fit` (messages shrunk to fit).
 */
export type CompactionStep = 'prune' | 'summary' | 'mechanical' | 'hard-fit';

export interface CompactionResult {
  reason: CompactionReason;
  /** The last (strongest) step the compaction needed. */
  strategy: CompactionStep;
  /** Every step that changed the prompt, in order. */
  steps: CompactionStep[];
  /** Calibrated estimate before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /** The size the compaction aimed for. */
  target: number;
  messagesBefore: number;
  messagesAfter: number;
  /** The summary now standing for the older messages (file-list footer included), when one was written. */
  summary?: string;
  /** Messages the summary replaced. */
  summarizedMessages: number;
  /** Whether the latest turn was too large for the tail and its beginning went into the summary. */
  splitTurn: boolean;
  /** Tool results replaced by a placeholder, and truncated. */
  prunedToolResults: number;
  truncatedToolResults: number;
  /**
   * Tokens of the compacted prompt after the first message the compaction changed: what the
   * provider bills again at the cache-write price (the prompt before it is still a cache read).
   */
  cacheBrokenTokens: number;
  /** Summarizer calls made (one per chunk), and their estimated input and output tokens. */
  summarizerCalls: number;
  summarizerInputTokens: number;
  summaryTokens: number;
  /**
   * Whether the irreducible part was over the threshold and the smallest prompt was sent (see the `overflow` event).
   */
  overflow: boolean;
  durationMs: number;
}

export interface BeforeCompactContext {
  sessionId: string;
  reason: CompactionReason;
  /** The prompt about to be compacted. */
  messages: readonly GuardMessage[];
  tokens: number;
  threshold: number;
  target: number;
  focus: string | undefined;
}

/**
 * Return `{ cancel: true }` to send the prompt as it is (it is still cut down if it would not fit
 * the window at all), or `{ summary }` to use that text instead of calling the summarizer.
 */
export type BeforeCompactHook = (
  context: BeforeCompactContext,
) =>
  | void
  | undefined
  | { cancel?: boolean; summary?: string }
  | Promise<void | undefined | { cancel?: boolean; summary?: string }>;

export interface AfterCompactContext {
  sessionId: string;
  result: CompactionResult;
  /** The compacted prompt that will be sent. */
  messages: readonly GuardMessage[];
}

export type AfterCompactHook = (context: AfterCompactContext) => void | Promise<void>;
