// Options of createContextGuard: one zod schema, its defaults, and the error bad options raise.
// Configuration mistakes surface once, at creation, with the path of the bad field; at call time the
// guard never throws (see guard.ts).
import { z } from 'zod';
import type { AfterCompactHook, BeforeCompactHook, Summarizer } from './compaction/types.ts';
import type { FileOpsConfig } from './compaction/file-ops.ts';
import { DEFAULT_FILE_OPS } from './compaction/file-ops.ts';
import { redactSecrets } from './compaction/redact.ts';
import { SUMMARIZER_READ_FACTOR } from './compaction/summarizer.ts';
import type { ContextGuardEvent } from './events.ts';
import type { StateStore } from './state/store.ts';
import type { SessionState } from './state/session.ts';

/** Thrown by createContextGuard (never at call time) when an option is invalid. */
export class ContextGuardConfigError extends Error {
  /** Dotted path of the offending option, e.g. `calibration.max`; empty for the options object. */
  readonly field: string;

  constructor(field: string, message: string) {
    super(`context-guard: invalid option${field ? ` \`${field}\`` : 's'}: ${message}`);
    this.name = 'ContextGuardConfigError';
    this.field = field;
  }
}

/**
 * The smallest context window the guard accepts. Below it the fixed framing of a compaction (the
 * summary's delimiters, the continuation, a placeholder per tool result) would not fit, and a
 * value like `1`, `0.5` or `1.5` is a mistake (a fraction meant for `buffer`, say).
 */
export const MIN_CONTEXT_WINDOW = 1_000;

const contextWindowTokens = z
  .number({ error: `expected a number of tokens, at least ${MIN_CONTEXT_WINDOW}` })
  .refine(
    (n) => Number.isFinite(n) && n >= MIN_CONTEXT_WINDOW,
    `expected a finite number of tokens, at least ${MIN_CONTEXT_WINDOW}`,
  );

const positiveTokens = z
  .number({ error: 'expected a positive number of tokens' })
  .refine((n) => Number.isFinite(n) && n > 0, 'expected a positive, finite number of tokens');

const isFunction = (v: unknown): boolean => typeof v === 'function';

/** Tokens when >= 1, a fraction of the context window when < 1 (the `buffer` convention). */
const tokensOrFraction = z
  .number({ error: 'expected a number: tokens when >= 1, a fraction of the window when < 1' })
  .refine(
    (n) => Number.isFinite(n) && n > 0,
    'expected a positive number: tokens when >= 1, a fraction of the window when < 1',
  );

const storeSchema = z.custom<StateStore<SessionState>>(
  (v) =>
    typeof v === 'object' &&
    v !== null &&
    isFunction((v as StateStore<SessionState>).get) &&
    isFunction((v as StateStore<SessionState>).set) &&
    isFunction((v as StateStore<SessionState>).delete),
  'expected a StateStore: an object with async get, set and delete methods',
);

const calibrationSchema = z
  .strictObject({
    min: z.number().positive().optional(),
    max: z.number().positive().optional(),
    default: z.number().positive().optional(),
  })
  .optional();

export const optionsSchema = z.strictObject({
  contextWindow: contextWindowTokens.optional(),
  models: z.record(z.string(), contextWindowTokens, 'expected an object mapping model ids to windows').optional(),
  fallbackContextWindow: contextWindowTokens.optional(),
  buffer: z
    .number({ error: 'expected a number: tokens when >= 1, a fraction of the window when < 1' })
    .refine(
      (n) => Number.isFinite(n) && n > 0,
      'expected a positive number: tokens when >= 1, a fraction of the window when < 1',
    )
    .optional(),
  calibration: calibrationSchema,
  warnAt: z
    .number({ error: 'expected a fraction of the window between 0 and 1' })
    .refine((n) => n > 0 && n <= 1, 'expected a fraction of the window between 0 (exclusive) and 1')
    .optional(),
  exactCounting: z
    .enum(['auto', 'off', 'o200k_base', 'cl100k_base'], {
      error: "expected 'auto', 'off', 'o200k_base' or 'cl100k_base'",
    })
    .optional(),
  store: storeSchema.optional(),
  storeTimeoutMs: z.number().positive('expected a positive number of milliseconds').optional(),
  maxSessions: z.number().int('expected a whole number of sessions').positive('expected at least 1 session').optional(),
  historyCheck: z.enum(['amortized', 'full'], { error: "expected 'amortized' or 'full'" }).optional(),
  onEvent: z.custom<(event: ContextGuardEvent) => void>(isFunction, 'expected a function').optional(),
  summarizer: z.custom<Summarizer>(isFunction, 'expected a function').optional(),
  redact: z
    .union([z.literal(false), z.custom<(text: string) => string>(isFunction)], {
      error: 'expected false or a function (text: string) => string',
    })
    .optional(),
  summarizerContextWindow: contextWindowTokens.optional(),
  summarizerTimeoutMs: z.number().positive('expected a positive number of milliseconds').optional(),
  compactionTimeoutMs: z.number().positive('expected a positive number of milliseconds').optional(),
  retention: z
    .enum(['keep-recent', 'summarize-all'], { error: "expected 'keep-recent' or 'summarize-all'" })
    .optional(),
  target: tokensOrFraction.optional(),
  keepRecentTokens: tokensOrFraction.optional(),
  keepFirstUserMessage: z.boolean().optional(),
  maxSummaryTokens: positiveTokens.optional(),
  summarizerInputTokens: tokensOrFraction.optional(),
  prune: z
    .union(
      [
        z.literal(false),
        z.strictObject({
          maxToolResultTokens: tokensOrFraction.optional(),
          protectRecentTokens: tokensOrFraction.optional(),
          neverPrune: z.array(z.string(), 'expected an array of tool names').readonly().optional(),
        }),
      ],
      { error: 'expected false or an object { maxToolResultTokens?, protectRecentTokens?, neverPrune? }' },
    )
    .optional(),
  circuitBreaker: z
    .strictObject({
      failures: z.number().int('expected a whole number').positive('expected at least 1 failure').optional(),
      cooldownMs: z.number().nonnegative('expected milliseconds >= 0').optional(),
    })
    .optional(),
  fileOps: z
    .union(
      [
        z.literal(false),
        z.strictObject({
          readTools: z.array(z.string()).optional(),
          writeTools: z.array(z.string()).optional(),
          pathKeys: z.array(z.string()).optional(),
        }),
      ],
      { error: 'expected false or an object { readTools?, writeTools?, pathKeys? }' },
    )
    .optional(),
  beforeCompact: z.custom<BeforeCompactHook>(isFunction, 'expected a function').optional(),
  afterCompact: z.custom<AfterCompactHook>(isFunction, 'expected a function').optional(),
  archive: z
    .union(
      [
        z.literal(false),
        z.strictObject({
          maxChars: z.number().int('expected a whole number of characters').positive('expected at least 1').optional(),
          maxTotalChars: z
            .number()
            .int('expected a whole number of characters')
            .positive('expected at least 1')
            .optional(),
          recallMaxChars: z
            .number()
            .int('expected a whole number of characters')
            .min(200, 'expected at least 200 characters')
            .optional(),
          indexChars: z
            .number()
            .int('expected a whole number of characters')
            .positive('expected at least 1')
            .optional(),
        }),
      ],
      { error: 'expected false or an object { maxChars?, maxTotalChars?, recallMaxChars?, indexChars? }' },
    )
    .optional(),
  keepUserMessagesTokens: z
    .number({ error: 'expected a number: tokens when >= 1, a fraction of the window when < 1, 0 to turn it off' })
    .refine(
      (n) => Number.isFinite(n) && n >= 0,
      'expected a number >= 0: tokens when >= 1, a fraction of the window when < 1, 0 to turn it off',
    )
    .optional(),
  cost: z
    .strictObject({
      minCallsBetween: z.number().nonnegative('expected 0 or more calls').optional(),
      cacheRead: z.number().nonnegative('expected a price multiplier >= 0').optional(),
      cacheWrite: z.number().nonnegative('expected a price multiplier >= 0').optional(),
    })
    .optional(),
  clipArchive: z
    .strictObject(
      {
        first: z.number().int('expected a whole number of batches').nonnegative('expected 0 or more batches'),
        last: z.number().int('expected a whole number of batches').positive('expected at least 1 batch'),
        buffer: z.number().int('expected a whole number of batches').nonnegative('expected 0 or more').optional(),
      },
      { error: 'expected an object { first, last, buffer? }' },
    )
    .optional(),
});

/** Correction bounds applied to the provider's real / heuristic token ratio. */
export interface CalibrationOptions {
  /** Lowest correction: the heuristic is never scaled down. Default 1.0. */
  min?: number;
  /** Highest correction, against absurd ratios from tiny prompts. Default 5.0. */
  max?: number;
  /** Correction before the first real count of a session. Default 1.5. */
  default?: number;
}

export interface ContextGuardOptions {
  /**
   * The model's context window in tokens (the largest prompt it accepts). When omitted it is
   * resolved per call from `modelId` with the built-in registry (see `models` for overrides).
   */
  contextWindow?: number;
  /** Windows for model ids the registry lacks or gets wrong; keys are ids or id prefixes. */
  models?: Record<string, number>;
  /**
   * The window of a call for which none is known (no `contextWindow`, no `models` entry, no window
   * from the host, a model the registry does not know): the guard still guards, against this
   * window, and says so once per model (a `window-fallback` event; a `console.warn` when no
   * `onEvent` is given). Default 32,000 tokens: small enough for the models an unknown id is most
   * likely to be (local and self-hosted ones), so that nothing overflows while the real window is
   * unknown. A provider's rejection that names its limit then teaches the guard the real one.
   */
  fallbackContextWindow?: number;
  /**
   * Room kept free below the window for the response and for estimation error. Tokens when >= 1,
   * a fraction of the window when < 1. Default: 20,000 tokens for windows of 200,000 and more,
   * 20% of the window below that.
   */
  buffer?: number;
  calibration?: CalibrationOptions;
  /** Fraction of the window from which a `warning` event fires (a UI's `[ctx: 72%]`). Default 0.7. */
  warnAt?: number;
  /**
   * Exact BPE counting (gpt-tokenizer) instead of characters for message text. `auto` (default):
   * the model's own encoding for OpenAI models, o200k for DeepSeek, calibrated chars/4 otherwise
   * (measured best per family; see BENCHMARKS.md). `off`: always chars/4. An encoding name: always
   * that encoding.
   */
  exactCounting?: 'auto' | 'off' | 'o200k_base' | 'cl100k_base';
  /** Where per-session state lives. Default: an in-memory LRU store of `maxSessions` sessions. */
  store?: StateStore<SessionState>;
  /**
   * A store call taking longer fails (a `store-failed` event) and the call goes on with this
   * process's copy of the session. Default 1,000.
   */
  storeTimeoutMs?: number;
  /** Bound of the default in-memory store and of the per-process estimate cache. Default 10,000. */
  maxSessions?: number;
  /**
   * How much of the history resent on every call is compared with the last call's. `amortized`
   * (default): what was added, the last messages known before (where hosts retry and rewrite),
   * the first messages, and a rotating slice of older ones, so that a message edited in place is
   * found within a bounded number of calls (at once when the call compacts, after a real count
   * that disagrees with the estimate, or when the history got shorter); until then it may skew the
   * estimate, but the provider always receives the host's current messages. `full`: every message
   * on every call, for hosts that edit old messages in place (it costs a read of the whole
   * history per call: see BENCHMARKS.md, Per-call overhead).
   */
  historyCheck?: 'amortized' | 'full';
  /** Receives every event (estimates, warnings, ignored usage...). Exceptions it throws are swallowed. */
  onEvent?: (event: ContextGuardEvent) => void;
  /**
   * Writes the summary that replaces older messages during compaction; see {@link Summarizer}.
   * Without one (or when it fails) a mechanical digest is used: no model, no history lost.
   */
  summarizer?: Summarizer;
  /**
   * Applied to all text sent to the summarizer and to every summary before it is stored (and sent).
   * Default: {@link redactSecrets}, which masks API keys, tokens, private keys and credentials in
   * URLs. Pass your own function to change it, or `false` to send and store text as it is.
   */
  redact?: false | ((text: string) => string);
  /** The summarizer model's window: its input is kept under 80% of it. Default: the guarded model's window. */
  summarizerContextWindow?: number;
  /** A summarizer call taking longer is aborted (its `signal` fires) and the fallback used. Default 60,000. */
  summarizerTimeoutMs?: number;
  /**
   * Deadline of a whole compaction, all summarizer calls together (a long history is summarized in
   * several chunks, one call each). Past it the running call is aborted and what is left is folded
   * into the mechanical digest, so a slow summarizer cannot hold a model call for minutes.
   * Default 60,000.
   */
  compactionTimeoutMs?: number;
  /**
   * What compaction keeps verbatim. `keep-recent` (default): the system messages, the first user
   * request and a recent tail of `keepRecentTokens`; the rest becomes one summary. `summarize-all`:
   * the request becomes exactly [system..., summary, continuation].
   */
  retention?: 'keep-recent' | 'summarize-all';
  /**
   * Size compaction aims for, well below the threshold so that it does not fire again on the next
   * calls. Tokens when >= 1, a fraction of the window when < 1. Default 0.25: deep enough that the
   * next compaction is many calls away (each one makes the provider bill the prompt again at the
   * cache-write price), with a quarter of the window kept (see BENCHMARKS.md, cost).
   */
  target?: number;
  /** Budget of the recent tail `keep-recent` keeps verbatim. Tokens or a fraction of the window; default 0.2. */
  keepRecentTokens?: number;
  /** Whether `keep-recent` keeps the conversation's first user request verbatim (when small). Default true. */
  keepFirstUserMessage?: boolean;
  /** Upper bound of a summary, in tokens. Default: half the buffer. */
  maxSummaryTokens?: number;
  /**
   * The most transcript the summarizer reads in one compaction: tokens, or a fraction of the window
   * when < 1. Default 4 × `maxSummaryTokens`. Over it, tool outputs are cut first, assistant text
   * next, the user's words last (each keeps its start and end). Its input is billed in full on every
   * compaction; raise it for summaries that read more of long histories (the archive keeps every
   * original either way).
   */
  summarizerInputTokens?: number;
  /** Tool-output pruning, the cheapest compaction step; `false` turns it off. */
  prune?: false | PruneOptions;
  /** Skips the summarizer for `cooldownMs` after `failures` consecutive failures. Default 3 failures, 5 minutes. */
  circuitBreaker?: { failures?: number; cooldownMs?: number };
  /** Which tool calls read or modify files, for the summary's file list; `false` turns the list off. */
  fileOps?: false | Partial<FileOpsConfig>;
  /** Called before each compaction: may cancel it or supply the summary itself. */
  beforeCompact?: BeforeCompactHook;
  /** Called after each compaction with its result. */
  afterCompact?: AfterCompactHook;
  /**
   * Lossless compaction: what a compaction takes out of the prompt (summarized messages, pruned or
   * truncated tool outputs, clipped messages, media) is archived first, in the session's store, and
   * `guard.recall` (or the adapters' `recallTool`) finds it again. `false` turns it off.
   */
  archive?: false | ArchiveOptions;
  /**
   * After a summary, the most recent user messages are kept verbatim within this budget (oldest
   * summarized and archived): the user's own words survive every compaction. Tokens when >= 1, a
   * fraction of the window when < 1, 0 to turn it off. Default: 10% of the window, at most 20,000
   * tokens (Codex keeps 20k tokens of user messages), scaled down linearly below a 32k window (the
   * mechanical digest already keeps the start of every user message), and never more than half the
   * target.
   */
  keepUserMessagesTokens?: number;
  /**
   * Clip-archive summaries instead of one rolling summary: each compaction writes a summary batch of
   * its own; the prompt shows the `first` and `last` batches with a line saying how many are left
   * out (recall searches them); past `first + last + buffer` batches (buffer default 2) the ones in
   * the middle are summarized again into one batch, one level deeper.
   */
  clipArchive?: ClipArchiveOptions;
  /**
   * How compaction weighs what it costs. A compaction makes the provider bill the prompt after the
   * first message it changed at the cache-write price again, so it cuts deep enough that the next
   * one is at least `minCallsBetween` calls away at the session's pace of growth (never below a
   * fifth of the window, never above `target`). The prices (multipliers of the input price) are
   * used for `status().costs.billedInputUnits`.
   */
  cost?: CostOptions;
}

export interface CostOptions {
  /** Calls the prompt should be able to grow after a compaction before the next one. Default 5; 0 turns pacing off. */
  minCallsBetween?: number;
  /** Price of a cached input token (a cache read), as a multiple of the input price. Default 0.1. */
  cacheRead?: number;
  /** Price of an input token written to the cache, as a multiple of the input price. Default 1.25. */
  cacheWrite?: number;
}

export interface ArchiveOptions {
  /** Characters of archived originals kept per session; the oldest batches are evicted beyond it. Default 2,000,000. */
  maxChars?: number;
  /**
   * Without a `store` (archives in this process's memory): characters of all sessions' archives
   * (receipts included) together; the least recently used session's archive is dropped beyond it
   * (an `archive-evicted` event). Default 100,000,000. A store such as Redis bounds archives by its
   * TTL instead. With a store, the bound of the archive writes it failed that wait in this process
   * for the sessions' next calls, all sessions together (the oldest dropped first, with an event).
   */
  maxTotalChars?: number;
  /**
   * Most characters one recall returns, all items together (long items are cut around what
   * matched). Default 16,000, and at most 40% of the session's window in characters (about a tenth
   * of it in tokens).
   */
  recallMaxChars?: number;
  /**
   * Characters of archived text this process keeps indexed for recall, all sessions together: the
   * least recently recalled session's index is dropped beyond it and rebuilt when that session
   * recalls again. Default 10,000,000 (an index costs about 18 bytes of heap a character: about
   * 180 MB).
   */
  indexChars?: number;
}

export interface ClipArchiveOptions {
  /** Oldest summary batches shown in the prompt. */
  first: number;
  /** Newest summary batches shown in the prompt. */
  last: number;
  /** Batches left out before the middle ones are summarized again. Default 2. */
  buffer?: number;
}

export interface PruneOptions {
  /**
   * A tool result larger than this is truncated to it (head and tail kept, with a marker).
   * Tokens or a fraction of the window; default 10% of the window, at most 20,000 tokens.
   */
  maxToolResultTokens?: number;
  /** Recent tool results within this many tokens are never replaced by a placeholder. Default: `keepRecentTokens`. */
  protectRecentTokens?: number;
  /** Tools whose results are never pruned (they may still be shrunk as a last resort to fit the window). */
  neverPrune?: readonly string[];
}

/** Compaction settings of one call, with every default filled in for its window. */
export interface CompactionSettings {
  retention: 'keep-recent' | 'summarize-all';
  target: number;
  keepRecentTokens: number;
  keepFirstUserMessage: boolean;
  maxSummaryTokens: number;
  /** The most transcript the summarizer reads in one compaction, in tokens. */
  summarizerInputTokens: number;
  summarizerContextWindow: number;
  summarizerTimeoutMs: number;
  compactionTimeoutMs: number;
  prune: false | { maxToolResultTokens: number; protectRecentTokens: number; neverPrune: readonly string[] };
  fileOps: false | FileOpsConfig;
  /** Budget of the recent user messages kept verbatim after a summary (0: none). */
  keepUserMessagesTokens: number;
  clipArchive: { first: number; last: number; buffer: number } | undefined;
  /** Whether what compaction replaces is archived (placeholders and summaries then say how to recall it). */
  archive: boolean;
}

export interface ResolvedCalibration {
  min: number;
  max: number;
  default: number;
}

export interface ResolvedOptions {
  contextWindow: number | undefined;
  models: Readonly<Record<string, number>>;
  fallbackContextWindow: number;
  buffer: number | undefined;
  calibration: ResolvedCalibration;
  warnAt: number;
  exactCounting: 'auto' | 'off' | 'o200k_base' | 'cl100k_base';
  store: StateStore<SessionState> | undefined;
  storeTimeoutMs: number;
  maxSessions: number;
  historyCheck: 'amortized' | 'full';
  onEvent: ((event: ContextGuardEvent) => void) | undefined;
  summarizer: Summarizer | undefined;
  /** The redaction in effect (the identity when turned off). */
  redact: (text: string) => string;
  summarizerContextWindow: number | undefined;
  summarizerTimeoutMs: number;
  compactionTimeoutMs: number;
  retention: 'keep-recent' | 'summarize-all';
  target: number;
  keepRecentTokens: number;
  keepFirstUserMessage: boolean;
  maxSummaryTokens: number | undefined;
  summarizerInputTokens: number | undefined;
  prune:
    | false
    | {
        maxToolResultTokens: number | undefined;
        protectRecentTokens: number | undefined;
        neverPrune: readonly string[];
      };
  circuitBreaker: { failures: number; cooldownMs: number };
  fileOps: false | FileOpsConfig;
  beforeCompact: BeforeCompactHook | undefined;
  afterCompact: AfterCompactHook | undefined;
  archive: { enabled: boolean; maxChars: number; maxTotalChars: number; recallMaxChars: number; indexChars: number };
  keepUserMessagesTokens: number | undefined;
  clipArchive: { first: number; last: number; buffer: number } | undefined;
  cost: { minCallsBetween: number; cacheRead: number; cacheWrite: number };
}

/** Every default of the options, in one place (the option docs above repeat them for readers). */
export const DEFAULTS = {
  calibration: { min: 1.0, max: 5.0, default: 1.5 },
  warnAt: 0.7,
  exactCounting: 'auto',
  storeTimeoutMs: 1_000,
  retention: 'keep-recent',
  keepFirstUserMessage: true,
  maxSessions: 10_000,
  historyCheck: 'amortized',
  /** The window of a call for which none is known. */
  fallbackContextWindow: 32_000,
  /** Model windows learned from providers' rejections, kept per guard (the oldest forgotten first). */
  maxLearnedWindows: 256,
  /** Windows of at least this size keep a fixed buffer; smaller ones keep a fraction. */
  largeWindow: 200_000,
  largeWindowBuffer: 20_000,
  smallWindowBufferFraction: 0.2,
  target: 0.25,
  keepRecentTokens: 0.2,
  maxToolResultFraction: 0.1,
  maxToolResultTokens: 20_000,
  summarizerTimeoutMs: 60_000,
  compactionTimeoutMs: 60_000,
  circuitBreaker: { failures: 3, cooldownMs: 5 * 60_000 },
  archiveMaxChars: 2_000_000,
  archiveMaxTotalChars: 100_000_000,
  recallMaxChars: 16_000,
  archiveIndexChars: 10_000_000,
  /** Recall answers are at most this share of the window (in characters, ~4 per token): about a tenth of it. */
  recallWindowChars: 0.4,
  keepUserMessagesFraction: 0.1,
  keepUserMessagesTokens: 20_000,
  /** Windows below this keep a proportionally smaller share of user messages. */
  keepUserMessagesFullWindow: 32_000,
  clipArchiveBuffer: 2,
  cost: { minCallsBetween: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  /** A compaction paced for the session's growth never aims below this share of the window. */
  pacedTargetFloor: 0.2,
} as const;

/** Tokens when >= 1, else a fraction of `window`. */
export function tokensOf(value: number, window: number): number {
  return value < 1 ? value * window : value;
}

/**
 * The compaction settings for a call with this window and threshold. `growthPerCall`: how much the
 * session's prompt grows per call; a compaction then aims low enough for the next one to be at
 * least `cost.minCallsBetween` calls away (one deep cut re-bills the cache once, where several
 * shallow ones would re-bill it each time), never below a fifth of the window.
 */
export function compactionSettings(
  o: ResolvedOptions,
  window: number,
  threshold: number,
  growthPerCall = 0,
): CompactionSettings {
  const buffer = window - threshold;
  // The target must leave room below the threshold, or the next call would compact again.
  const configured = Math.min(tokensOf(o.target, window), threshold * 0.9);
  const paced = threshold - o.cost.minCallsBetween * Math.max(0, growthPerCall);
  const target = Math.max(Math.min(configured, DEFAULTS.pacedTargetFloor * window), Math.min(configured, paced));
  const keepRecentTokens = Math.min(tokensOf(o.keepRecentTokens, window), target);
  const maxSummaryTokens = o.maxSummaryTokens ?? Math.max(256, Math.floor(buffer / 2));
  return {
    retention: o.retention,
    target,
    keepRecentTokens,
    keepFirstUserMessage: o.keepFirstUserMessage,
    maxSummaryTokens,
    summarizerInputTokens:
      o.summarizerInputTokens !== undefined
        ? tokensOf(o.summarizerInputTokens, window)
        : SUMMARIZER_READ_FACTOR * maxSummaryTokens,
    summarizerContextWindow: o.summarizerContextWindow ?? window,
    summarizerTimeoutMs: o.summarizerTimeoutMs,
    compactionTimeoutMs: o.compactionTimeoutMs,
    prune:
      o.prune === false
        ? false
        : {
            maxToolResultTokens:
              o.prune.maxToolResultTokens !== undefined
                ? tokensOf(o.prune.maxToolResultTokens, window)
                : Math.min(window * DEFAULTS.maxToolResultFraction, DEFAULTS.maxToolResultTokens),
            protectRecentTokens:
              o.prune.protectRecentTokens !== undefined
                ? tokensOf(o.prune.protectRecentTokens, window)
                : keepRecentTokens,
            neverPrune: o.prune.neverPrune,
          },
    fileOps: o.fileOps,
    // The carried user messages come out of the target's room: a set budget may take half of it.
    keepUserMessagesTokens:
      o.keepUserMessagesTokens !== undefined
        ? Math.min(tokensOf(o.keepUserMessagesTokens, window), target / 2)
        : Math.min(
            // Scaled down below 32k: in a small window the digest already keeps the start of every user message.
            window * DEFAULTS.keepUserMessagesFraction * Math.min(1, window / DEFAULTS.keepUserMessagesFullWindow),
            DEFAULTS.keepUserMessagesTokens,
            target / 2,
          ),
    clipArchive: o.clipArchive,
    archive: o.archive.enabled,
  };
}

/** Tokens kept free below `contextWindow`: the user's buffer, else the seed's rule. */
export function bufferTokens(contextWindow: number, buffer: number | undefined): number {
  if (buffer !== undefined) return buffer < 1 ? contextWindow * buffer : buffer;
  return contextWindow >= DEFAULTS.largeWindow
    ? DEFAULTS.largeWindowBuffer
    : contextWindow * DEFAULTS.smallWindowBufferFraction;
}

/** The estimate above which the guard compacts: window minus buffer. */
export function thresholdFor(contextWindow: number, buffer: number | undefined): number {
  return contextWindow - bufferTokens(contextWindow, buffer);
}

function describe(issue: z.core.$ZodIssue): { field: string; message: string } {
  // `false` or an object: when the value is an object, the object branch's own issue names the field.
  if (issue.code === 'invalid_union') {
    const inner = issue.errors.flat().find((e) => e.path.length > 0);
    if (inner) return describe({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue);
  }
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (path ? `${path}.${k}` : k));
    return {
      field: keys[0] ?? path,
      message: `unknown option${keys.length > 1 ? 's' : ''} ${keys.map((k) => `\`${k}\``).join(', ')}`,
    };
  }
  if (issue.code === 'invalid_type' && path === '') return { field: '', message: 'expected an options object' };
  return { field: path, message: issue.message };
}

/** Validates user options and fills in defaults; throws ContextGuardConfigError naming the field. */
export function resolveOptions(input: unknown): ResolvedOptions {
  const parsed = optionsSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const { field, message } = first ? describe(first) : { field: '', message: 'invalid options' };
    throw new ContextGuardConfigError(field, message);
  }
  const o = parsed.data;
  const calibration = { ...DEFAULTS.calibration, ...o.calibration };
  if (calibration.min > calibration.max) {
    throw new ContextGuardConfigError(
      'calibration.min',
      `expected min (${calibration.min}) <= max (${calibration.max})`,
    );
  }
  if (calibration.default < calibration.min || calibration.default > calibration.max) {
    throw new ContextGuardConfigError(
      'calibration.default',
      `expected a value between min (${calibration.min}) and max (${calibration.max}), received ${calibration.default}`,
    );
  }
  if (o.contextWindow !== undefined && o.buffer !== undefined && o.buffer >= 1 && o.buffer >= o.contextWindow) {
    throw new ContextGuardConfigError(
      'buffer',
      `expected fewer tokens than contextWindow (${o.contextWindow}), received ${o.buffer}`,
    );
  }
  if (o.contextWindow !== undefined && o.target !== undefined) {
    const threshold = thresholdFor(o.contextWindow, o.buffer);
    if (tokensOf(o.target, o.contextWindow) >= threshold) {
      throw new ContextGuardConfigError(
        'target',
        `expected less than the threshold (${Math.floor(threshold)} tokens: contextWindow − buffer), received ${o.target}`,
      );
    }
  }
  return {
    contextWindow: o.contextWindow,
    models: o.models ?? {},
    fallbackContextWindow: o.fallbackContextWindow ?? DEFAULTS.fallbackContextWindow,
    buffer: o.buffer,
    calibration,
    warnAt: o.warnAt ?? DEFAULTS.warnAt,
    exactCounting: o.exactCounting ?? DEFAULTS.exactCounting,
    store: o.store,
    storeTimeoutMs: o.storeTimeoutMs ?? DEFAULTS.storeTimeoutMs,
    maxSessions: o.maxSessions ?? DEFAULTS.maxSessions,
    historyCheck: o.historyCheck ?? DEFAULTS.historyCheck,
    onEvent: o.onEvent,
    summarizer: o.summarizer,
    redact: o.redact === false ? (text: string) => text : (o.redact ?? redactSecrets),
    summarizerContextWindow: o.summarizerContextWindow,
    summarizerTimeoutMs: o.summarizerTimeoutMs ?? DEFAULTS.summarizerTimeoutMs,
    compactionTimeoutMs: o.compactionTimeoutMs ?? DEFAULTS.compactionTimeoutMs,
    retention: o.retention ?? DEFAULTS.retention,
    target: o.target ?? DEFAULTS.target,
    keepRecentTokens: o.keepRecentTokens ?? DEFAULTS.keepRecentTokens,
    keepFirstUserMessage: o.keepFirstUserMessage ?? DEFAULTS.keepFirstUserMessage,
    maxSummaryTokens: o.maxSummaryTokens,
    summarizerInputTokens: o.summarizerInputTokens,
    prune:
      o.prune === false
        ? false
        : {
            maxToolResultTokens: o.prune?.maxToolResultTokens,
            protectRecentTokens: o.prune?.protectRecentTokens,
            neverPrune: o.prune?.neverPrune ?? [],
          },
    circuitBreaker: { ...DEFAULTS.circuitBreaker, ...o.circuitBreaker },
    fileOps: o.fileOps === false ? false : { ...DEFAULT_FILE_OPS, ...o.fileOps },
    beforeCompact: o.beforeCompact,
    afterCompact: o.afterCompact,
    archive: {
      enabled: o.archive !== false,
      maxChars: (o.archive || undefined)?.maxChars ?? DEFAULTS.archiveMaxChars,
      maxTotalChars: (o.archive || undefined)?.maxTotalChars ?? DEFAULTS.archiveMaxTotalChars,
      recallMaxChars: (o.archive || undefined)?.recallMaxChars ?? DEFAULTS.recallMaxChars,
      indexChars: (o.archive || undefined)?.indexChars ?? DEFAULTS.archiveIndexChars,
    },
    keepUserMessagesTokens: o.keepUserMessagesTokens,
    clipArchive: o.clipArchive && { ...o.clipArchive, buffer: o.clipArchive.buffer ?? DEFAULTS.clipArchiveBuffer },
    cost: { ...DEFAULTS.cost, ...o.cost },
  };
}

// The option types are written by hand for their documentation; these lines fail to compile when
// they and the schema disagree on any field, so the two definitions cannot drift apart.
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type SchemaOptions = z.input<typeof optionsSchema>;
const optionsMatchSchema: Equals<Required<SchemaOptions>, Required<ContextGuardOptions>> = true;
void optionsMatchSchema;
