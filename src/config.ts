// Options of createContextGuard: one zod schema, its defaults, and the error bad options raise.
// Configuration mistakes surface once, at creation, with the path of the bad field; at call time the
// guard never throws (see guard.ts).
import { z } from 'zod';
import {
  resolveCompactionOptions,
  tokensOf,
  type CompactionOptions,
  type ResolvedCompactionOptions,
} from './compaction/policy.ts';
import type { AfterCompactHook, BeforeCompactHook, Summarizer } from './compaction/contract.ts';
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

/**
 * The options of createContextGuard. Those of compaction (`summarizer`, `target`, `prune`...) are
 * documented beside the policy that uses them: {@link CompactionOptions}.
 */
export interface ContextGuardOptions extends CompactionOptions {
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
   * Lossless compaction: what a compaction takes out of the prompt (summarized messages, pruned or
   * truncated tool outputs, clipped messages, media) is archived first, in the session's store, and
   * `guard.recall` (or the adapters' `recallTool`) finds it again. `false` turns it off.
   */
  archive?: false | ArchiveOptions;
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

export interface ResolvedCalibration {
  min: number;
  max: number;
  default: number;
}

export interface ResolvedOptions extends ResolvedCompactionOptions {
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
  archive: { enabled: boolean; maxChars: number; maxTotalChars: number; recallMaxChars: number; indexChars: number };
}

/** Every default of the options but compaction's (COMPACTION_DEFAULTS in compaction/policy.ts); the option docs repeat them for readers. */
export const DEFAULTS = {
  calibration: { min: 1.0, max: 5.0, default: 1.5 },
  warnAt: 0.7,
  exactCounting: 'auto',
  storeTimeoutMs: 1_000,
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
  archiveMaxChars: 2_000_000,
  archiveMaxTotalChars: 100_000_000,
  recallMaxChars: 16_000,
  archiveIndexChars: 10_000_000,
  /** Recall answers are at most this share of the window (in characters, ~4 per token): about a tenth of it. */
  recallWindowChars: 0.4,
} as const;

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
  const o = parseOptions(input);
  const calibration = { ...DEFAULTS.calibration, ...o.calibration };
  checkCalibration(calibration);
  checkAgainstWindow(o);
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
    ...resolveCompactionOptions(o),
    archive: {
      enabled: o.archive !== false,
      maxChars: (o.archive || undefined)?.maxChars ?? DEFAULTS.archiveMaxChars,
      maxTotalChars: (o.archive || undefined)?.maxTotalChars ?? DEFAULTS.archiveMaxTotalChars,
      recallMaxChars: (o.archive || undefined)?.recallMaxChars ?? DEFAULTS.recallMaxChars,
      indexChars: (o.archive || undefined)?.indexChars ?? DEFAULTS.archiveIndexChars,
    },
  };
}

/** The options as the schema reads them; the first issue it finds is thrown, naming its field. */
function parseOptions(input: unknown): z.output<typeof optionsSchema> {
  const parsed = optionsSchema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0];
  const { field, message } = first ? describe(first) : { field: '', message: 'invalid options' };
  throw new ContextGuardConfigError(field, message);
}

function checkCalibration(calibration: ResolvedCalibration): void {
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
}

/** With a fixed window, the buffer must leave room in it, and the compaction target room under the threshold. */
function checkAgainstWindow(o: z.output<typeof optionsSchema>): void {
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
}

// The option types are written by hand for their documentation; these lines fail to compile when
// they and the schema disagree on any field, so the two definitions cannot drift apart.
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type SchemaOptions = z.input<typeof optionsSchema>;
const optionsMatchSchema: Equals<Required<SchemaOptions>, Required<ContextGuardOptions>> = true;
void optionsMatchSchema;
