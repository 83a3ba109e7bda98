// Soak test: thousands of random conversations driven through the guard by a stateless host (it
// resends its full, immutable, deep-frozen history on every call, like the AI SDK), with a flaky
// summarizer, checking the invariants of DESIGN.md on every call and counting what went wrong.
//
//   node bench/soak.ts                      (10,000 conversations; npm run soak)
//   node bench/soak.ts --quick              (a few hundred)
//   node bench/soak.ts --conversations 2000 --seed 1234
//   node bench/soak.ts --seed 1234 --only 517 [--dump]   (one conversation alone, to reproduce)
//   node bench/soak.ts --seed 1234 --only-batch-of 517    (its whole batch: one guard, shared breaker)
//   SOAK_TRACE=1 node bench/soak.ts ...                    (each conversation's start and duration, to stderr)
//
// Outcomes that depend on time (a summarizer hang against its timeout, the circuit breaker's
// cooldown) may differ between reruns; everything else is a function of the seed.
//
// Conversations are generated with fast-check (`fc.sample`, one seed per conversation derived from
// the run's seed, so `--only` regenerates the same one): roles, sequential and parallel tool calls
// (1-20), huge and empty tool results, huge tool inputs, images with real PNG headers (base64,
// bytes, data URLs, links), unicode (emoji, CJK, combining marks, RTL, zero-width, secrets), broken
// tool pairing, mid-conversation system messages, manual compactions, retries, aborted calls,
// usage that is missing (never, sometimes) or malformed, windows of 4k-1M tokens. Conversations run
// in batches, one guard per batch with random options (retention, target, tail, prune, buffer,
// summary budget, summarizer window, circuit breaker, exact counting...), all conversations of a
// batch concurrently. The summarizer is flaky: it answers, throws, hangs past a short
// `summarizerTimeoutMs` (with or without honouring the abort signal), returns nothing, or returns
// far too much.
//
// Checked on every beforeModel output (counted, never thrown):
// - tool pairing valid (no call without its result, no result without its call);
// - the leading system messages first and unchanged, every other system message still present;
// - the latest user request present (verbatim, its first 100 characters quoted, or a clipped copy
//   that keeps its head);
// - the estimate <= the threshold, unless an `overflow` event fired in that call;
// - the input not mutated (deep-frozen history, plus a structuredClone snapshot on a sample of calls);
// - beforeModel / afterModel / compact never reject (nor hang);
// - an overflow is explained only when system messages + tools + the latest request, priced the way
//   the guard prices a compacted prompt, are over the threshold; other overflows are violations;
// - no `error` event.
// Exit code 1 when violations, throws, unexplained overflows or error events are not all zero.
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import {
  createContextGuard,
  MemoryStore,
  type BeforeModelResult,
  type ContextGuard,
  type ContextGuardEvent,
  type ContextGuardOptions,
  type GuardMessage,
  type SessionState,
  type SummarizerInput,
  type ToolDefinition,
  type ToolResultOutput,
} from '../src/index.ts';
// Internals, only to price the irreducible part exactly as the pipeline does (explained overflows).
import { priceAfterReset, resetCalibration } from '../src/tokens/calibration.ts';
import { pairingProblems } from '../test/compaction/pairing.ts';
import { png } from '../test/png.ts';
import { encodingFor, textMeasure } from '../src/tokens/exact.ts';
import { measureMessage, measureTool } from '../src/tokens/heuristic.ts';
import { mediaProviderForModel } from '../src/tokens/media.ts';

// ---------------------------------------------------------------------------------------------
// Options and results
// ---------------------------------------------------------------------------------------------

export interface SoakOptions {
  /** Conversations to run. Default 10,000. */
  conversations?: number;
  /** Seed of the run (printed; reruns are identical up to timing-dependent summarizer outcomes). */
  seed?: number;
  /** Conversations per guard (run concurrently). Default 25. */
  batchSize?: number;
  /** Run only this conversation index (with its batch's options), alone. */
  only?: number;
  /** Run only the batch that holds this conversation index (outcomes that depend on its neighbours: the shared circuit breaker). */
  onlyBatchOf?: number;
  /** Share of calls whose input is snapshotted (structuredClone) and compared after the call. Default 0.03. */
  snapshotRate?: number;
  /** A call that has not resolved after this long counts as a hang. Default 30 s. */
  watchdogMs?: number;
  /** Writes the history and options of the first violations as JSON under the OS temp folder. */
  dump?: boolean;
  /** Progress lines (to stderr in the CLI); none by default. */
  log?: (line: string) => void;
}

export interface ViolationDetail {
  kind: string;
  seed: number;
  conversation: number;
  call: number;
  message: string;
  options: Record<string, unknown>;
  window: number;
  modelId: string | undefined;
  /** The fake provider of the conversation: real = ratio × chars/4 + invisible + media; how usage is reported. */
  provider: { ratio: number; invisible: number; usage: string };
  /** Roles and sizes of the history sent, e.g. `system(1.2k) user(340+img) assistant[call×3] tool(3: 0, 12k, 4.1M)`. */
  shape: string;
  dumpedTo?: string;
}

export interface SoakResult {
  seed: number;
  conversations: number;
  calls: number;
  /** Calls whose result reported a compaction (r.compaction). */
  compactions: number;
  compactionsByStrategy: Record<string, number>;
  /** Times the flaky summarizer was invoked, and `summarizer-failed` events (by reason). */
  summarizerCalls: number;
  summarizerFailures: number;
  summarizerFailuresByReason: Record<string, number>;
  /** Invariant violations (pairing, system, request, threshold, mutation, hangs). */
  violations: number;
  violationsByKind: Record<string, number>;
  /** beforeModel / afterModel / compact rejected. */
  throws: number;
  explainedOverflows: number;
  unexplainedOverflows: number;
  errorEvents: number;
  toolPairingRepairs: number;
  snapshotsCompared: number;
  peakRssBytes: number;
  peakHeapBytes: number;
  wallMs: number;
  /** The first violations (and throws, unexplained overflows, error events), with what reproduces them. */
  details: ViolationDetail[];
}

/** Whether a run is clean: what the CLI's exit code and the test check. */
export function isClean(r: SoakResult): boolean {
  return r.violations === 0 && r.throws === 0 && r.unexplainedOverflows === 0 && r.errorEvents === 0;
}

// ---------------------------------------------------------------------------------------------
// Seeds and runtime randomness
// ---------------------------------------------------------------------------------------------

/** A 31-bit seed mixed from the run's seed and some indices (fast-check takes any integer). */
function mix(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 1;
}

/** mulberry32: the summarizer's per-session randomness (it runs at call time, outside fast-check). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------

/** Log-uniform windows, 4k to 1M tokens. */
const windowArb = fc.integer({ min: 0, max: 1000 }).map((k) => Math.round(4_000 * 250 ** (k / 1000)));

/**
 * Sizes in thousandths of the window (chars/4 tokens); 0 is empty. Mostly small, sometimes a good
 * share of the window, rarely more than the whole window (huge pastes, tool results, files).
 */
const sizeArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(0) },
  { weight: 60, arbitrary: fc.integer({ min: 1, max: 30 }) },
  { weight: 12, arbitrary: fc.integer({ min: 30, max: 200 }) },
  { weight: 2, arbitrary: fc.integer({ min: 200, max: 800 }) },
  { weight: 1, arbitrary: fc.integer({ min: 800, max: 1_500 }) },
);
/** Sizes of parallel results (2-20 in one step): smaller each, the same extremes, rarer. */
const parallelSizeArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(0) },
  { weight: 60, arbitrary: fc.integer({ min: 1, max: 10 }) },
  { weight: 10, arbitrary: fc.integer({ min: 10, max: 60 }) },
  { weight: 2, arbitrary: fc.integer({ min: 60, max: 400 }) },
  { weight: 1, arbitrary: fc.integer({ min: 800, max: 1_500 }) },
);
const smallSizeArb = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 5 }) }, { weight: 1, arbitrary: fc.integer({ min: 5, max: 40 }) });

const STYLES = ['ascii', 'code', 'emoji', 'cjk', 'combining', 'mixed', 'secret', 'base64', 'pem'] as const;
type Style = (typeof STYLES)[number];
const styleArb: fc.Arbitrary<Style> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Style>('ascii') },
  { weight: 3, arbitrary: fc.constant<Style>('code') },
  { weight: 2, arbitrary: fc.constant<Style>('emoji') },
  { weight: 2, arbitrary: fc.constant<Style>('cjk') },
  { weight: 1, arbitrary: fc.constant<Style>('combining') },
  { weight: 1, arbitrary: fc.constant<Style>('mixed') },
  { weight: 1, arbitrary: fc.constant<Style>('secret') },
  { weight: 1, arbitrary: fc.constant<Style>('base64') },
  { weight: 1, arbitrary: fc.constant<Style>('pem') },
);

const imageArb = fc.record({
  encoding: fc.constantFrom('base64' as const, 'bytes' as const, 'data-url' as const, 'link' as const),
  // Mostly screenshots and photos of ordinary size, sometimes huge (billed at the provider's cap).
  width: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 1_024 }) }, { weight: 1, arbitrary: fc.integer({ min: 1_024, max: 8_000 }) }),
  height: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 1_024 }) }, { weight: 1, arbitrary: fc.integer({ min: 1_024, max: 8_000 }) }),
  padding: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 600 }) }, { weight: 1, arbitrary: fc.integer({ min: 600, max: 60_000 }) }),
});
type ImageSpec = typeof imageArb extends fc.Arbitrary<infer T> ? T : never;

const userArb = fc.record({
  size: sizeArb,
  style: styleArb,
  /** String content, or parts (one or two text parts, images). */
  parts: fc.boolean(),
  images: fc.oneof({ weight: 6, arbitrary: fc.constant([] as ImageSpec[]) }, { weight: 2, arbitrary: fc.array(imageArb, { minLength: 1, maxLength: 3 }) }),
  /** A request of whitespace only (nothing to quote). */
  blank: fc.integer({ min: 0, max: 60 }).map((n) => n === 0),
  secondText: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});
type UserSpec = typeof userArb extends fc.Arbitrary<infer T> ? T : never;

const RESULT_KINDS = ['text', 'json', 'error-text', 'error-json', 'content-image', 'execution-denied'] as const;
const resultArb = (size: fc.Arbitrary<number>) =>
  fc.record({
    size,
    style: styleArb,
    kind: fc.oneof(
      { weight: 12, arbitrary: fc.constant<(typeof RESULT_KINDS)[number]>('text') },
      { weight: 3, arbitrary: fc.constant<(typeof RESULT_KINDS)[number]>('json') },
      { weight: 2, arbitrary: fc.constant<(typeof RESULT_KINDS)[number]>('error-text') },
      { weight: 1, arbitrary: fc.constant<(typeof RESULT_KINDS)[number]>('error-json') },
      { weight: 2, arbitrary: fc.constant<(typeof RESULT_KINDS)[number]>('content-image') },
      { weight: 1, arbitrary: fc.constant<(typeof RESULT_KINDS)[number]>('execution-denied') },
    ),
    image: imageArb,
    /** Size of the call's input (a whole file written is a huge input). */
    inputSize: fc.oneof({ weight: 15, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: size }),
  });
type ResultSpec = ReturnType<typeof resultArb> extends fc.Arbitrary<infer T> ? T : never;

const TOOL_NAMES = ['read_file', 'write_file', 'bash', 'search', 'memory', 'mcp__fs__read_file', 'str_replace_based_edit_tool', 'apply_patch'] as const;

const replyArb = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('text' as const), size: sizeArb, style: styleArb, reasoning: fc.boolean(), asString: fc.boolean() }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('tools' as const),
      // Sequential steps (one call) mostly, parallel calls (2-20) often enough.
      results: fc.oneof(
        { weight: 6, arbitrary: fc.array(resultArb(sizeArb), { minLength: 1, maxLength: 1 }) },
        { weight: 3, arbitrary: fc.array(resultArb(parallelSizeArb), { minLength: 2, maxLength: 5 }) },
        { weight: 1, arbitrary: fc.array(resultArb(parallelSizeArb), { minLength: 6, maxLength: 20 }) },
      ),
      tool: fc.constantFrom(...TOOL_NAMES),
      /** One tool message per result, or all results in one. */
      separate: fc.boolean(),
      preamble: fc.option(fc.record({ size: smallSizeArb, style: styleArb }), { nil: undefined }),
    }),
  },
  // What a crashed agent loop leaves behind: a call without its result, or a stray result.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('broken' as const), unanswered: fc.boolean() }) },
  // The host appends nothing (the next user message follows a user message).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('none' as const) }) },
);
type ReplySpec = typeof replyArb extends fc.Arbitrary<infer T> ? T : never;

const fraction = (min: number, max: number) => fc.double({ min, max, noNaN: true }).map((x) => Math.round(x * 1000) / 1000);

const rare = (one: number) => fc.integer({ min: 1, max: one }).map((n) => n === 1);

const stepArb = fc.record({
  user: fc.option(userArb, { freq: 3, nil: undefined }),
  reply: replyArb,
  /** A user's `/compact` before this call. */
  manual: rare(25),
  /** The host calls twice with the same history (a retry). */
  retry: rare(10),
  /** A system message appended mid-conversation. */
  midSystem: rare(60),
  /** The call's abort signal fires shortly after the call starts. */
  abort: rare(40),
  /** For `usage: 'sometimes'`: whether this call reports usage. */
  reportUsage: fc.boolean(),
  /** For `usage: 'malformed'`: which bad value. */
  badUsage: fc.integer({ min: 0, max: 6 }),
});
type StepSpec = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

const conversationArb = fc.record({
  /** Window of the conversation's calls (when the batch's guard has none of its own). */
  window: windowArb,
  modelId: fc.constantFrom(undefined, 'claude-sonnet-4-5', 'gemini-2.5-pro', 'gpt-4o', 'deepseek-chat', 'acme-llm-7b'),
  systems: fc.array(
    fc.record({
      size: fc.oneof({ weight: 60, arbitrary: fc.integer({ min: 0, max: 20 }) }, { weight: 1, arbitrary: fc.integer({ min: 300, max: 1_500 }) }),
      style: styleArb,
    }),
    { maxLength: 3 },
  ),
  tools: fc.array(
    fc.record({ size: fc.oneof({ weight: 80, arbitrary: fc.integer({ min: 0, max: 5 }) }, { weight: 1, arbitrary: fc.integer({ min: 300, max: 1_200 }) }), name: fc.constantFrom(...TOOL_NAMES) }),
    { maxLength: 5 },
  ),
  first: userArb,
  usage: fc.oneof(
    { weight: 5, arbitrary: fc.constant('always' as const) },
    { weight: 3, arbitrary: fc.constant('sometimes' as const) },
    { weight: 3, arbitrary: fc.constant('never' as const) },
    { weight: 1, arbitrary: fc.constant('malformed' as const) },
  ),
  /** The fake provider: real tokens per chars/4 token, plus a constant invisible part. */
  ratio: fc.double({ min: 1, max: 3, noNaN: true }),
  // In tokens (>= 1), or a share of the window (< 1): a provider's template, a hidden system prompt.
  invisible: fc.oneof(
    { weight: 4, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 1_000 }) },
    { weight: 1, arbitrary: fraction(0.02, 0.5) },
  ),
  steps: fc.array(stepArb, { minLength: 2, maxLength: 8 }),
});
export type ConversationSpec = typeof conversationArb extends fc.Arbitrary<infer T> ? T : never;

const batchArb = fc.record({
  contextWindow: fc.oneof({ weight: 7, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: windowArb }),
  retention: fc.oneof({ weight: 3, arbitrary: fc.constant('keep-recent' as const) }, { weight: 1, arbitrary: fc.constant('summarize-all' as const) }),
  target: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fraction(0.2, 0.6) }),
  keepRecentTokens: fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fraction(0.02, 0.4) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 60_000 }) },
  ),
  keepFirstUserMessage: fc.boolean(),
  prune: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(false as const) },
    {
      weight: 2,
      arbitrary: fc.record(
        {
          maxToolResultTokens: fc.oneof(fraction(0.005, 0.2), fc.integer({ min: 100, max: 30_000 })),
          protectRecentTokens: fc.oneof(fraction(0.01, 0.4), fc.integer({ min: 100, max: 60_000 })),
          neverPrune: fc.constantFrom<string[]>(['memory'], ['read_file', 'bash'], []),
        },
        { requiredKeys: [] },
      ),
    },
  ),
  buffer: fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fraction(0.05, 0.35) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 30_000 }) },
  ),
  maxSummaryTokens: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 100, max: 8_000 }) }),
  summarizer: fc.oneof(
    { weight: 16, arbitrary: fc.constant('flaky' as const) },
    { weight: 2, arbitrary: fc.constant('none' as const) },
    { weight: 2, arbitrary: fc.constant('reliable' as const) },
  ),
  summarizerContextWindow: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 4_000, max: 200_000 }) }),
  summarizerTimeoutMs: fc.integer({ min: 5, max: 40 }),
  circuitBreaker: fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: fc.record({ failures: fc.integer({ min: 1, max: 6 }), cooldownMs: fc.integer({ min: 0, max: 200 }) }) },
  ),
  exactCounting: fc.constantFrom('auto' as const, 'off' as const),
  fileOps: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant(false as const) }),
  warnAt: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fraction(0.3, 1) }),
  calibration: fc.constantFrom(undefined, undefined, undefined, { max: 3 }, { default: 2 }),
  /** The host's logger throws on some events (the guard must swallow it). */
  throwingLogger: rare(10),
});
export type BatchSpec = typeof batchArb extends fc.Arbitrary<infer T> ? T : never;

export function batchSpec(seed: number, batch: number): BatchSpec {
  return fc.sample(batchArb, { seed: mix(seed, 0xba7c4, batch), numRuns: 1 })[0] as BatchSpec;
}

export function conversationSpec(seed: number, index: number): ConversationSpec {
  return fc.sample(conversationArb, { seed: mix(seed, 0xc0417, index), numRuns: 1 })[0] as ConversationSpec;
}

// ---------------------------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------------------------

function pseudoRandomBase64(bytes: number): string {
  const b = Buffer.alloc(bytes);
  for (let i = 0, x = 12345; i < bytes; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b.toString('base64');
}

const FRAGMENTS: Record<Style, string> = {
  ascii: 'The quick brown fox jumps over the lazy dog while the build runs; ',
  code: 'export function handle(req: Request) {\n  if (!req.ok) throw new Error(`bad ${req.status}`);\n  return req.json();\n}\n',
  emoji: '👩‍💻 deploy 🚀 ok ✅ fail ❌ 🇫🇷 family 👨‍👩‍👧‍👦 ',
  cjk: '上下文窗口管理测试，压缩历史消息。日本語のテキスト、한국어 문장입니다. ',
  combining: 'e\u0301 a\u0308 n\u0303 Z\u0336\u0335a\u0337l\u0338g\u0334o\u0360 q\u0323\u0307 ',
  mixed: 'Ünïcödé ✓ — “quotes” 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u202eRTL\u202c \u200bzero\u200dwidth عربى עברית ',
  secret: 'export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123 and AKIAABCDEFGHIJKLMNOP, Authorization: Bearer abcdefghijklmnopqrstuvwx0123; ',
  // Real base64 of pseudo-random bytes ('+' and '/' every ~64 characters, as in an inline screenshot).
  base64: pseudoRandomBase64(48_000),
  // An unterminated PEM header in a log (see MAX_PEM_CHARS).
  pem: 'ssh: reading key -----BEGIN OPENSSH PRIVATE KEY----- (truncated)\n',
};

/**
 * Cap of 'pem' texts: the default redaction is superlinear on many unterminated PEM headers
 * (~40 ms at 160k characters, growing quadratically), kept small so the soak measures the rest.
 * Texts that make its URL-credentials pattern quadratic (long runs like `a.b.c.d…` or `abc-def-…`
 * without whitespace: 160k characters take 9-20 s, blocking the event loop) are left out for the
 * same reason; see the report of the soak run.
 */
const MAX_PEM_CHARS = 20_000;

/**
 * Longest single text: 1.2M characters (300k chars/4 tokens, over the threshold of every window up
 * to ~250k at the default correction). Larger windows still overflow on many such messages
 * together; keeping single texts this size keeps a 10,000-conversation run within minutes.
 */
const MAX_TEXT_CHARS = 1_200_000;

/** `label` and then about `chars` characters of the style's text (never shorter than the label; '' for 0). */
function makeText(label: string, chars: number, style: Style): string {
  const n = Math.round(Math.min(chars, style === 'pem' ? MAX_PEM_CHARS : MAX_TEXT_CHARS));
  if (n <= 0) return '';
  const head = `${label} `;
  if (n <= head.length) return label;
  const fragment = FRAGMENTS[style];
  // `repeat` then `slice`: huge strings cheaply; the cut may split a surrogate pair or a grapheme, on purpose.
  return head + fragment.repeat(Math.ceil((n - head.length) / fragment.length)).slice(0, n - head.length);
}


function imagePart(spec: ImageSpec): { type: 'image'; image: string | Uint8Array; mediaType: string } {
  const bytes = png(spec.width, spec.height, spec.padding);
  switch (spec.encoding) {
    case 'bytes':
      return { type: 'image', image: new Uint8Array(bytes), mediaType: 'image/png' };
    case 'data-url':
      return { type: 'image', image: `data:image/png;base64,${bytes.toString('base64')}`, mediaType: 'image/png' };
    case 'link':
      return { type: 'image', image: `https://example.com/screenshots/${spec.width}x${spec.height}.png`, mediaType: 'image/png' };
    default:
      return { type: 'image', image: bytes.toString('base64'), mediaType: 'image/png' };
  }
}

/** Deep-freezes a value, so that any mutation by the guard throws (ESM code is strict). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    if (ArrayBuffer.isView(value)) return value; // typed arrays cannot be frozen: the snapshots cover them
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Builds a conversation's messages; sizes are thousandths of the window in chars/4 tokens. */
class Builder {
  private readonly window: number;
  private readonly conversation: number;
  private n = 0;

  constructor(conversation: number, window: number) {
    this.conversation = conversation;
    this.window = window;
  }

  chars(size: number): number {
    return (size / 1000) * this.window * 4;
  }

  label(prefix: string): string {
    return `${prefix}${this.conversation}.${this.n++}`;
  }

  system(size: number, style: Style): GuardMessage {
    return { role: 'system', content: makeText(this.label('SYS'), Math.max(1, this.chars(size)), style) };
  }

  user(spec: UserSpec): GuardMessage {
    const text = spec.blank ? ' \n\t ' : makeText(this.label('U'), this.chars(spec.size), spec.style);
    if (!spec.parts && spec.images.length === 0) return { role: 'user', content: text };
    const parts: Array<{ type: 'text'; text: string } | ReturnType<typeof imagePart>> = [{ type: 'text', text }];
    if (spec.secondText) parts.push({ type: 'text', text: makeText(this.label('U2-'), 300, spec.style) });
    for (const image of spec.images) parts.push(imagePart(image));
    return { role: 'user', content: parts };
  }

  reply(step: number, spec: ReplySpec): GuardMessage[] {
    switch (spec.kind) {
      case 'none':
        return [];
      case 'text': {
        const text = makeText(this.label('A'), this.chars(spec.size), spec.style);
        if (spec.asString && !spec.reasoning) return [{ role: 'assistant', content: text }];
        return [
          {
            role: 'assistant',
            content: [...(spec.reasoning ? [{ type: 'reasoning' as const, text: makeText(this.label('R'), 400, 'ascii') }] : []), { type: 'text' as const, text }],
          },
        ];
      }
      case 'broken': {
        const id = `lost-${this.conversation}-${step}-${this.n++}`;
        return spec.unanswered
          ? [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'bash', input: { command: 'ls' } }] }]
          : [{ role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'bash', output: { type: 'text', value: 'stray result' } }] }];
      }
      case 'tools': {
        const calls = spec.results.map((r, k) => {
          const id = `call-${this.conversation}-${step}-${k}-${this.n++}`;
          const input: Record<string, unknown> = spec.tool === 'bash' ? { command: `rg -n TODO src/m${k}` } : { path: `src/module_${step}_${k}.ts` };
          if (r.inputSize > 0) input['content'] = makeText(this.label('IN'), this.chars(r.inputSize), r.style);
          return { type: 'tool-call' as const, toolCallId: id, toolName: spec.tool, input };
        });
        const assistant: GuardMessage = {
          role: 'assistant',
          content: [...(spec.preamble ? [{ type: 'text' as const, text: makeText(this.label('P'), this.chars(spec.preamble.size), spec.preamble.style) }] : []), ...calls],
        };
        const results = spec.results.map((r, k) => ({
          type: 'tool-result' as const,
          toolCallId: calls[k]!.toolCallId,
          toolName: spec.tool,
          output: this.output(r),
        }));
        return [assistant, ...(spec.separate ? results.map((r): GuardMessage => ({ role: 'tool', content: [r] })) : [{ role: 'tool' as const, content: results }])];
      }
    }
  }

  private output(r: ResultSpec): ToolResultOutput {
    const text = makeText(this.label('T'), this.chars(r.size), r.style);
    switch (r.kind) {
      case 'json':
        return { type: 'json', value: { ok: true, lines: text.length, body: text, nested: { list: [1, 2, 3], unicode: '✓ 上 👩‍💻' } } };
      case 'error-text':
        return { type: 'error-text', value: text || 'error: command failed with exit code 1' };
      case 'error-json':
        return { type: 'error-json', value: { error: 'ENOENT', message: text.slice(0, 2_000) } };
      case 'execution-denied':
        return { type: 'execution-denied', reason: 'the user denied this tool call' };
      case 'content-image': {
        const data = png(r.image.width, r.image.height, r.image.padding).toString('base64');
        return { type: 'content', value: [{ type: 'text', text }, { type: 'image-data', data, mediaType: 'image/png' }] };
      }
      default:
        return { type: 'text', value: text };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The fake provider
// ---------------------------------------------------------------------------------------------

const providerCost = new WeakMap<object, { chars: number; media: number }>();

/** What the fake provider bills: ratio × chars/4 + a constant invisible part + media (the guard's own media prices). */
function realTokens(messages: readonly GuardMessage[], tools: readonly ToolDefinition[], ratio: number, invisible: number, modelId: string | undefined): number {
  const provider = mediaProviderForModel(modelId);
  let chars = tools.reduce((n, t) => n + measureTool(t), 0);
  let media = 0;
  for (const m of messages) {
    let c = providerCost.get(m);
    if (!c) {
      const x = measureMessage(m, provider);
      c = { chars: x.chars, media: x.mediaTokens };
      providerCost.set(m, c);
    }
    chars += c.chars;
    media += c.media;
  }
  return Math.ceil((ratio * chars) / 4) + invisible + media;
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------


/** All text of a user message (text parts joined), '' for other roles. */
function userText(m: GuardMessage): string {
  if (m.role !== 'user') return '';
  if (typeof m.content === 'string') return m.content;
  return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/** The first `n` UTF-16 units, one fewer when the cut would split a surrogate pair. */
function head(text: string, n: number): string {
  if (text.length <= n) return text;
  const code = text.charCodeAt(n - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, n - 1) : text.slice(0, n);
}

/** Whether the latest user request of `input` is in `out`: the same message, or its first 100 characters quoted. */
function requestPresent(input: readonly GuardMessage[], out: readonly GuardMessage[]): boolean {
  let latest: GuardMessage | undefined;
  for (let i = input.length - 1; i >= 0; i--) {
    if (input[i]?.role === 'user') {
      latest = input[i];
      break;
    }
  }
  if (!latest || out.includes(latest)) return true;
  const first = typeof latest.content === 'string' ? latest.content : (latest.content.find((p) => p.type === 'text' && p.text.trim() !== '') as { text: string } | undefined)?.text ?? '';
  // A request without text (images only, or blanks) has nothing to quote; its media travel with the continuation.
  if (first.trim() === '') return true;
  const quote = head(first, 100);
  const short = head(first, 32);
  // Quoted by a continuation, or kept: whole, or clipped (head and tail) by hard fit or an overflow.
  // A clipped request keeps at least 200 characters, shared by its text parts (two here): a shorter head.
  return out.some((m) => {
    if (m.role !== 'user') return false;
    const text = userText(m);
    return text.includes(quote) || (text.includes(short) && text.includes(' characters omitted ...]'));
  });
}

const sameMessage = (a: GuardMessage | undefined, b: GuardMessage): boolean => a === b || isDeepStrictEqual(a, b);

/** `system(1.2k) user(340+img) assistant[call×3] tool(3: 0, 12k, 4.1M)`: what a history looks like. */
function shapeOf(messages: readonly GuardMessage[]): string {
  const k = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n));
  const out: string[] = [];
  for (const m of messages) {
    if (typeof m.content === 'string') {
      out.push(`${m.role}(${k(m.content.length)})`);
      continue;
    }
    const parts = m.content as unknown as Array<Record<string, unknown>>;
    if (m.role === 'tool') {
      out.push(`tool(${parts.length}: ${parts.map((p) => k(JSON.stringify((p['output'] as { value?: unknown } | undefined)?.value ?? '').length)).join(', ')})`);
      continue;
    }
    const calls = parts.filter((p) => p['type'] === 'tool-call').length;
    const images = parts.filter((p) => p['type'] === 'image').length;
    const text = parts.reduce((n, p) => n + (typeof p['text'] === 'string' ? (p['text'] as string).length : 0), 0);
    out.push(`${m.role}${calls ? `[call×${calls}]` : ''}(${k(text)}${images ? `+${images}img` : ''})`);
  }
  return out.join(' ');
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

interface Counters {
  conversations: number;
  calls: number;
  compactions: number;
  compactionsByStrategy: Record<string, number>;
  summarizerCalls: number;
  summarizerFailures: number;
  summarizerFailuresByReason: Record<string, number>;
  violations: number;
  violationsByKind: Record<string, number>;
  throws: number;
  explainedOverflows: number;
  unexplainedOverflows: number;
  errorEvents: number;
  toolPairingRepairs: number;
  snapshotsCompared: number;
  peakRss: number;
  peakHeap: number;
  details: ViolationDetail[];
  dumps: number;
}

const MAX_DETAILS = 40;
const MAX_DETAILS_PER_KIND = 10;
const MAX_DUMPS = 5;

function bump(record: Record<string, number>, key: string, by = 1): void {
  record[key] = (record[key] ?? 0) + by;
}

/** The batch's guard options as data (what a reproduction needs; functions are named). */
function describeOptions(spec: BatchSpec, window: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(spec)) if (value !== undefined && key !== 'throwingLogger') o[key] = value;
  if (spec.contextWindow === undefined) o['callContextWindow'] = window;
  return o;
}

function guardOptions(spec: BatchSpec): ContextGuardOptions {
  const o: ContextGuardOptions = {
    retention: spec.retention,
    keepFirstUserMessage: spec.keepFirstUserMessage,
    summarizerTimeoutMs: spec.summarizerTimeoutMs,
    exactCounting: spec.exactCounting,
  };
  if (spec.contextWindow !== undefined) o.contextWindow = spec.contextWindow;
  if (spec.target !== undefined) o.target = spec.target;
  if (spec.keepRecentTokens !== undefined) o.keepRecentTokens = spec.keepRecentTokens;
  if (spec.prune !== undefined) o.prune = spec.prune;
  if (spec.buffer !== undefined) {
    // A buffer in tokens must leave the target room under a fixed window (else the options are invalid).
    o.buffer = spec.contextWindow !== undefined && spec.buffer >= 1 ? Math.min(spec.buffer, Math.floor(spec.contextWindow * 0.35)) : spec.buffer;
  }
  if (spec.maxSummaryTokens !== undefined) o.maxSummaryTokens = spec.maxSummaryTokens;
  if (spec.summarizerContextWindow !== undefined) o.summarizerContextWindow = spec.summarizerContextWindow;
  if (spec.circuitBreaker !== undefined) o.circuitBreaker = spec.circuitBreaker;
  if (spec.fileOps !== undefined) o.fileOps = spec.fileOps;
  if (spec.warnAt !== undefined) o.warnAt = spec.warnAt;
  if (spec.calibration !== undefined) o.calibration = spec.calibration;
  return o;
}

/** The flaky summarizer: per session randomness, so a conversation's outcomes do not depend on its neighbours' order. */
function flakySummarizer(seed: number, counters: Counters, reliable: boolean) {
  const rngs = new Map<string, () => number>();
  const okSummary = (input: SummarizerInput): string => {
    const body =
      `## Task state\nSummarized ${input.messages.length} messages${input.previousSummary ? ' (updated)' : ''}. ✓ 上下文 👩‍💻\n` +
      `## Files\nsrc/module.ts\n## Tool history\nread, wrote, ran tests\n## Errors\nNone.\n## Decisions\nKeep going.\n## User guidance\nNone.\n## Next steps\nContinue.`;
    return body.slice(0, Math.max(40, Math.floor(input.maxSummaryTokens * 0.5)));
  };
  return (input: SummarizerInput): string | { text: string } | Promise<string | { text: string }> => {
    counters.summarizerCalls++;
    if (reliable) return okSummary(input);
    let rng = rngs.get(input.sessionId);
    if (!rng) {
      rng = prng(mix(seed, 0x5e55, Number(input.sessionId.replace(/\D/g, '')) || 0));
      rngs.set(input.sessionId, rng);
    }
    const x = rng();
    if (x < 0.4) return okSummary(input);
    if (x < 0.47) return { text: okSummary(input) };
    if (x < 0.54) throw new Error('summarizer: 529 overloaded (sync throw)');
    if (x < 0.61) return Promise.reject(new Error('summarizer: connection reset'));
    if (x < 0.69) {
      // Hangs, honouring the abort signal as a well-behaved model client does.
      return new Promise((_resolve, reject) => {
        input.signal.addEventListener('abort', () => reject(input.signal.reason), { once: true });
      });
    }
    if (x < 0.75) {
      // Hangs past the timeout ignoring the signal, then answers anyway (late).
      return new Promise((resolve) => setTimeout(() => resolve(okSummary(input)), 200).unref());
    }
    if (x < 0.84) {
      const empties = ['', '   \n\t', { text: '' }, undefined, null, 42] as unknown[];
      return empties[Math.floor(rng() * empties.length)] as string;
    }
    // Far too long: rejected as too-large.
    const huge = 'word '.repeat(Math.max(10_000, input.maxSummaryTokens * 4));
    return rng() < 0.5 ? huge : { text: huge };
  };
}

interface Session {
  events: ContextGuardEvent[];
  /** Events before this index were already scanned for errors. */
  scanned: number;
}

export async function runSoak(options: SoakOptions = {}): Promise<SoakResult> {
  const seed = options.seed ?? mix(Date.now(), process.pid);
  const conversations = options.conversations ?? 10_000;
  const batchSize = options.batchSize ?? 25;
  const snapshotRate = options.snapshotRate ?? 0.03;
  const watchdogMs = options.watchdogMs ?? 30_000;
  const log = options.log ?? (() => {});
  const started = performance.now();

  const c: Counters = {
    conversations: 0,
    calls: 0,
    compactions: 0,
    compactionsByStrategy: {},
    summarizerCalls: 0,
    summarizerFailures: 0,
    summarizerFailuresByReason: {},
    violations: 0,
    violationsByKind: {},
    throws: 0,
    explainedOverflows: 0,
    unexplainedOverflows: 0,
    errorEvents: 0,
    toolPairingRepairs: 0,
    snapshotsCompared: 0,
    peakRss: 0,
    peakHeap: 0,
    details: [],
    dumps: 0,
  };
  const sampleMemory = () => {
    const m = process.memoryUsage();
    if (m.rss > c.peakRss) c.peakRss = m.rss;
    if (m.heapUsed > c.peakHeap) c.peakHeap = m.heapUsed;
  };
  const sampler = setInterval(sampleMemory, 25);
  sampler.unref();

  const indices =
    options.only !== undefined
      ? [options.only]
      : options.onlyBatchOf !== undefined
        ? Array.from({ length: batchSize }, (_, k) => Math.floor(options.onlyBatchOf! / batchSize) * batchSize + k)
        : Array.from({ length: conversations }, (_, i) => i);
  const batches = new Map<number, number[]>();
  for (const i of indices) {
    const b = Math.floor(i / batchSize);
    const list = batches.get(b) ?? [];
    list.push(i);
    batches.set(b, list);
  }

  let done = 0;
  try {
    for (const [b, members] of batches) {
      await runBatch(seed, b, members, c, { snapshotRate, watchdogMs, dump: options.dump ?? false });
      done += members.length;
      sampleMemory();
      if (b % 40 === 39) {
        log(
          `  ${done}/${indices.length} conversations, ${c.calls} calls, ${c.compactions} compactions, ` +
            `${c.violations} violations, ${c.throws} throws, ${c.unexplainedOverflows} unexplained overflows, ${c.errorEvents} error events ` +
            `(${((performance.now() - started) / 1000).toFixed(1)} s, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB)`,
        );
      }
    }
  } finally {
    clearInterval(sampler);
  }
  sampleMemory();

  return {
    seed,
    conversations: c.conversations,
    calls: c.calls,
    compactions: c.compactions,
    compactionsByStrategy: c.compactionsByStrategy,
    summarizerCalls: c.summarizerCalls,
    summarizerFailures: c.summarizerFailures,
    summarizerFailuresByReason: c.summarizerFailuresByReason,
    violations: c.violations,
    violationsByKind: c.violationsByKind,
    throws: c.throws,
    explainedOverflows: c.explainedOverflows,
    unexplainedOverflows: c.unexplainedOverflows,
    errorEvents: c.errorEvents,
    toolPairingRepairs: c.toolPairingRepairs,
    snapshotsCompared: c.snapshotsCompared,
    peakRssBytes: c.peakRss,
    peakHeapBytes: c.peakHeap,
    wallMs: performance.now() - started,
    details: c.details,
  };
}

interface RunSettings {
  snapshotRate: number;
  watchdogMs: number;
  dump: boolean;
}

async function runBatch(seed: number, batch: number, members: number[], c: Counters, settings: RunSettings): Promise<void> {
  const spec = batchSpec(seed, batch);
  const sessions = new Map<string, Session>();
  const store = new MemoryStore<SessionState>();
  const summarizer = spec.summarizer === 'none' ? undefined : flakySummarizer(seed, c, spec.summarizer === 'reliable');
  const guard = createContextGuard({
    ...guardOptions(spec),
    store,
    ...(summarizer ? { summarizer } : {}),
    onEvent: (e) => {
      if (e.type === 'error') {
        c.errorEvents++;
        const error = e.error as { stack?: string; message?: string } | undefined;
        // Attributed to its conversation below (the call that saw it); unattributed ones are reported here.
        if (!e.sessionId || !sessions.has(e.sessionId)) {
          record(c, {
            kind: 'error-event',
            seed,
            conversation: -1,
            call: -1,
            message: `${e.stage}: ${error?.stack ?? String(e.error)}`,
            options: describeOptions(spec, 0),
            window: 0,
            modelId: undefined,
            provider: { ratio: 0, invisible: 0, usage: '' },
            shape: '',
          });
        }
      } else if (e.type === 'summarizer-failed') {
        c.summarizerFailures++;
        bump(c.summarizerFailuresByReason, e.reason);
      } else if (e.type === 'tool-pairing-repaired') {
        c.toolPairingRepairs++;
      }
      if ('sessionId' in e && e.sessionId) sessions.get(e.sessionId)?.events.push(e);
      if (spec.throwingLogger && e.type === 'estimate') throw new Error('the host logger broke');
    },
  });
  const trace = process.env['SOAK_TRACE'] === '1';
  await Promise.all(
    members.map(async (i) => {
      const t0 = performance.now();
      if (trace) process.stderr.write(`start ${i}\n`);
      await runConversation(seed, i, spec, guard, store, sessions, c, settings);
      if (trace) process.stderr.write(`end ${i} ${(performance.now() - t0).toFixed(0)} ms\n`);
    }),
  );
}

/** Keeps the first few problems of each kind (so one frequent kind does not hide the others). */
function record(c: Counters, detail: ViolationDetail): void {
  const same = c.details.filter((d) => d.kind === detail.kind).length;
  if (c.details.length < MAX_DETAILS && same < MAX_DETAILS_PER_KIND) c.details.push(detail);
}

/** Serializable copy of a history (bytes as base64) for a dump. */
function serializable(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? { $bytesBase64: Buffer.from(v).toString('base64') } : v)));
}

const WATCHDOG = Symbol('watchdog');

async function withWatchdog<T>(promise: Promise<T>, ms: number): Promise<T | typeof WATCHDOG> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<typeof WATCHDOG>((resolve) => {
    timer = setTimeout(() => resolve(WATCHDOG), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function runConversation(
  seed: number,
  index: number,
  batch: BatchSpec,
  guard: ContextGuard,
  store: MemoryStore<SessionState>,
  sessions: Map<string, Session>,
  c: Counters,
  settings: RunSettings,
): Promise<void> {
  const spec = conversationSpec(seed, index);
  const sessionId = `soak-${index}`;
  const session: Session = { events: [], scanned: 0 };
  sessions.set(sessionId, session);
  const window = batch.contextWindow ?? spec.window;
  // Exact counting of huge texts is slow (a BPE pass over megabytes): tokenizer models get the smaller windows.
  const tokenizerModel = spec.modelId === 'gpt-4o' || spec.modelId === 'deepseek-chat';
  const modelId = tokenizerModel && batch.exactCounting === 'auto' && window > 64_000 ? 'claude-sonnet-4-5' : spec.modelId;
  const b = new Builder(index, window);
  const tools: ToolDefinition[] = deepFreeze(
    spec.tools.map((t, k) => ({
      name: `${t.name}_${k}`,
      description: makeText(`Tool ${k}:`, Math.max(20, b.chars(t.size)), 'ascii'),
      inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'a path ✓' }, content: { type: 'string' } }, required: ['path'] },
    })),
  );
  let history: GuardMessage[] = [...spec.systems.map((s) => b.system(s.size, s.style)), b.user(spec.first)].map(deepFreeze);
  let call = 0;
  const sampling = prng(mix(seed, 0xca11, index));
  c.conversations++;

  const fail = (kind: string, message: string, sent: readonly GuardMessage[]) => {
    if (kind === 'throw') c.throws++;
    else if (kind === 'unexplained-overflow') c.unexplainedOverflows++;
    else if (kind !== 'error-event') {
      c.violations++;
      bump(c.violationsByKind, kind);
    }
    const detail: ViolationDetail = {
      kind,
      seed,
      conversation: index,
      call,
      message,
      options: describeOptions(batch, window),
      window,
      modelId,
      provider: { ratio: Math.round(spec.ratio * 1000) / 1000, invisible: invisibleTokens(spec, window), usage: spec.usage },
      shape: shapeOf(sent),
    };
    if (settings.dump && c.dumps < MAX_DUMPS) {
      c.dumps++;
      const dir = join(tmpdir(), 'context-guard-soak');
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `seed-${seed}-conversation-${index}-call-${call}-${kind}.json`);
      writeFileSync(file, JSON.stringify({ seed, conversation: index, call, kind, message, options: detail.options, modelId, window, provider: detail.provider, tools, history: serializable(sent) }));
      detail.dumpedTo = file;
    }
    record(c, detail);
  };

  /** Error events of this session since the last scan (from beforeModel, afterModel or compact). */
  const scanErrors = (sent: readonly GuardMessage[]) => {
    for (const e of session.events.slice(session.scanned)) {
      if (e.type === 'error') {
        const error = e.error as { stack?: string } | undefined;
        fail('error-event', `${e.stage}: ${error?.stack ?? String(e.error)}`, sent);
      }
    }
    session.scanned = session.events.length;
  };

  /** One beforeModel call on the whole history, checked; undefined when the conversation cannot go on. */
  const oneCall = async (step: StepSpec): Promise<BeforeModelResult | undefined> => {
    const sent = Object.freeze(history.slice()) as readonly GuardMessage[];
    const snapshot = sampling() < settings.snapshotRate ? structuredClone(sent) : undefined;
    const stateBefore = await store.get(sessionId);
    const mark = session.events.length;
    const controller = step.abort ? new AbortController() : undefined;
    if (controller) setTimeout(() => controller.abort(new Error('the user pressed stop')), 1).unref();
    c.calls++;
    call++;
    let r: BeforeModelResult | typeof WATCHDOG;
    try {
      r = await withWatchdog(
        guard.beforeModel({
          sessionId,
          messages: sent as GuardMessage[],
          tools,
          ...(modelId ? { modelId } : {}),
          ...(batch.contextWindow === undefined ? { contextWindow: window } : {}),
          ...(controller ? { signal: controller.signal } : {}),
        }),
        settings.watchdogMs,
      );
    } catch (error) {
      fail('throw', `beforeModel rejected: ${(error as Error)?.stack ?? String(error)}`, sent);
      return undefined;
    }
    if (r === WATCHDOG) {
      fail('hang', `beforeModel did not resolve within ${settings.watchdogMs} ms`, sent);
      return undefined;
    }
    const events = session.events.slice(mark);
    scanErrors(sent);
    const overflow = events.some((e) => e.type === 'overflow');
    if (r.compaction) {
      c.compactions++;
      bump(c.compactionsByStrategy, r.compaction.strategy);
    }
    const out = r.messages;

    const pairing = pairingProblems(out);
    if (pairing.length > 0) fail('tool-pairing', pairing.slice(0, 3).join('; '), sent);

    let leading = 0;
    while (leading < sent.length && sent[leading]?.role === 'system') leading++;
    for (let k = 0; k < leading; k++) {
      if (!sameMessage(out[k], sent[k] as GuardMessage)) {
        fail('system-first', `leading system message ${k} is not first and unchanged in the output`, sent);
        break;
      }
    }
    for (let k = leading; k < sent.length; k++) {
      const m = sent[k] as GuardMessage;
      if (m.role === 'system' && !out.some((o) => sameMessage(o, m))) {
        fail('system-missing', `system message ${k} of the history is missing or changed in the output`, sent);
        break;
      }
    }

    if (!requestPresent(sent, out)) fail('latest-request', 'the latest user request is neither in the output nor quoted (first 100 characters)', sent);

    if (r.contextWindow !== window) fail('window', `result.contextWindow ${r.contextWindow}, expected ${window}`, sent);
    if (!overflow && !(r.tokens <= r.threshold)) {
      const comp = r.compaction ? `${r.compaction.strategy} ${r.compaction.tokensBefore}→${r.compaction.tokensAfter}` : 'no compaction';
      fail('over-threshold', `estimate ${r.tokens} > threshold ${r.threshold} without an overflow event (${comp})`, sent);
    }
    if (overflow) {
      // Explained when system messages + tools + the latest request alone, priced as the pipeline
      // prices a compacted prompt, are over the threshold: then nothing could fit.
      const text = await textMeasure(encodingFor(guard.options.exactCounting, modelId, guard.options.models));
      const provider = mediaProviderForModel(modelId);
      let request = -1;
      for (let k = sent.length - 1; k >= 0; k--) {
        if (sent[k]?.role === 'user') {
          request = k;
          break;
        }
      }
      let chars = tools.reduce((n, t) => n + measureTool(t, text.length), 0);
      let media = 0;
      sent.forEach((m, k) => {
        if (m.role !== 'system' && k !== request) return;
        const x = measureMessage(m, provider, text.length);
        chars += x.chars;
        media += x.mediaTokens;
      });
      // Priced as the pipeline priced it: after the compaction's calibration reset, whose reference
      // carries what the call's own estimate knew beyond the reset pricing (a hidden prompt).
      const stateAfter = await store.get(sessionId);
      const reset = stateAfter?.calibration.reference && !stateAfter.calibration.anchor ? stateAfter.calibration : resetCalibration(stateBefore?.calibration ?? {});
      const price = priceAfterReset({ ...reset, pending: undefined }, guard.options.calibration);
      const irreducible = price(chars, media);
      if (irreducible > r.threshold) c.explainedOverflows++;
      else {
        const comp = r.compaction ? `${r.compaction.steps.join('+')} ${r.compaction.tokensBefore}→${r.compaction.tokensAfter}` : 'no compaction';
        fail('unexplained-overflow', `overflow although system + tools + latest request cost ~${Math.round(irreducible)} <= threshold ${r.threshold} (sent ${r.tokens}; ${comp})`, sent);
      }
    }

    if (snapshot !== undefined) {
      c.snapshotsCompared++;
      if (!isDeepStrictEqual(sent, snapshot)) fail('input-mutated', 'the history sent differs from its snapshot after the call', sent);
    }
    return r;
  };

  try {
    for (let s = 0; s < spec.steps.length; s++) {
      const step = spec.steps[s] as StepSpec;
      const added: GuardMessage[] = [];
      if (step.midSystem) added.push(b.system(2, 'ascii'));
      if (step.user) added.push(b.user(step.user));
      if (added.length > 0) history = [...history, ...added.map(deepFreeze)];

      if (step.manual) {
        try {
          const res = await withWatchdog(guard.compact(sessionId, { focus: 'the failing tests ✓' }), settings.watchdogMs);
          if (res === WATCHDOG) {
            fail('hang', 'compact did not resolve', history);
            return;
          }
        } catch (error) {
          fail('throw', `compact rejected: ${(error as Error)?.stack ?? String(error)}`, history);
        }
        scanErrors(history);
      }

      let r = await oneCall(step);
      if (!r) return;
      if (step.retry) {
        r = await oneCall(step);
        if (!r) return;
      }

      const reply = b.reply(s, step.reply);
      const usage = usageFor(spec, step, r, tools, modelId, reply);
      if (usage !== 'skip') {
        try {
          const res = await withWatchdog(guard.afterModel({ sessionId, usage: usage as never }), settings.watchdogMs);
          if (res === WATCHDOG) {
            fail('hang', 'afterModel did not resolve', history);
            return;
          }
        } catch (error) {
          fail('throw', `afterModel rejected: ${(error as Error)?.stack ?? String(error)}`, history);
        }
        scanErrors(history);
      }
      if (reply.length > 0) history = [...history, ...reply.map(deepFreeze)];
    }
  } finally {
    sessions.delete(sessionId);
  }
}

/** The provider's invisible tokens for this conversation. */
function invisibleTokens(spec: ConversationSpec, window: number): number {
  return spec.invisible < 1 ? Math.round(spec.invisible * window) : spec.invisible;
}

/** What the host reports to afterModel after a call, or 'skip'. */
function usageFor(
  spec: ConversationSpec,
  step: StepSpec,
  r: BeforeModelResult,
  tools: readonly ToolDefinition[],
  modelId: string | undefined,
  reply: GuardMessage[],
): unknown {
  if (spec.usage === 'never' || (spec.usage === 'sometimes' && !step.reportUsage)) return 'skip';
  const inputTokens = realTokens(r.messages, tools, spec.ratio, invisibleTokens(spec, r.contextWindow ?? 0), modelId);
  const first = reply[0];
  const outputTokens = first?.role === 'assistant' ? Math.ceil((spec.ratio * measureMessage(first, 'generic').chars) / 4) : undefined;
  if (spec.usage === 'malformed' && step.reportUsage) {
    const bad: unknown[] = [undefined, null, { inputTokens: Number.NaN }, { inputTokens: -5 }, { inputTokens: 0 }, { inputTokens: '12' }, { inputTokens, outputTokens: -1 }];
    return bad[step.badUsage % bad.length];
  }
  return { inputTokens, ...(outputTokens !== undefined ? { outputTokens } : {}) };
}

// ---------------------------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------------------------

export function formatResult(r: SoakResult): string {
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
  const byKey = (o: Record<string, number>) =>
    Object.entries(o)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const rows: Array<[string, string]> = [
    ['seed', String(r.seed)],
    ['conversations', r.conversations.toLocaleString('en-US')],
    ['calls (beforeModel)', r.calls.toLocaleString('en-US')],
    ['compactions', `${r.compactions.toLocaleString('en-US')}${r.compactions ? ` (${byKey(r.compactionsByStrategy)})` : ''}`],
    ['summarizer calls', r.summarizerCalls.toLocaleString('en-US')],
    ['summarizer failures', `${r.summarizerFailures.toLocaleString('en-US')}${r.summarizerFailures ? ` (${byKey(r.summarizerFailuresByReason)})` : ''}`],
    ['tool pairing repairs', r.toolPairingRepairs.toLocaleString('en-US')],
    ['input snapshots compared', r.snapshotsCompared.toLocaleString('en-US')],
    ['**violations**', `${r.violations}${r.violations ? ` (${byKey(r.violationsByKind)})` : ''}`],
    ['**throws**', String(r.throws)],
    ['**unexplained overflows**', String(r.unexplainedOverflows)],
    ['explained overflows (irreducible part over the threshold)', r.explainedOverflows.toLocaleString('en-US')],
    ['**error events**', String(r.errorEvents)],
    ['peak RSS / heap used', `${mib(r.peakRssBytes)} / ${mib(r.peakHeapBytes)}`],
    ['wall time', `${(r.wallMs / 1000).toFixed(1)} s`],
  ];
  return ['| | |', '|---|---:|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}

function formatDetails(r: SoakResult): string {
  return r.details
    .map(
      (d, k) =>
        `${k + 1}. [${d.kind}] conversation ${d.conversation}, call ${d.call} (rerun: node bench/soak.ts --seed ${d.seed} --only ${d.conversation} --dump; ` +
        `or --only-batch-of ${d.conversation} when it needs its neighbours)\n` +
        `   ${d.message.split('\n').slice(0, 6).join('\n   ')}\n` +
        `   window ${d.window}, model ${d.modelId ?? '(none)'}, provider ${JSON.stringify(d.provider)}, options ${JSON.stringify(d.options)}\n` +
        `   history: ${d.shape.length > 600 ? `${d.shape.slice(0, 600)}…` : d.shape}` +
        (d.dumpedTo ? `\n   dumped to ${d.dumpedTo}` : ''),
    )
    .join('\n');
}

function argValue(args: string[], name: string): string | undefined {
  const k = args.indexOf(name);
  if (k >= 0) return args[k + 1];
  const inline = args.find((a) => a.startsWith(`${name}=`));
  return inline?.slice(name.length + 1);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const n = argValue(args, '--conversations');
  const s = argValue(args, '--seed');
  const only = argValue(args, '--only');
  const onlyBatchOf = argValue(args, '--only-batch-of');
  const batch = argValue(args, '--batch');
  const options: SoakOptions = {
    conversations: n !== undefined ? Number(n) : quick ? 300 : 10_000,
    ...(s !== undefined ? { seed: Number(s) } : {}),
    ...(only !== undefined ? { only: Number(only) } : {}),
    ...(onlyBatchOf !== undefined ? { onlyBatchOf: Number(onlyBatchOf) } : {}),
    ...(batch !== undefined ? { batchSize: Number(batch) } : {}),
    dump: args.includes('--dump'),
    log: (line) => process.stderr.write(`${line}\n`),
  };
  for (const [k, v] of Object.entries(options)) {
    if (typeof v === 'number' && !(Number.isInteger(v) && v >= 0)) {
      console.error(`bench/soak: --${k} expects a whole number, got ${v}`);
      process.exit(2);
    }
  }
  const seed = options.seed ?? mix(Date.now(), process.pid);
  console.log(
    `soak: ${options.only !== undefined ? `conversation ${options.only}` : options.onlyBatchOf !== undefined ? `the batch of conversation ${options.onlyBatchOf}` : `${options.conversations} conversations`}, seed ${seed} ` +
      `(rerun with --seed ${seed}), node ${process.version}`,
  );
  const result = await runSoak({ ...options, seed });
  console.log(formatResult(result));
  if (result.details.length > 0) {
    console.log(`\nfirst ${result.details.length} problems:`);
    console.log(formatDetails(result));
  }
  const clean = isClean(result);
  console.log(`\n${clean ? 'OK: zero violations, throws, unexplained overflows and error events' : 'FAILED'}`);
  process.exitCode = clean ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
