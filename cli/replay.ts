// `context-guard replay`: replays a real transcript through the guard, call by call, as its host
// sent it, and reports what the guard would have done: the estimate of every prompt against the
// provider's real count, the context meter, and the compactions (with the prompt sent after them).
//
// Two passes over the same calls:
// - the estimation pass (cli/estimate.ts, the same code as bench/accuracy.ts): the host's prompts
//   with the real counts fed back, under a window no prompt reaches; its estimate is what the guard
//   would measure for the prompt the host sent, scored against the real count;
// - the guard pass: the host's prompts under the real window and options; the guard compacts when
//   the estimate reaches the threshold, and later calls send the compacted history. A real count is
//   fed back only while the guard sent exactly the host's prompt (after a compaction the provider
//   never saw the prompt the guard sent, so its count would not describe it).
import { type ContextGuardOptions, createContextGuard, resolveModelInfo, thresholdFor } from '../src/index.ts';
import { type CallEstimate, type ErrorSummary, estimateCalls, isPlausibleCount, summarizeErrors } from './estimate.ts';
import {
  GrowingPrompt,
  type ParseIssue,
  readTranscript,
  type Transcript,
  type TranscriptFormat,
} from './transcripts/index.ts';

export interface ReplayOptions {
  file: string;
  /** forces the format instead of detecting it */
  format?: TranscriptFormat;
  /** context window in tokens; else from `model`, else from the file */
  window?: number;
  /** model id: resolves the window through the guard's registry, and stands for the file's when it has none */
  model?: string;
  /** the only summarizer available offline */
  summarizer?: 'mechanical';
  buffer?: number;
  target?: number;
  keepRecentTokens?: number;
  warnAt?: number;
  retention?: 'keep-recent' | 'summarize-all';
  exactCounting?: ContextGuardOptions['exactCounting'];
  /** false turns tool-output pruning off */
  prune?: boolean;
  maxToolResultTokens?: number;
  keepUserMessagesTokens?: number;
  minCallsBetween?: number;
  /** progress: `done` of `total` steps (two per call) */
  onProgress?: (done: number, total: number) => void;
  /** hands each call its prompt, in each pass (one that counts what it copies, in a test) */
  prompts?: () => GrowingPrompt;
}

export interface ReplayCompaction {
  /** 1-based number of the call that compacted */
  call: number;
  reason: string;
  strategy: string;
  steps: string[];
  tokensBefore: number;
  tokensAfter: number;
  messagesBefore: number;
  messagesAfter: number;
  summarizedMessages: number;
  prunedToolResults: number;
  truncatedToolResults: number;
  overflow: boolean;
}

export interface ReplayCallReport {
  /** 1-based call number */
  call: number;
  /** line of the file where the call starts (JSONL formats) */
  line?: number;
  /** messages the host sent */
  messages: number;
  /** the guard's estimate of the prompt the host sent */
  estimate: number;
  /** the provider's real count of that prompt, when the file has it */
  real?: number;
  /** a count the file has that no provider reports (infinite, absurd), as the file wrote it: not used */
  rejected?: string;
  /** (estimate − real) / real */
  error?: number;
  /** counted in the error summary (not a first call or the first after a host compaction) */
  scored: boolean;
  /** the guard's estimate of the prompt it sent (after a compaction, smaller than the host's) */
  sent: number;
  sentMessages: number;
  /** sent / window: the context meter */
  fraction: number;
  /** the compaction the guard ran on this call */
  compaction?: ReplayCompaction;
  /** the host compacted its own history just before this call (Claude Code, Codex) */
  hostCompaction?: boolean;
}

export interface ReplaySummary {
  calls: number;
  callsWithRealCount: number;
  /** calls whose count in the file was rejected (not finite, or above any window) */
  rejectedCounts: number;
  compactions: number;
  /** compactions by strategy */
  strategies: Record<string, number>;
  hostCompactions: number;
  /** calls whose sent prompt reached warnAt of the window */
  warnings: number;
  /** calls whose sent prompt (`sent`, as in the per-call log) was over the threshold */
  overflows: number;
  /** calls whose sent prompt (`sent`) was over the window */
  overWindow: number;
  /** compactions that could not bring the prompt under the threshold (OVERFLOW in the per-call log) */
  overflowCompactions: number;
  /**
   * Tokens the file's real counts show it does not contain (a system prompt and tool definitions the
   * host keeps out of the transcript): the smallest excess of a real count over the default
   * correction × the visible text, over the first calls with a count. 0 when none shows.
   */
  hiddenTokens: number;
  /**
   * Set when the guard reported that the fixed part of every prompt (system messages, tools and the
   * hidden part) is over the threshold alone: the limit it held prompts under instead.
   */
  fixedOverThreshold?: { fixedTokens: number; hiddenTokens: number; limit: number };
  largestPrompt: { call: number; estimate: number; real?: number } | undefined;
  largestSent: { call: number; tokens: number } | undefined;
  /** estimate error of the scored calls against the real counts (fractions) */
  estimateError: (ErrorSummary & { worstUnderCall?: number; worstOverCall?: number }) | undefined;
}

export interface ReplayReport {
  file: string;
  format: TranscriptFormat;
  modelId: string;
  contextWindow: number;
  windowSource: 'option' | 'model' | 'file' | 'registry';
  threshold: number;
  warnAt: number;
  calls: ReplayCallReport[];
  summary: ReplaySummary;
  /** malformed lines or entries that were skipped (the rest was replayed) */
  issues: ParseIssue[];
}

/** A problem with the command's input or options (exit code 2). */
export class ReplayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayError';
  }
}

function resolveWindow(
  transcript: Transcript,
  options: ReplayOptions,
): Pick<ReplayReport, 'contextWindow' | 'windowSource'> {
  if (options.window !== undefined) return { contextWindow: options.window, windowSource: 'option' };
  if (options.model !== undefined) {
    const info = resolveModelInfo(options.model);
    if (!info)
      throw new ReplayError(`the guard's registry does not know the model "${options.model}": pass --window <tokens>`);
    return { contextWindow: info.contextWindow, windowSource: 'model' };
  }
  if (transcript.contextWindow !== undefined) return { contextWindow: transcript.contextWindow, windowSource: 'file' };
  const info = resolveModelInfo(transcript.modelId);
  if (!info) {
    throw new ReplayError(
      `no context window known for the file's model "${transcript.modelId}": pass --window <tokens> or --model <id>`,
    );
  }
  return { contextWindow: info.contextWindow, windowSource: 'registry' };
}

/** Replays a transcript file through the guard (both passes) and returns the report. */
export async function replay(options: ReplayOptions): Promise<ReplayReport> {
  const transcript = readTranscript(options.file, options.format);
  return replayTranscript(transcript, options);
}

export async function replayTranscript(transcript: Transcript, options: ReplayOptions): Promise<ReplayReport> {
  if (transcript.modelId === 'unknown' && options.model !== undefined) transcript.modelId = options.model;
  if (options.summarizer !== undefined && options.summarizer !== 'mechanical') {
    throw new ReplayError(`unknown summarizer "${String(options.summarizer)}": only "mechanical" runs offline`);
  }
  const { contextWindow, windowSource } = resolveWindow(transcript, options);
  const total = transcript.calls.length * 2;
  let done = 0;
  const step = (): void => options.onProgress?.(++done, total);

  const estimates = await estimateCalls(transcript, {
    ...(options.exactCounting !== undefined ? { exactCounting: options.exactCounting } : {}),
    onCall: step,
    ...(options.prompts ? { prompts: options.prompts() } : {}),
  });

  let fixedOver: ReplaySummary['fixedOverThreshold'];
  const guardOptions: ContextGuardOptions = {
    contextWindow,
    onEvent: (e) => {
      if (e.type === 'fixed-over-threshold' && fixedOver === undefined)
        fixedOver = { fixedTokens: e.fixedTokens, hiddenTokens: e.hiddenTokens, limit: e.limit };
    },
  };
  if (options.buffer !== undefined) guardOptions.buffer = options.buffer;
  if (options.target !== undefined) guardOptions.target = options.target;
  if (options.keepRecentTokens !== undefined) guardOptions.keepRecentTokens = options.keepRecentTokens;
  if (options.warnAt !== undefined) guardOptions.warnAt = options.warnAt;
  if (options.retention !== undefined) guardOptions.retention = options.retention;
  if (options.exactCounting !== undefined) guardOptions.exactCounting = options.exactCounting;
  if (options.keepUserMessagesTokens !== undefined)
    guardOptions.keepUserMessagesTokens = options.keepUserMessagesTokens;
  if (options.minCallsBetween !== undefined) guardOptions.cost = { minCallsBetween: options.minCallsBetween };
  if (options.prune === false) guardOptions.prune = false;
  else if (options.maxToolResultTokens !== undefined) {
    guardOptions.prune = { maxToolResultTokens: options.maxToolResultTokens };
  }
  let guard: ReturnType<typeof createContextGuard>;
  try {
    guard = createContextGuard(guardOptions);
  } catch (error) {
    throw new ReplayError(error instanceof Error ? error.message : String(error));
  }
  const threshold = thresholdFor(contextWindow, options.buffer);
  const sessionId = `replay:${transcript.file}`;
  const hostCompactionCalls = new Set(transcript.hostCompactions.map((c) => c.beforeCall));

  const calls: ReplayCallReport[] = [];
  const prompts = options.prompts?.() ?? new GrowingPrompt();
  for (const [index, call] of transcript.calls.entries()) {
    const estimate = estimates[index] as CallEstimate;
    // The last call's array grown by what this call added (the parser's calls share one history).
    const messages = prompts.of(call);
    const r = await guard.beforeModel({
      sessionId,
      modelId: transcript.modelId,
      messages,
      tools: call.tools,
    });
    // The guard sends the host's own array when it changes nothing: compared message by message only
    // when it made another one.
    const unchanged =
      r.messages === messages ||
      (r.messages.length === messages.length && r.messages.every((m, i) => m === messages[i]));
    if (unchanged && estimate.real !== undefined) {
      const output = call.outputTokens;
      const usage = {
        inputTokens: estimate.real,
        ...(output !== undefined && isPlausibleCount(output) ? { outputTokens: output } : {}),
      };
      await guard.afterModel({ sessionId, usage });
    }
    const entry: ReplayCallReport = {
      call: index + 1,
      messages: messages.length,
      estimate: estimate.estimate,
      scored: estimate.scored,
      sent: r.tokens,
      sentMessages: r.messages.length,
      fraction: r.tokens / contextWindow,
    };
    if (call.line !== undefined) entry.line = call.line;
    if (estimate.real !== undefined) entry.real = estimate.real;
    if (estimate.rejected !== undefined) entry.rejected = estimate.rejected;
    if (estimate.error !== undefined) entry.error = estimate.error;
    if (hostCompactionCalls.has(index)) entry.hostCompaction = true;
    if (r.compaction) {
      const c = r.compaction;
      entry.compaction = {
        call: index + 1,
        reason: c.reason,
        strategy: c.strategy,
        steps: [...c.steps],
        tokensBefore: c.tokensBefore,
        tokensAfter: c.tokensAfter,
        messagesBefore: c.messagesBefore,
        messagesAfter: c.messagesAfter,
        summarizedMessages: c.summarizedMessages,
        prunedToolResults: c.prunedToolResults,
        truncatedToolResults: c.truncatedToolResults,
        overflow: c.overflow,
      };
    }
    calls.push(entry);
    step();
  }

  const warnAt = guard.options.warnAt;
  return {
    file: transcript.file,
    format: transcript.format,
    modelId: transcript.modelId,
    contextWindow,
    windowSource,
    threshold,
    warnAt,
    calls,
    summary: {
      ...summarize(calls, transcript, warnAt, threshold, contextWindow, estimates),
      ...(fixedOver ? { fixedOverThreshold: fixedOver } : {}),
    },
    issues: transcript.issues,
  };
}

/** Calls with a real count whose excess over calibration.max × the visible text is looked at. */
const HIDDEN_CALLS = 5;
/** The default correction: what text and code cost per chars/4 token with most tokenizers. */
const TOKENS_PER_HEURISTIC = 1.5;

/**
 * Tokens the file's real counts show it does not contain: on the first calls with a count, the
 * smallest excess of the count over the default correction × the visible text (plain chars/4 and
 * media): a system prompt or tool definitions the file leaves out (Claude Code's 12-26k), seen
 * best on a first call whose visible text is short. The smallest, so that neither a dense
 * tokenizer on a long prompt nor a count summing several steps can make one up.
 */
export function hiddenTokensOf(estimates: readonly CallEstimate[]): number {
  const excess = estimates
    .filter((e) => e.real !== undefined && Number.isFinite(e.heuristic))
    .slice(0, HIDDEN_CALLS)
    .map((e) => (e.real as number) - TOKENS_PER_HEURISTIC * e.heuristic);
  return excess.length === 0 ? 0 : Math.max(0, Math.round(Math.min(...excess)));
}

function summarize(
  calls: ReplayCallReport[],
  transcript: Transcript,
  warnAt: number,
  threshold: number,
  contextWindow: number,
  estimates: readonly CallEstimate[],
): ReplaySummary {
  const strategies: Record<string, number> = {};
  let largestPrompt: ReplaySummary['largestPrompt'];
  let largestSent: ReplaySummary['largestSent'];
  for (const c of calls) {
    if (c.compaction) strategies[c.compaction.strategy] = (strategies[c.compaction.strategy] ?? 0) + 1;
    const size = c.real ?? c.estimate;
    if (!largestPrompt || size > (largestPrompt.real ?? largestPrompt.estimate)) {
      largestPrompt = { call: c.call, estimate: c.estimate, ...(c.real !== undefined ? { real: c.real } : {}) };
    }
    if (!largestSent || c.sent > largestSent.tokens) largestSent = { call: c.call, tokens: c.sent };
  }
  const scored = calls.filter((c) => c.scored && c.error !== undefined);
  let estimateError: ReplaySummary['estimateError'];
  if (scored.length > 0) {
    const s = summarizeErrors(scored.map((c) => c.error as number));
    estimateError = { ...s };
    const under = scored.reduce((a, b) => ((b.error as number) < (a.error as number) ? b : a));
    const over = scored.reduce((a, b) => ((b.error as number) > (a.error as number) ? b : a));
    if ((under.error as number) < 0) estimateError.worstUnderCall = under.call;
    if ((over.error as number) > 0) estimateError.worstOverCall = over.call;
  }
  return {
    calls: calls.length,
    callsWithRealCount: calls.filter((c) => c.real !== undefined).length,
    rejectedCounts: calls.filter((c) => c.rejected !== undefined).length,
    compactions: calls.filter((c) => c.compaction).length,
    strategies,
    hostCompactions: transcript.hostCompactions.length,
    warnings: calls.filter((c) => c.fraction >= warnAt).length,
    overflows: calls.filter((c) => c.sent > threshold).length,
    overWindow: calls.filter((c) => c.sent > contextWindow).length,
    overflowCompactions: calls.filter((c) => c.compaction?.overflow).length,
    hiddenTokens: hiddenTokensOf(estimates),
    largestPrompt,
    largestSent,
    estimateError,
  };
}

// ---------------------------------------------------------------------------------------------
// Text output

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const pct = (x: number, digits = 2): string => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(digits)}%`;
const absPct = (x: number): string => `${(Math.abs(x) * 100).toFixed(2)}%`;

/** The per-call log: one line a call, plus one for each compaction. */
export function formatCalls(report: ReplayReport): string[] {
  const lines: string[] = [];
  // A loop, not Math.max(...calls): a spread of 100,000 arguments overflows the stack.
  const widest = report.calls.reduce((n, c) => Math.max(n, c.estimate, c.real ?? 0, c.sent), 1);
  const width = Math.max(int(widest).length, 'rejected'.length);
  const callWidth = String(report.calls.length).length;
  for (const c of report.calls) {
    if (c.hostCompaction) lines.push(`  -- the host compacted its own history here (${report.format}) --`);
    const real =
      c.rejected !== undefined
        ? `real ${'rejected'.padStart(width)}         `
        : c.real === undefined
          ? `real ${'-'.padStart(width)}         `
          : `real ${int(c.real).padStart(width)} ${pct(c.error as number).padStart(8)}`;
    const mark = c.real !== undefined && !c.scored ? '*' : ' ';
    const meter = `[ctx: ${Math.round(c.fraction * 100)}%]`;
    const sent = c.sent === c.estimate && !c.compaction ? '' : `  sent ${int(c.sent)}`;
    // The same figure the summary counts: the prompt the guard sent, against the window and threshold.
    const over =
      c.sent > report.contextWindow ? '  OVER THE WINDOW' : c.sent > report.threshold ? '  over the threshold' : '';
    lines.push(
      `call ${String(c.call).padStart(callWidth)}  est ${int(c.estimate).padStart(width)}  ${real}${mark} ${meter.padEnd(11)}${sent}${over}`.trimEnd(),
    );
    const k = c.compaction;
    if (k) {
      const detail = [
        k.summarizedMessages > 0 ? `${k.summarizedMessages} messages summarized` : '',
        k.prunedToolResults > 0 ? `${k.prunedToolResults} tool results pruned` : '',
        k.truncatedToolResults > 0 ? `${k.truncatedToolResults} truncated` : '',
        k.overflow ? 'OVERFLOW' : '',
      ].filter(Boolean);
      lines.push(
        `${' '.repeat(callWidth + 7)}COMPACTION (${k.reason}, ${k.strategy}${k.steps.length > 1 ? `; steps ${k.steps.join(' > ')}` : ''}): ` +
          `${int(k.tokensBefore)} -> ${int(k.tokensAfter)} tokens, ${k.messagesBefore} -> ${k.messagesAfter} messages` +
          (detail.length > 0 ? ` (${detail.join(', ')})` : ''),
      );
    }
  }
  return lines;
}

/** The summary block. */
export function formatSummary(report: ReplayReport): string[] {
  const s = report.summary;
  const source = { option: '--window', model: '--model', file: 'from the file', registry: "the file's model" }[
    report.windowSource
  ];
  const lines = [
    `${report.file}: ${report.format}, model ${report.modelId}`,
    `window ${int(report.contextWindow)} (${source}), threshold ${int(report.threshold)}, warning at ${Math.round(report.warnAt * 100)}%`,
    `calls: ${s.calls} (${s.callsWithRealCount} with a real count${s.rejectedCounts > 0 ? `; ${s.rejectedCounts} rejected` : ''})`,
  ];
  const strategies = Object.entries(s.strategies)
    .map(([k, v]) => `${k} x${v}`)
    .join(', ');
  lines.push(
    `compactions: ${s.compactions}${strategies ? ` (${strategies})` : ''}` +
      (s.hostCompactions > 0 ? `; the host itself compacted ${s.hostCompactions}x` : ''),
  );
  if (s.largestPrompt) {
    const p = s.largestPrompt;
    lines.push(
      `largest prompt: call ${p.call}, ${p.real !== undefined ? `${int(p.real)} real, ` : ''}${int(p.estimate)} estimated` +
        (s.largestSent ? `; largest sent by the guard: ${int(s.largestSent.tokens)} (call ${s.largestSent.call})` : ''),
    );
  }
  lines.push(
    `calls sent at or over the warning: ${s.warnings}; over the threshold: ${s.overflows}; over the window: ${s.overWindow}` +
      (s.overflowCompactions > 0
        ? `; compactions that could not get under the threshold (OVERFLOW): ${s.overflowCompactions}`
        : ''),
  );
  if (s.hiddenTokens >= Math.max(1_000, 0.05 * report.contextWindow)) {
    lines.push(
      `the file's real counts show about ${int(s.hiddenTokens)} tokens it does not contain (a system prompt and tool ` +
        `definitions the host keeps out of the transcript, ${Math.round((100 * s.hiddenTokens) / report.contextWindow)}% of the window): ` +
        'the guard counts them in every estimate',
    );
  }
  const f = s.fixedOverThreshold;
  if (f) {
    lines.push(
      `the fixed part of every prompt (${int(f.fixedTokens)} tokens, ${int(f.hiddenTokens)} of them not in the file) is over ` +
        `the threshold alone: no compaction can bring a prompt under it, so the guard held prompts under ${int(f.limit)} instead`,
    );
  }
  const e = s.estimateError;
  if (e) {
    lines.push(
      `estimate error (${e.n} scored calls): median |error| ${absPct(e.medianAbs)}, p95 ${absPct(e.p95Abs)}, ` +
        `worst under ${e.worstUnderCall ? `${pct(e.worstUnder)} (call ${e.worstUnderCall})` : 'none'}, ` +
        `worst over ${e.worstOverCall ? `${pct(e.worstOver)} (call ${e.worstOverCall})` : 'none'}`,
    );
    lines.push(
      '  (* not scored: the first call, or the first after a host compaction; the file lacks the system prompt and tools)',
    );
  } else {
    lines.push('estimate error: no real counts in this file');
  }
  if (report.issues.length > 0) lines.push(`malformed: ${report.issues.length} skipped (see the errors above)`);
  return lines;
}

/** One line per malformed line or entry. */
export function formatIssues(report: Pick<ReplayReport, 'file' | 'issues'>): string[] {
  return report.issues.map(
    (i) =>
      `error: ${report.file}${i.line !== undefined ? ` line ${i.line}` : ''}: ${i.message}; skipped, the rest replayed`,
  );
}
