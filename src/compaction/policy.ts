// Compaction policy, beside what uses it: the options that shape a compaction (documented here for
// users, validated by the one schema in config.ts), their defaults, how they resolve, and the
// settings of one compaction for its window. Bad values are rejected by the schema before they get
// here, so nothing in this module throws.
import { DEFAULT_FILE_OPS, type FileOpsConfig } from './file-ops.ts';
import { redactSecrets } from './redact.ts';
import { SUMMARIZER_READ_FACTOR } from './summarizer-input.ts';
import type { AfterCompactHook, BeforeCompactHook, Summarizer } from './contract.ts';

/** The options of createContextGuard that shape compaction (part of `ContextGuardOptions`). */
export interface CompactionOptions {
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

/** The compaction options with their defaults filled in (part of `ResolvedOptions`). */
export interface ResolvedCompactionOptions {
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
  keepUserMessagesTokens: number | undefined;
  clipArchive: { first: number; last: number; buffer: number } | undefined;
  cost: { minCallsBetween: number; cacheRead: number; cacheWrite: number };
}

/** What the settings of one compaction are made of: the resolved compaction options, and whether the archive is on. */
export type CompactionPolicy = ResolvedCompactionOptions & { archive: { enabled: boolean } };

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

/** Every default of the compaction options, in one place (the option docs above repeat them for readers). */
export const COMPACTION_DEFAULTS = {
  retention: 'keep-recent',
  keepFirstUserMessage: true,
  target: 0.25,
  keepRecentTokens: 0.2,
  maxToolResultFraction: 0.1,
  maxToolResultTokens: 20_000,
  summarizerTimeoutMs: 60_000,
  compactionTimeoutMs: 60_000,
  circuitBreaker: { failures: 3, cooldownMs: 5 * 60_000 },
  keepUserMessagesFraction: 0.1,
  keepUserMessagesTokens: 20_000,
  /** Windows below this keep a proportionally smaller share of user messages. */
  keepUserMessagesFullWindow: 32_000,
  clipArchiveBuffer: 2,
  cost: { minCallsBetween: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  /** A compaction paced for the session's growth never aims below this share of the window. */
  pacedTargetFloor: 0.2,
} as const;

/** The compaction options as given (already validated by the schema), with every default filled in. */
export function resolveCompactionOptions(o: CompactionOptions): ResolvedCompactionOptions {
  return {
    summarizer: o.summarizer,
    redact: o.redact === false ? (text: string) => text : (o.redact ?? redactSecrets),
    summarizerContextWindow: o.summarizerContextWindow,
    summarizerTimeoutMs: o.summarizerTimeoutMs ?? COMPACTION_DEFAULTS.summarizerTimeoutMs,
    compactionTimeoutMs: o.compactionTimeoutMs ?? COMPACTION_DEFAULTS.compactionTimeoutMs,
    retention: o.retention ?? COMPACTION_DEFAULTS.retention,
    target: o.target ?? COMPACTION_DEFAULTS.target,
    keepRecentTokens: o.keepRecentTokens ?? COMPACTION_DEFAULTS.keepRecentTokens,
    keepFirstUserMessage: o.keepFirstUserMessage ?? COMPACTION_DEFAULTS.keepFirstUserMessage,
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
    circuitBreaker: { ...COMPACTION_DEFAULTS.circuitBreaker, ...o.circuitBreaker },
    fileOps: o.fileOps === false ? false : { ...DEFAULT_FILE_OPS, ...o.fileOps },
    beforeCompact: o.beforeCompact,
    afterCompact: o.afterCompact,
    keepUserMessagesTokens: o.keepUserMessagesTokens,
    clipArchive: o.clipArchive && {
      ...o.clipArchive,
      buffer: o.clipArchive.buffer ?? COMPACTION_DEFAULTS.clipArchiveBuffer,
    },
    cost: { ...COMPACTION_DEFAULTS.cost, ...o.cost },
  };
}

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
  o: CompactionPolicy,
  window: number,
  threshold: number,
  growthPerCall = 0,
): CompactionSettings {
  const target = pacedTarget(o, window, threshold, growthPerCall);
  const keepRecentTokens = Math.min(tokensOf(o.keepRecentTokens, window), target);
  // By default a summary may take half the buffer.
  const maxSummaryTokens = o.maxSummaryTokens ?? Math.max(256, Math.floor((window - threshold) / 2));
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
    prune: pruneSettings(o.prune, window, keepRecentTokens),
    fileOps: o.fileOps,
    keepUserMessagesTokens: keepUserMessagesBudget(o.keepUserMessagesTokens, window, target),
    clipArchive: o.clipArchive,
    archive: o.archive.enabled,
  };
}

/** The target of a compaction: the configured one, lowered for the session's pace (never below the floor). */
function pacedTarget(o: CompactionPolicy, window: number, threshold: number, growthPerCall: number): number {
  // The target must leave room below the threshold, or the next call would compact again.
  const configured = Math.min(tokensOf(o.target, window), threshold * 0.9);
  const paced = threshold - o.cost.minCallsBetween * Math.max(0, growthPerCall);
  return Math.max(Math.min(configured, COMPACTION_DEFAULTS.pacedTargetFloor * window), Math.min(configured, paced));
}

function pruneSettings(
  prune: ResolvedCompactionOptions['prune'],
  window: number,
  keepRecentTokens: number,
): CompactionSettings['prune'] {
  if (prune === false) return false;
  return {
    maxToolResultTokens:
      prune.maxToolResultTokens !== undefined
        ? tokensOf(prune.maxToolResultTokens, window)
        : Math.min(window * COMPACTION_DEFAULTS.maxToolResultFraction, COMPACTION_DEFAULTS.maxToolResultTokens),
    protectRecentTokens:
      prune.protectRecentTokens !== undefined ? tokensOf(prune.protectRecentTokens, window) : keepRecentTokens,
    neverPrune: prune.neverPrune,
  };
}

/** The budget of the recent user messages carried over a summary: they come out of the target's room, at most half of it. */
function keepUserMessagesBudget(configured: number | undefined, window: number, target: number): number {
  if (configured !== undefined) return Math.min(tokensOf(configured, window), target / 2);
  // Scaled down below 32k: in a small window the digest already keeps the start of every user message.
  const scaled =
    window *
    COMPACTION_DEFAULTS.keepUserMessagesFraction *
    Math.min(1, window / COMPACTION_DEFAULTS.keepUserMessagesFullWindow);
  return Math.min(scaled, COMPACTION_DEFAULTS.keepUserMessagesTokens, target / 2);
}
