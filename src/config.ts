// Options of createContextGuard: one zod schema, its defaults, and the error bad options raise.
// Configuration mistakes surface once, at creation, with the path of the bad field; at call time the
// guard never throws (see guard.ts).
import { z } from 'zod';
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

const positiveTokens = z
  .number({ error: 'expected a positive number of tokens' })
  .refine((n) => Number.isFinite(n) && n > 0, 'expected a positive, finite number of tokens');

const isFunction = (v: unknown): boolean => typeof v === 'function';

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
  contextWindow: positiveTokens.optional(),
  models: z.record(z.string(), positiveTokens, 'expected an object mapping model ids to windows').optional(),
  buffer: z
    .number({ error: 'expected a number: tokens when >= 1, a fraction of the window when < 1' })
    .refine((n) => Number.isFinite(n) && n > 0, 'expected a positive number: tokens when >= 1, a fraction of the window when < 1')
    .optional(),
  calibration: calibrationSchema,
  warnAt: z
    .number({ error: 'expected a fraction of the window between 0 and 1' })
    .refine((n) => n > 0 && n <= 1, 'expected a fraction of the window between 0 (exclusive) and 1')
    .optional(),
  exactCounting: z
    .enum(['auto', 'off', 'o200k_base', 'cl100k_base'], { error: "expected 'auto', 'off', 'o200k_base' or 'cl100k_base'" })
    .optional(),
  store: storeSchema.optional(),
  maxSessions: z.number().int('expected a whole number of sessions').positive('expected at least 1 session').optional(),
  onEvent: z.custom<(event: ContextGuardEvent) => void>(isFunction, 'expected a function').optional(),
  summarizer: z.custom<(...args: never[]) => unknown>(isFunction, 'expected a function').optional(),
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
  /** Bound of the default in-memory store and of the per-process estimate cache. Default 10,000. */
  maxSessions?: number;
  /** Receives every event (estimates, warnings, ignored usage...). Exceptions it throws are swallowed. */
  onEvent?: (event: ContextGuardEvent) => void;
  /** Writes summaries during compaction. */
  summarizer?: (...args: never[]) => unknown;
}

export interface ResolvedCalibration {
  min: number;
  max: number;
  default: number;
}

export interface ResolvedOptions {
  contextWindow: number | undefined;
  models: Readonly<Record<string, number>>;
  buffer: number | undefined;
  calibration: ResolvedCalibration;
  warnAt: number;
  exactCounting: 'auto' | 'off' | 'o200k_base' | 'cl100k_base';
  store: StateStore<SessionState> | undefined;
  maxSessions: number;
  onEvent: ((event: ContextGuardEvent) => void) | undefined;
}

export const DEFAULTS = {
  calibration: { min: 1.0, max: 5.0, default: 1.5 },
  warnAt: 0.7,
  maxSessions: 10_000,
  /** Windows of at least this size keep a fixed buffer; smaller ones keep a fraction. */
  largeWindow: 200_000,
  largeWindowBuffer: 20_000,
  smallWindowBufferFraction: 0.2,
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
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (path ? `${path}.${k}` : k));
    return { field: keys[0] ?? path, message: `unknown option${keys.length > 1 ? 's' : ''} ${keys.map((k) => `\`${k}\``).join(', ')}` };
  }
  if (issue.code === 'invalid_type' && path === '' ) return { field: '', message: 'expected an options object' };
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
    throw new ContextGuardConfigError('calibration.min', `expected min (${calibration.min}) <= max (${calibration.max})`);
  }
  if (calibration.default < calibration.min || calibration.default > calibration.max) {
    throw new ContextGuardConfigError(
      'calibration.default',
      `expected a value between min (${calibration.min}) and max (${calibration.max}), received ${calibration.default}`,
    );
  }
  if (o.contextWindow !== undefined && o.buffer !== undefined && o.buffer >= 1 && o.buffer >= o.contextWindow) {
    throw new ContextGuardConfigError('buffer', `expected fewer tokens than contextWindow (${o.contextWindow}), received ${o.buffer}`);
  }
  return {
    contextWindow: o.contextWindow,
    models: o.models ?? {},
    buffer: o.buffer,
    calibration,
    warnAt: o.warnAt ?? DEFAULTS.warnAt,
    exactCounting: o.exactCounting ?? 'auto',
    store: o.store,
    maxSessions: o.maxSessions ?? DEFAULTS.maxSessions,
    onEvent: o.onEvent,
  };
}
