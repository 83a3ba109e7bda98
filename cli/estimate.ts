// The estimation pass of a replay, shared by `context-guard replay` and bench/accuracy.ts so that
// both report the same estimate error for the same file by construction.
//
// Every model call of a transcript goes through the guard as the host sent it: beforeModel on the
// messages, then afterModel with the provider's real count (when the file has one). The window is
// far above every prompt, so this measures estimation, not compaction. Next to the guard's estimate,
// a second guard with exact counting off gives the plain chars/4 heuristic of the same prompt.
import { type ContextGuardOptions, createContextGuard, type EstimateEvent } from '../src/index.ts';
import { GrowingPrompt, type Transcript } from './transcripts/types.ts';

export interface CallEstimate {
  /** index of the call in its transcript */
  index: number;
  /** the guard's calibrated estimate of the prompt the host sent */
  estimate: number;
  /** plain chars/4 (plus media) of the same prompt, before calibration */
  heuristic: number;
  /** the provider's real count, when the file has one that a provider could have reported */
  real?: number;
  /**
   * a count the file has that no provider reports (not finite, negative, or above
   * {@link MAX_PLAUSIBLE_TOKENS}), as the file wrote it: not scored, not fed to the guard
   */
  rejected?: string;
  /** (estimate − real) / real, when the call has a real count */
  error?: number;
  /** whether the call is scored (has a real count, and is not a first call or the first after a compaction) */
  scored: boolean;
}

/** No model's window comes near this: a larger count in a file is an error in the file, not a prompt. */
export const MAX_PLAUSIBLE_TOKENS = 100_000_000;

/** Whether `n` is a prompt size a provider could have reported. */
export const isPlausibleCount = (n: number): boolean => Number.isFinite(n) && n > 0 && n <= MAX_PLAUSIBLE_TOKENS;

export interface EstimateOptions {
  exactCounting?: ContextGuardOptions['exactCounting'];
  /** called after each call (progress) */
  onCall?: (index: number) => void;
  /** hands each call its prompt (one that counts what it copies, in a test) */
  prompts?: GrowingPrompt;
}

/** Replays `transcript` through the guard for its estimates; one entry per call, in order. */
export async function estimateCalls(transcript: Transcript, options: EstimateOptions = {}): Promise<CallEstimate[]> {
  let lastEstimate: EstimateEvent | undefined;
  // Far above every prompt: this measures estimation, not compaction.
  const guard = createContextGuard({ contextWindow: 100_000_000, exactCounting: options.exactCounting ?? 'auto' });
  // The baselines are computed from plain chars/4, whatever the guard's exact counting does.
  const plain = createContextGuard({
    contextWindow: 100_000_000,
    exactCounting: 'off',
    onEvent: (e) => {
      if (e.type === 'estimate') lastEstimate = e;
    },
  });
  const out: CallEstimate[] = [];
  const prompts = options.prompts ?? new GrowingPrompt();
  for (const [index, call] of transcript.calls.entries()) {
    // The last call's array grown by what this call added (the parser's calls share one history).
    const messages = prompts.of(call);
    const r = await guard.beforeModel({
      sessionId: transcript.file,
      modelId: transcript.modelId,
      messages,
      tools: call.tools,
    });
    lastEstimate = undefined;
    await plain.beforeModel({ sessionId: transcript.file, messages, tools: call.tools });
    const heuristic = lastEstimate === undefined ? Number.NaN : (lastEstimate as EstimateEvent).heuristicTokens;
    const real = call.inputTokens;
    const entry: CallEstimate = { index, estimate: r.tokens, heuristic, scored: false };
    if (real !== undefined && real !== 0 && !isPlausibleCount(real)) entry.rejected = String(real);
    else if (real !== undefined && real > 0) {
      entry.real = real;
      entry.error = (r.tokens - real) / real;
      entry.scored = !call.skip;
      const output = call.outputTokens;
      const usage = {
        inputTokens: real,
        ...(output !== undefined && isPlausibleCount(output) ? { outputTokens: output } : {}),
      };
      await guard.afterModel({ sessionId: transcript.file, usage });
    }
    out.push(entry);
    options.onCall?.(index);
  }
  return out;
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

export interface ErrorSummary {
  n: number;
  medianAbs: number;
  p95Abs: number;
  worstUnder: number;
  worstOver: number;
}

/** Median and p95 of |error|, and the worst under- and overcount (0 when none), of relative errors. */
export function summarizeErrors(errors: number[]): ErrorSummary {
  const abs = errors.map(Math.abs).sort((a, b) => a - b);
  return {
    n: errors.length,
    medianAbs: quantile(abs, 0.5),
    p95Abs: quantile(abs, 0.95),
    // Loops, not Math.min(...errors): a spread of 100,000 arguments overflows the stack.
    worstUnder: errors.reduce((a, b) => Math.min(a, b), 0),
    worstOver: errors.reduce((a, b) => Math.max(a, b), 0),
  };
}
