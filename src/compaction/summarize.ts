// Running the summarizer: its input cut into chunks that fit 80% of its window (each chunk folds
// into the summary so far, so nothing is silently dropped), a timeout that aborts the call, the
// checks on what it returns, and the mechanical digest for whatever it could not summarize. A
// circuit breaker stops calling a summarizer that keeps failing. Never throws: a summary is
// always produced.
import type { SummarizerFailedEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import { mechanicalSummary } from './mechanical.ts';
import { clipMessage } from './memo.ts';
import { applyToolEdits, outputChars, toolResultsOf } from './prune.ts';
import { unitsOf } from './structure.ts';
import { buildSummaryRequest, DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS, renderTranscript } from './prompt.ts';
import { clipMiddle } from './text.ts';
import { redactMessage } from './redact.ts';
import type { Summarizer } from './types.ts';

/** Share of the summarizer's window its input may fill; the rest is for its answer. */
export const SUMMARIZER_INPUT_SHARE = 0.8;
/** The budget told to the model, below the one enforced, since models overshoot a little. */
const STATED_BUDGET_SHARE = 0.8;

export type SummarizerFailure = SummarizerFailedEvent['reason'];

/** Fewest transcript characters worth a summarizer call. */
const MIN_CHUNK_CHARS = 400;

/** Skips the summarizer for `cooldownMs` after `failures` consecutive failures (per guard). */
export class CircuitBreaker {
  private consecutive = 0;
  private openUntil = 0;
  private readonly failures: number;
  private readonly cooldownMs: number;

  constructor(failures: number, cooldownMs: number) {
    this.failures = failures;
    this.cooldownMs = cooldownMs;
  }

  get consecutiveFailures(): number {
    return this.consecutive;
  }

  /** Whether a call may be attempted now; after the cooldown one trial call is let through. */
  allows(now: number): boolean {
    return this.consecutive < this.failures || now >= this.openUntil;
  }

  success(): void {
    this.consecutive = 0;
    this.openUntil = 0;
  }

  failure(now: number): void {
    this.consecutive++;
    if (this.consecutive >= this.failures) this.openUntil = now + this.cooldownMs;
  }
}

export interface SummarizeRequest {
  sessionId: string;
  messages: GuardMessage[];
  previousSummary: string | undefined;
  focus: string | undefined;
  maxSummaryTokens: number;
  summarizerContextWindow: number;
  timeoutMs: number;
  /** Provider tokens per character of plain text (calibrated), to size prompts and answers. */
  tokensPerChar: number;
  summarizer: Summarizer | undefined;
  /**
   * Room under the compaction target for the summary. The mechanical digest may use it: the more
   * message lines it keeps, the less history a failed summarizer costs.
   */
  roomTokens?: number;
  /** Applied to everything sent to the summarizer and to the summary it returns. */
  redact?: (text: string) => string;
  /** The model call's own signal: when it fires, the summarizer is aborted and not counted as failing. */
  signal?: AbortSignal;
  breaker: CircuitBreaker;
  onFailure: (reason: SummarizerFailure, consecutiveFailures: number, error?: unknown) => void;
}

export interface SummarizeOutcome {
  /** The summary body (no file list). */
  text: string;
  /** Whether any part of it is the mechanical digest. */
  mechanical: boolean;
  calls: number;
  inputTokens: number;
}

class Failure extends Error {
  readonly reason: SummarizerFailure;
  readonly detail: unknown;
  constructor(reason: SummarizerFailure, detail?: unknown) {
    super(reason);
    this.reason = reason;
    this.detail = detail;
  }
}

function textOfAnswer(answer: unknown): string | undefined {
  if (typeof answer === 'string') return answer;
  if (typeof answer === 'object' && answer !== null && typeof (answer as { text?: unknown }).text === 'string') return (answer as { text: string }).text;
  return undefined;
}

/** Calls the summarizer once, with a timeout that aborts it; throws a Failure when the answer is unusable. */
async function callOnce(
  summarizer: Summarizer,
  input: Omit<Parameters<Summarizer>[0], 'signal'>,
  timeoutMs: number,
  maxChars: number,
  outer: AbortSignal | undefined,
): Promise<string> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`summarizer timed out after ${timeoutMs} ms`));
      reject(new Failure('timeout'));
    }, timeoutMs);
    // A pending summary must not keep a process alive on its own.
    (timer as { unref?: () => void }).unref?.();
    if (outer) {
      onAbort = () => {
        controller.abort(outer.reason);
        reject(new Failure('aborted'));
      };
      if (outer.aborted) onAbort();
      else outer.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    const answer = await Promise.race([Promise.resolve().then(() => summarizer({ ...input, signal: controller.signal })), timeout]);
    const text = textOfAnswer(answer)?.trim();
    if (!text) throw new Failure('empty');
    if (text.length > maxChars) throw new Failure('too-large', `${text.length} characters, budget ${Math.floor(maxChars)}`);
    return text;
  } catch (error) {
    throw error instanceof Failure ? error : new Failure('error', error);
  } finally {
    clearTimeout(timer);
    if (outer && onAbort) outer.removeEventListener('abort', onAbort);
  }
}

/** The message with each tool result cut to `maxChars` (what the summarizer receives). */
function clipToolOutputs(message: GuardMessage, maxChars: number): GuardMessage {
  const results = toolResultsOf(message);
  if (results.length === 0 || results.every((p) => outputChars(p) <= maxChars)) return message;
  const edits: Record<string, number> = {};
  for (const p of results) if (outputChars(p) > maxChars) edits[p.toolCallId] = maxChars;
  return applyToolEdits(message, edits);
}

/**
 * Cuts messages into chunks whose rendered transcript fits `budgetChars`. A tool call and its
 * results stay in one chunk when they fit one (the summarizer should see what a call returned);
 * a single message too big for a chunk is clipped.
 */
function chunk(messages: GuardMessage[], budgetChars: number): GuardMessage[][] {
  const options = { maxToolResultChars: DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS };
  const sized = messages.map((original) => {
    let message = clipToolOutputs(original, options.maxToolResultChars);
    let size = renderTranscript([message], options).length;
    if (size > budgetChars) {
      // One message larger than a chunk (a long paste, many parallel results): its text and each
      // of its tool results get a share of the chunk.
      const results = toolResultsOf(message).length;
      if (results > 0) message = clipToolOutputs(message, Math.max(100, Math.floor((budgetChars - 200) / results) - 150));
      message = clipMessage(message, Math.max(200, budgetChars - 200));
      size = renderTranscript([message], options).length;
    }
    return { message, size };
  });

  const chunks: GuardMessage[][] = [];
  let current: GuardMessage[] = [];
  let used = 0;
  for (const unit of unitsOf(messages, 0)) {
    const items = sized.slice(unit.start, unit.end);
    const unitSize = items.reduce((n, x) => n + x.size, 0);
    // A unit that fits a chunk of its own starts one rather than being split across two.
    const whole = unitSize <= budgetChars;
    for (const { message, size } of items) {
      const needed = whole && message === items[0]?.message ? unitSize : size;
      if (used + needed > budgetChars && current.length > 0) {
        chunks.push(current);
        current = [];
        used = 0;
      }
      current.push(message);
      used += size;
    }
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Summarizes `messages` on top of `previousSummary`: the summarizer chunk by chunk, and the
 * mechanical digest from the first chunk it fails on (the summary so far is kept, so no history is
 * lost). `override` (from a beforeCompact hook) replaces the summarizer.
 */
export async function summarize(req: SummarizeRequest, override?: string): Promise<SummarizeOutcome> {
  const redact = req.redact;
  if (!redact) return summarizeRaw(req, override);
  // Redacted on the way in (the summarizer never sees a secret) and on the way out (a summary
  // written from a hook or by a model that was given one anyway is masked before it is stored).
  const outcome = await summarizeRaw(
    {
      ...req,
      // Tool outputs are clipped first: the summarizer sees 2,000 characters of each anyway, and
      // scanning megabytes of output for secrets would stall the call.
      messages: req.messages.map((m) => redactMessage(clipToolOutputs(m, DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS), redact)),
      ...(req.previousSummary !== undefined ? { previousSummary: redact(req.previousSummary) } : {}),
    },
    override,
  );
  return { ...outcome, text: redact(outcome.text) };
}

async function summarizeRaw(req: SummarizeRequest, override?: string): Promise<SummarizeOutcome> {
  const maxChars = req.maxSummaryTokens / req.tokensPerChar;
  if (override !== undefined) return { text: override, mechanical: false, calls: 0, inputTokens: 0 };
  let running = req.previousSummary;
  let calls = 0;
  let inputTokens = 0;
  /** Reports why the summarizer was not (or no longer) used; `rest` goes to the digest on top of the summary so far. */
  const fallBack = (reason: SummarizerFailure, rest: GuardMessage[], error?: unknown): SummarizeOutcome => {
    req.onFailure(reason, req.breaker.consecutiveFailures, error);
    return { text: fallbackDigest(rest, running, maxChars, req), mechanical: true, calls, inputTokens };
  };
  const summarizer = req.summarizer;
  if (!summarizer) return fallBack('missing', req.messages);

  // Room for the transcript: the input budget less the instructions and the running summary.
  // The summary is reserved a quarter of the budget (more if it already is longer), not its whole
  // maximum, which with a small summarizer window would leave tiny chunks; if it grows past the
  // reservation, the remaining messages are cut again.
  const overhead = buildSummaryRequest([], { previousSummary: running, focus: req.focus, maxSummaryTokens: req.maxSummaryTokens }).system.length;
  const inputChars = (req.summarizerContextWindow * SUMMARIZER_INPUT_SHARE) / req.tokensPerChar;
  const budgetFor = (summaryChars: number) => inputChars - overhead - Math.max(summaryChars, Math.min(maxChars, inputChars / 4)) - 500;
  let budgetChars = budgetFor(running?.length ?? 0);
  // The instructions and the summary so far already fill the summarizer's window (a tiny window
  // at a high token ratio): calling it would overflow it.
  if (budgetChars < MIN_CHUNK_CHARS) return fallBack('no-room', req.messages);
  let chunks = chunk(req.messages, budgetChars);
  const stated = Math.max(64, Math.floor(req.maxSummaryTokens * STATED_BUDGET_SHARE));
  for (let i = 0; i < chunks.length; i++) {
    const rest = () => chunks.slice(i).flat();
    if (req.signal?.aborted) return fallBack('aborted', rest());
    const budget = budgetFor(running?.length ?? 0);
    if (budget < budgetChars) {
      if (budget < MIN_CHUNK_CHARS) return fallBack('no-room', rest());
      budgetChars = budget;
      chunks = [...chunks.slice(0, i), ...chunk(rest(), budgetChars)];
    }
    if (!req.breaker.allows(Date.now())) return fallBack('circuit-open', rest());
    const messages = chunks[i] as GuardMessage[];
    const request = buildSummaryRequest(messages, { previousSummary: running, focus: req.focus, maxSummaryTokens: stated });
    calls++;
    inputTokens += Math.ceil((request.system.length + request.prompt.length) * req.tokensPerChar);
    try {
      running = await callOnce(
        summarizer,
        {
          messages,
          previousSummary: running,
          instructions: request.system,
          prompt: request.prompt,
          focus: req.focus,
          sessionId: req.sessionId,
          maxSummaryTokens: req.maxSummaryTokens,
        },
        req.timeoutMs,
        maxChars,
        req.signal,
      );
      req.breaker.success();
    } catch (error) {
      const f = error instanceof Failure ? error : new Failure('error', error);
      // The caller gave up: that says nothing about the summarizer's health.
      if (f.reason !== 'aborted') req.breaker.failure(Date.now());
      return fallBack(f.reason, rest(), f.detail);
    }
  }
  return { text: running ?? '', mechanical: false, calls, inputTokens };
}

/**
 * The mechanical digest of `messages` after `previous`, bounded: the previous summary (clipped to
 * the summary budget if a chain of fallbacks grew it) plus the most recent message lines, within
 * the room under the target (at least 1.5 × the summary budget), so that repeated failures cannot
 * make the summary outgrow the prompt. Lines that do not fit are counted in the digest.
 */
function fallbackDigest(messages: GuardMessage[], previous: string | undefined, maxChars: number, req: SummarizeRequest): string {
  const previousSummary = previous !== undefined && previous.length > maxChars ? clipMiddle(previous, maxChars) : previous;
  const room = req.roomTokens !== undefined && req.roomTokens > 0 ? req.roomTokens / req.tokensPerChar : 0;
  if (process.env.DBG) console.log("fallbackDigest", { n: messages.length, prev: previous?.length, maxChars, roomTokens: req.roomTokens, tpc: req.tokensPerChar, room });
  return mechanicalSummary(messages, { previousSummary, maxChars: Math.floor(Math.max(maxChars * 1.5, room)) });
}
