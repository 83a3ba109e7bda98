// Running the summarizer: its input (summarizer-input.ts) cut into chunks that fit 80% of its window
// (each chunk folds into the summary so far, so nothing is silently dropped), a timeout that aborts
// the call, the checks on what it returns, and the mechanical digest for whatever it could not
// summarize. The guard's circuit breaker (circuit-breaker.ts) stops calling a summarizer that keeps
// failing. Never throws: a summary is always produced.
import type { SummarizerFailedEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { DEFAULT_MECHANICAL_CHARS_PER_MESSAGE, mechanicalDigest, userStartsChars } from './mechanical.ts';
import { buildSummaryRequest, WORDS_PER_TOKEN } from './prompt.ts';
import {
  boundTranscript,
  chunk,
  type Originals,
  redactedMessages,
  SUMMARIZER_READ_FACTOR,
} from './summarizer-input.ts';
import type { Summarizer } from './contract.ts';

/** Share of the summarizer's window its input may fill; the rest is for its answer. */
const SUMMARIZER_INPUT_SHARE = 0.8;
/** The budget told to the model, below the one enforced, since models overshoot a little. */
const STATED_BUDGET_SHARE = 0.8;
/**
 * Characters of a word with its space in a summary (English prose and Markdown run 5.5 to 6): the
 * words the model is told must fit the characters its answer is held to, or a model that obeys the
 * instruction to the word is rejected as too large (at the default correction, 240 words were
 * stated against 1,066 characters).
 */
const CHARS_PER_WORD = 6;

export type SummarizerFailure = SummarizerFailedEvent['reason'];

/** Fewest transcript characters worth a summarizer call. */
const MIN_CHUNK_CHARS = 400;

/** The longest delay a timer holds (about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface SummarizeRequest {
  sessionId: string;
  messages: GuardMessage[];
  previousSummary: string | undefined;
  focus: string | undefined;
  maxSummaryTokens: number;
  summarizerContextWindow: number;
  timeoutMs: number;
  /**
   * When the whole compaction must be done (epoch milliseconds): each call's timeout is cut to the
   * time left, and what is not summarized by then is folded into the mechanical digest (reason
   * `deadline`, which is not held against the summarizer by the circuit breaker).
   */
  deadline?: number;
  /** Provider tokens per character of plain text (calibrated), to size prompts and answers. */
  tokensPerChar: number;
  /**
   * Tokens per character as the session's calibration prices them, for reporting what the
   * summarizer was sent (`tokensPerChar` may be raised to the default correction, to bound its input safely).
   */
  reportTokensPerChar?: number;
  summarizer: Summarizer | undefined;
  /**
   * Room under the compaction target for the summary. The mechanical digest may use it: the more
   * message lines it keeps, the less history a failed summarizer costs.
   */
  roomTokens?: number;
  /**
   * Room under the threshold (more than `roomTokens`) the mechanical digest may grow into, only
   * when that keeps the start of user messages it would otherwise lose: the user's words are worth
   * a compaction that comes a little sooner.
   */
  userRoomTokens?: number;
  /** The most transcript the summarizer reads, in tokens (default 4 × maxSummaryTokens). */
  readTokens?: number;
  /**
   * Messages of `messages` the summarizer reads for context that stay in the prompt whole (the
   * latest request): the mechanical digest leaves them out.
   */
  contextOnly?: ReadonlySet<GuardMessage>;
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
  /**
   * Messages the mechanical digest could name only by count (0 when none, or no digest): see the `digest-loss` event.
   */
  lostMessages: number;
  /** Of those, user messages. */
  lostUserMessages: number;
  /** Whether the digest grew into `userRoomTokens` to keep user messages (the prompt may then sit above the target). */
  extended?: boolean;
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
  if (typeof answer === 'object' && answer !== null && typeof (answer as { text?: unknown }).text === 'string')
    return (answer as { text: string }).text;
  return undefined;
}

/**
 * Calls the summarizer once, with a timeout that aborts it (reported as `reason`: a timeout, or the
 * compaction's deadline when that came first); throws a Failure when the answer is unusable.
 */
async function callOnce(
  summarizer: Summarizer,
  input: Omit<Parameters<Summarizer>[0], 'signal'>,
  limit: { ms: number; reason: 'timeout' | 'deadline' },
  maxChars: number,
  outer: AbortSignal | undefined,
): Promise<string> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // Not unref'd: a host whose only pending work is this call (a script, a serverless handler)
    // must wait for it to settle, or beforeModel never returns. The timer is cleared as soon as the
    // call settles, so it keeps no process alive past the timeout.
    timer = setTimeout(
      () => {
        const why =
          limit.reason === 'deadline'
            ? 'the compaction reached its deadline'
            : `summarizer timed out after ${limit.ms} ms`;
        controller.abort(new Error(why));
        reject(new Failure(limit.reason));
      },
      Math.min(limit.ms, MAX_TIMER_MS),
    );
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
    const answer = await Promise.race([
      Promise.resolve().then(() => summarizer({ ...input, signal: controller.signal })),
      timeout,
    ]);
    const text = textOfAnswer(answer)?.trim();
    if (!text) throw new Failure('empty');
    if (text.length > maxChars)
      throw new Failure('too-large', `${text.length} characters, budget ${Math.floor(maxChars)}`);
    return text;
  } catch (error) {
    throw error instanceof Failure ? error : new Failure('error', error);
  } finally {
    clearTimeout(timer);
    if (outer && onAbort) outer.removeEventListener('abort', onAbort);
  }
}

/**
 * Summarizes `messages` on top of `previousSummary`: the summarizer chunk by chunk, and the
 * mechanical digest from the first chunk it fails on (the summary so far is kept, so no history is
 * lost). `override` (from a beforeCompact hook) replaces the summarizer.
 */
export async function runSummarizer(req: SummarizeRequest, override?: string): Promise<SummarizeOutcome> {
  const redact = req.redact;
  if (!redact) return summarizeRaw(req, override);
  // Redacted on the way in (the summarizer never sees a secret) and on the way out (a summary
  // written from a hook or by a model that was given one anyway is masked before it is stored).
  // Tool outputs are clipped first: the summarizer sees 2,000 characters of each anyway, and
  // scanning megabytes of output for secrets would stall the call.
  const messages = redactedMessages(req.messages, redact);
  const contextOnly = req.contextOnly;
  const outcome = await summarizeRaw(
    {
      ...req,
      messages,
      ...(contextOnly
        ? { contextOnly: new Set(messages.filter((_, i) => contextOnly.has(req.messages[i] as GuardMessage))) }
        : {}),
      ...(req.previousSummary !== undefined ? { previousSummary: redact(req.previousSummary) } : {}),
    },
    override,
  );
  return { ...outcome, text: redact(outcome.text) };
}

async function summarizeRaw(req: SummarizeRequest, override?: string): Promise<SummarizeOutcome> {
  if (override !== undefined)
    return { text: override, mechanical: false, calls: 0, inputTokens: 0, lostMessages: 0, lostUserMessages: 0 };
  const summarizer = req.summarizer;
  if (!summarizer)
    return fallBack(
      req,
      { running: req.previousSummary, calls: 0, inputTokens: 0, originals: new WeakMap() },
      'missing',
      req.messages,
    );
  const run = new SummaryRun(req);
  let budgetChars = run.budgetFor(run.running?.length ?? 0);
  // The instructions and the summary so far already fill the summarizer's window (a tiny window
  // at a high token ratio): calling it would overflow it.
  if (budgetChars < MIN_CHUNK_CHARS) return fallBack(req, run, 'no-room', req.messages);
  const readChars = (req.readTokens ?? SUMMARIZER_READ_FACTOR * req.maxSummaryTokens) / req.tokensPerChar;
  let chunks = chunk(boundTranscript(req.messages, readChars, run.originals), budgetChars, run.originals);
  for (let i = 0; i < chunks.length; i++) {
    const rest = () => chunks.slice(i).flat();
    if (req.signal?.aborted) return fallBack(req, run, 'aborted', rest());
    const left = run.deadline - Date.now();
    if (left <= 0) return fallBack(req, run, 'deadline', rest());
    const budget = run.budgetFor(run.running?.length ?? 0);
    if (budget < budgetChars) {
      if (budget < MIN_CHUNK_CHARS) return fallBack(req, run, 'no-room', rest());
      budgetChars = budget;
      chunks = [...chunks.slice(0, i), ...chunk(rest(), budgetChars, run.originals)];
    }
    if (!req.breaker.allows(Date.now())) return fallBack(req, run, 'circuit-open', rest());
    const failure = await run.summarizeChunk(summarizer, chunks[i] as GuardMessage[], left);
    if (failure) return fallBack(req, run, failure.reason, rest(), failure.detail);
  }
  const { running, calls, inputTokens } = run;
  return { text: running ?? '', mechanical: false, calls, inputTokens, lostMessages: 0, lostUserMessages: 0 };
}

/** The summary so far, what the summarizer calls made for it cost, and the originals of the clipped messages it read. */
interface Progress {
  running: string | undefined;
  calls: number;
  inputTokens: number;
  originals: Originals;
}

/** One summarization, chunk by chunk: its budgets, and the summary each call folds the next chunk into. */
class SummaryRun implements Progress {
  running: string | undefined;
  calls = 0;
  inputTokens = 0;
  readonly originals: Originals = new WeakMap();
  readonly deadline: number;
  private readonly req: SummarizeRequest;
  /** The instructions' characters, and the summarizer's input in characters. */
  private readonly overhead: number;
  private readonly inputChars: number;
  /** The length, in tokens, the summarizer is told: below the bound it is held to (see STATED_BUDGET_SHARE). */
  private readonly stated: number;

  constructor(req: SummarizeRequest) {
    this.req = req;
    this.running = req.previousSummary;
    this.deadline = req.deadline !== undefined && Number.isFinite(req.deadline) ? req.deadline : Infinity;
    this.overhead = buildSummaryRequest([], {
      previousSummary: this.running,
      focus: req.focus,
      maxSummaryTokens: req.maxSummaryTokens,
    }).system.length;
    this.inputChars = (req.summarizerContextWindow * SUMMARIZER_INPUT_SHARE) / req.tokensPerChar;
    const maxChars = maxSummaryChars(req);
    const statedByChars = (maxChars * STATED_BUDGET_SHARE) / (CHARS_PER_WORD * WORDS_PER_TOKEN);
    this.stated = Math.max(64, Math.floor(Math.min(req.maxSummaryTokens * STATED_BUDGET_SHARE, statedByChars)));
  }

  /**
   * Room for the transcript: the input budget less the instructions and the running summary. The
   * summary is reserved a quarter of the budget (more if it already is longer), not its whole
   * maximum, which with a small summarizer window would leave tiny chunks; if it grows past the
   * reservation, the remaining messages are cut again.
   */
  budgetFor(summaryChars: number): number {
    const { inputChars } = this;
    return (
      inputChars - this.overhead - Math.max(summaryChars, Math.min(maxSummaryChars(this.req), inputChars / 4)) - 500
    );
  }

  /** Folds one chunk into the summary so far; the failure, if the summarizer's answer was unusable. */
  async summarizeChunk(summarizer: Summarizer, messages: GuardMessage[], left: number): Promise<Failure | undefined> {
    const { req } = this;
    const request = buildSummaryRequest(messages, {
      previousSummary: this.running,
      focus: req.focus,
      maxSummaryTokens: this.stated,
    });
    this.calls++;
    this.inputTokens += Math.ceil(
      (request.system.length + request.prompt.length) * (req.reportTokensPerChar ?? req.tokensPerChar),
    );
    try {
      this.running = await callOnce(
        summarizer,
        {
          messages,
          previousSummary: this.running,
          instructions: request.system,
          prompt: request.prompt,
          focus: req.focus,
          sessionId: req.sessionId,
          maxSummaryTokens: req.maxSummaryTokens,
        },
        left < req.timeoutMs ? { ms: left, reason: 'deadline' } : { ms: req.timeoutMs, reason: 'timeout' },
        maxSummaryChars(req),
        req.signal,
      );
      req.breaker.success();
      return undefined;
    } catch (error) {
      const f = error instanceof Failure ? error : new Failure('error', error);
      // The caller gave up, or the compaction ran out of time: that says nothing about the summarizer's health.
      if (f.reason !== 'aborted' && f.reason !== 'deadline') req.breaker.failure(Date.now());
      return f;
    }
  }
}

/** The most characters a summary may have. */
function maxSummaryChars(req: SummarizeRequest): number {
  return req.maxSummaryTokens / req.tokensPerChar;
}

/**
 * Reports why the summarizer was not (or no longer) used, and folds `rest` into the mechanical
 * digest on top of the summary so far.
 */
function fallBack(
  req: SummarizeRequest,
  progress: Progress,
  reason: SummarizerFailure,
  rest: GuardMessage[],
  error?: unknown,
): SummarizeOutcome {
  req.onFailure(reason, req.breaker.consecutiveFailures, error);
  const contextOnly = req.contextOnly;
  const originals = rest.map((m) => progress.originals.get(m) ?? m).filter((m) => !contextOnly?.has(m));
  const { running, calls, inputTokens } = progress;
  return { ...fallbackDigest(originals, running, maxSummaryChars(req), req), mechanical: true, calls, inputTokens };
}

/**
 * Share of the summary budget the mechanical digest may always take, even when nothing is left
 * under the target (its header and count lines, and a few lines more).
 */
const DIGEST_MIN_SHARE = 0.5;
/** Share of the summary budget the user's words may take in a digest when no room under the threshold is given. */
const USER_ROOM_SHARE = 1.5;

/**
 * The mechanical digest of `messages` after `previous`, bounded by the room under the target (at
 * least half the summary budget), so that repeated failures cannot make the summary outgrow the
 * prompt. Within that bound the digest decides what gives way: tool output first, the previous
 * summary's middle only when it and the user messages' starts do not fit together, the oldest user
 * messages last, counted. When the user messages this compaction replaces would lose their start,
 * the digest may grow by what those starts take (up to the room under the threshold): the lines
 * of earlier digests give way first, oldest first (their messages are archived), so that the
 * digest does not grow with every compaction of a long session until it fills the window.
 */
function fallbackDigest(
  messages: GuardMessage[],
  previous: string | undefined,
  maxChars: number,
  req: SummarizeRequest,
) {
  const room = req.roomTokens !== undefined && req.roomTokens > 0 ? req.roomTokens / req.tokensPerChar : 0;
  const bound = Math.floor(Math.max(maxChars * DIGEST_MIN_SHARE, room));
  const options = previous !== undefined ? { previousSummary: previous } : {};
  const digest = mechanicalDigest(messages, { ...options, maxChars: bound });
  // Without the room under the threshold (a direct call), the user's words may take 1.5 × the summary budget.
  const userRoom =
    req.userRoomTokens !== undefined && req.userRoomTokens > 0
      ? Math.floor(req.userRoomTokens / req.tokensPerChar)
      : Math.floor(maxChars * USER_ROOM_SHARE);
  if (digest.lostUserMessages === 0 || userRoom <= bound) return { ...digest, extended: false };
  // Losing user messages: the digest may grow by what the new ones take at a digest's usual length.
  const grown = Math.min(userRoom, bound + userStartsChars(messages, DEFAULT_MECHANICAL_CHARS_PER_MESSAGE));
  const wider = mechanicalDigest(messages, { ...options, maxChars: grown });
  if (wider.lostNewUserMessages === 0 || grown >= userRoom) return { ...wider, extended: true };
  // Still losing the start of a user message this compaction replaces (a long previous summary
  // takes the room): then those may take the room up to the threshold, as the user's words come
  // before a compaction that comes a little sooner.
  return { ...mechanicalDigest(messages, { ...options, maxChars: userRoom }), extended: true };
}
