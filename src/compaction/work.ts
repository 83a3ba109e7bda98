// A compaction in progress: the memo being edited, the prompt it renders, the statistics, and the
// helpers every step shares. Each step (steps/*.ts) edits the memo (what to do to the host's
// history) and re-renders the prompt from it, so what this call sends is exactly what later calls
// will re-apply.
import type { LostWords } from './instructions.ts';
import type { ArchiveBatch } from '../archive/types.ts';
import type { CompactionSettings } from './policy.ts';
import type { GuardMessage } from '../messages.ts';
import type { PromptFingerprint } from '../tokens/fingerprint.ts';
import type { Entry } from '../tokens/prompt-measure.ts';
import { renderView, requestEditsDropped, type CompactionMemo, type View } from './memo.ts';
import { toolEditKey, toolResultsOf } from './tool-edits.ts';
import { requestIndex } from './request.ts';
import type { SummarizeOutcome } from './summarizer.ts';
import type { CompactionReason, CompactionResult, CompactionStep } from './contract.ts';

/** When the fixed part (system messages, tools) is this much of the target, the target is out of reach. */
const FIXED_SHARE_OF_TARGET = 0.8;

/** Fewest characters hard fit leaves of a message or tool output: enough to say what it was. */
export const MIN_KEPT_CHARS = 200;

export interface PipelineInput {
  sessionId: string;
  reason: CompactionReason;
  focus: string | undefined;
  /** The host's messages. */
  hostMessages: readonly GuardMessage[];
  /** Content hash of host message i. */
  hashOf: (index: number) => number;
  /** Fingerprint of the host's first n messages. */
  prefixOf: (n: number) => PromptFingerprint;
  memo: CompactionMemo;
  /** Whether `memo.summary` covers the start of `hostMessages`. */
  summaryApplies: boolean;
  settings: CompactionSettings;
  threshold: number;
  /** The model's window: the latest request is kept whole whenever it fits what is left of it. */
  contextWindow: number;
  /** Applied to everything the compaction writes that quotes the conversation (digests, continuations, file lists). */
  redact: (text: string) => string;
  /**
   * The archive batch this compaction writes (undefined: the archive is off): placeholders and the
   * summary then say how to recall what they replace.
   */
  archive: { label: string; start: string; end: string } | undefined;
  tokensBefore: number;
  /** Measures a prompt (messages and tools) with the guard's heuristic. */
  measure: (messages: GuardMessage[]) => PromptSize & { entries: readonly Entry[] };
  /** The host's system messages with the tools, measured once per call (the fixed part of every prompt). */
  measureSystem: () => { chars: number; mediaTokens: number };
  /** The calibrated tokens of a measured prompt, as the calls after this compaction will estimate them. */
  price: (chars: number, mediaTokens: number) => number;
  /** Provider tokens per heuristic character (an upper bound of the marginal rate). */
  tokensPerChar: number;
  /**
   * `roomTokens`: what the summary may take under the target, the mechanical digest's bound;
   * `userRoomTokens`: what it may take under the threshold, only to keep the user's words.
   * `contextOnly`: messages given to the summarizer for context that stay in the prompt whole (the
   * latest request): a mechanical digest leaves them out, or the user's words would be sent twice.
   */
  summarize: (
    messages: GuardMessage[],
    previousSummary: string | undefined,
    roomTokens: number,
    userRoomTokens: number,
    contextOnly?: ReadonlySet<GuardMessage>,
  ) => Promise<SummarizeOutcome>;
  /** Called once, before the first step that changes the prompt (not at all when none does). */
  onStart: () => void;
  /** Called when a mechanical digest could not keep the start of every message it stands for. */
  onDigestLoss: (lostMessages: number, lostUserMessages: number) => void;
  /** Called when sentences the user wrote did not fit the footer under the summary (`budget` characters), or left the prompt. */
  onUserWordsLost: (lost: readonly LostWords[], budget: number) => void;
}

/** What a prompt measures to (with the tools): what the call records of the prompt it sends. */
export interface PromptSize {
  chars: number;
  mediaTokens: number;
  toolChars: number;
  /** The messages' fingerprint (tools excluded). */
  prompt: PromptFingerprint;
}

export interface PipelineOutput {
  memo: CompactionMemo;
  view: View;
  tokens: number;
  /** The view's measure, from its rendering: the prompt the compaction produced is not measured again. */
  measured: Rendered['measured'];
  /** Undefined when no step changed anything. */
  result: Omit<CompactionResult, 'durationMs' | 'cacheBrokenTokens'> | undefined;
  /** Archive batches the compaction wrote itself: clip-archive batch summaries merged into a deeper one. */
  batches: ArchiveBatch[];
}

/** A rendered prompt: the view, its measure per message, its calibrated tokens. */
export interface Rendered {
  view: View;
  entries: readonly Entry[];
  tokens: number;
  /** Its measure, with the entries copied. */
  measured: PromptSize & { entries: readonly Entry[] };
}

export interface Stats {
  pruned: number;
  truncated: number;
  summarized: number;
  splitTurn: boolean;
  calls: number;
  inputTokens: number;
  summaryTokens: number;
  summary: string | undefined;
  /** The mechanical digest took room up to the threshold to keep user messages. */
  extended: boolean;
  /** Archive batches written by the compaction itself (see PipelineOutput). */
  batches: ArchiveBatch[];
}

export class Work {
  /** What the compaction was given: the host's messages, the memo, the settings, how to measure and price. */
  readonly input: PipelineInput;
  readonly memo: CompactionMemo;
  /** The settings with the target of this compaction (see the constructor). */
  readonly settings: CompactionSettings;
  /** The latest request's index in the host's history (-1: none). */
  readonly request: number;
  /**
   * The latest tool results: the host's tool messages after its last assistant message (the model
   * asked for them and has not seen them yet). `protected`: they fit under the threshold with the
   * system messages and the latest request, so no step may cut, replace or summarize them (see
   * {@link latestToolResults}).
   */
  readonly latest: LatestResults;
  readonly steps: CompactionStep[] = [];
  readonly stats: Stats = {
    pruned: 0,
    truncated: 0,
    summarized: 0,
    splitTurn: false,
    calls: 0,
    inputTokens: 0,
    summaryTokens: 0,
    summary: undefined,
    extended: false,
    batches: [],
  };
  cur: Rendered;
  private started = false;
  private readonly messagesBefore: number;

  constructor(input: PipelineInput) {
    this.input = input;
    this.settings = { ...input.settings, target: reachableTarget(input) };
    const memo = workingMemo(input);
    // The request's cut and media placeholders are decided again by this compaction (see steps/last-resort.ts).
    this.request = requestIndex(input.hostMessages, input.memo.own);
    const relaxed = requestEditsDropped(memo, this.request);
    if (relaxed) {
      delete memo.requestClip;
      if (relaxed.media) memo.media = relaxed.media;
      else delete memo.media;
    }
    this.memo = memo;
    this.latest = latestToolResults(input, this.request);
    this.cur = this.render();
    this.messagesBefore = this.cur.view.messages.length;
  }

  /** Whether host message `origin` holds latest tool results that no step may touch. */
  protects(origin: number): boolean {
    return this.latest.protected && this.latest.messages.has(origin);
  }

  /** The prompt the memo makes of the host's messages, measured and priced in whole tokens. */
  render(): Rendered {
    const view = renderView(this.input.hostMessages, this.memo, {
      summaryApplies: this.memo.summary !== undefined,
      hashOf: this.input.hashOf,
    });
    const { chars, mediaTokens, toolChars, prompt, entries } = this.input.measure(view.messages);
    // A copy: the measurer reuses its arrays on the next measure, and the steps measure other prompts.
    const copied = entries.slice();
    return {
      view,
      entries: copied,
      tokens: Math.ceil(this.input.price(chars, mediaTokens)),
      measured: { chars, mediaTokens, toolChars, prompt, entries: copied },
    };
  }

  /** Reports the start once, before the first step that changes the prompt. */
  start(): void {
    if (!this.started) this.input.onStart();
    this.started = true;
  }

  /** A step changed the memo: it is recorded, and the prompt rendered again. */
  changed(name: CompactionStep): void {
    this.start();
    if (this.steps[this.steps.length - 1] !== name) this.steps.push(name);
    this.cur = this.render();
  }

  /**
   * Whether the prompt reached its aim: the target, or the threshold once a digest grew past the
   * target to keep the user's words (hard fit does not then cut it back).
   */
  under(): boolean {
    return this.cur.tokens <= (this.stats.extended ? this.input.threshold : this.settings.target);
  }

  /** Provider tokens of the rendered prompt's message i. */
  messageTokens(i: number): number {
    const e = this.cur.entries[i];
    return e ? e.chars * this.input.tokensPerChar + e.mediaTokens : 0;
  }

  /** Tool results of the host's messages in the prompt, oldest first, with their key in the memo. */
  toolResults() {
    return this.cur.view.messages.flatMap((m, i) => {
      const o = this.cur.view.origin[i] ?? -1;
      return o >= 0
        ? toolResultsOf(m).map((part) => ({ part, index: i, origin: o, key: toolEditKey(o, part.toolCallId) }))
        : [];
    });
  }

  /** The output; an overflow when even the smallest prompt is over the threshold (or the request had to be cut). */
  finish(overflow: boolean): PipelineOutput {
    const { input, memo, cur, stats, steps } = this;
    if (steps.length === 0)
      return {
        memo: input.memo,
        view: cur.view,
        tokens: cur.tokens,
        measured: cur.measured,
        result: undefined,
        batches: [],
      };
    memo.compactions = input.memo.compactions + 1;
    // Remembered so that later calls do not compact the same smallest prompt again (see hasCompactable).
    if (overflow) memo.overflowed = true;
    else delete memo.overflowed;
    if (memo.media && Object.keys(memo.media).length === 0) delete memo.media;
    const result: Omit<CompactionResult, 'durationMs' | 'cacheBrokenTokens'> = {
      reason: input.reason,
      strategy: steps[steps.length - 1] as CompactionStep,
      steps,
      tokensBefore: input.tokensBefore,
      tokensAfter: Math.ceil(cur.tokens),
      target: Math.floor(this.settings.target),
      messagesBefore: this.messagesBefore,
      messagesAfter: cur.view.messages.length,
      ...(stats.summary !== undefined ? { summary: stats.summary } : {}),
      summarizedMessages: stats.summarized,
      splitTurn: stats.splitTurn,
      prunedToolResults: stats.pruned,
      truncatedToolResults: stats.truncated,
      summarizerCalls: stats.calls,
      summarizerInputTokens: stats.inputTokens,
      summaryTokens: stats.summaryTokens,
      overflow,
    };
    return { memo, view: cur.view, tokens: cur.tokens, measured: cur.measured, result, batches: stats.batches };
  }
}

/**
 * The target of this compaction. When system messages and tool definitions alone take most of the
 * room, the configured target cannot be reached: aim halfway between them and the threshold
 * instead, so that the next calls still have room to grow before compacting again.
 */
function reachableTarget(input: PipelineInput): number {
  const { settings, threshold } = input;
  const fixed = input.measureSystem();
  const fixedTokens = input.price(fixed.chars, fixed.mediaTokens);
  // Only then: below, the target holds, however low it is set (or paced, see compactionSettings).
  return fixedTokens < threshold && fixedTokens >= FIXED_SHARE_OF_TARGET * settings.target
    ? Math.max(settings.target, fixedTokens + (threshold - fixedTokens) / 2)
    : settings.target;
}

/** A copy of the memo the steps may edit: without a summary that no longer applies, naming the archive when it is on. */
function workingMemo(input: PipelineInput): CompactionMemo {
  const memo: CompactionMemo = {
    ...input.memo,
    tools: { ...input.memo.tools },
    clips: { ...input.memo.clips },
    media: { ...input.memo.media },
  };
  if (!input.summaryApplies) {
    delete memo.summary;
    delete memo.batches;
  }
  // Placeholders and cuts made from now on name the archived original.
  if (input.archive) memo.recall = true;
  return memo;
}

/**
 * Where a cut made to fit aims: just under the threshold. The margin (2% of it, at most 1,000
 * tokens) absorbs what an estimate of a cut misses (its markers, whole-token rounding): a prompt a
 * token over the threshold would be sent as the smallest prompt instead.
 */
export function fitAim(threshold: number): number {
  return threshold - Math.min(FIT_MARGIN * threshold, FIT_MARGIN_MAX);
}
const FIT_MARGIN = 0.02;
const FIT_MARGIN_MAX = 1_000;

export interface LatestResults {
  /** The host index of the last assistant message (-1: none): where the latest tool step starts. */
  from: number;
  /** Host indices of the tool messages after it. */
  messages: Set<number>;
  /** They fit with the system messages and the request, so they are sent whole. */
  protected: boolean;
}

/**
 * The latest tool results and whether they are protected: the smallest prompt that holds them (the
 * system messages, the latest request with its media named, and everything from the last assistant
 * message on) is under the threshold. Then a cost target (the target, its pace, the tool result
 * cap, the recent tail) never cuts them: what the model asked for and has not seen yet reaches it
 * whole, and only the threshold could justify a cut.
 */
function latestToolResults(input: PipelineInput, request: number): LatestResults {
  const host = input.hostMessages;
  let from = host.length - 1;
  while (from >= 0 && host[from]?.role !== 'assistant') from--;
  const messages = new Set<number>();
  if (from < 0) return { from, messages, protected: false };
  for (let i = from + 1; i < host.length; i++) if (host[i]?.role === 'tool') messages.add(i);
  if (messages.size === 0) return { from, messages, protected: false };
  // The request with its images and files: they are the user's, and go after tool output.
  const smallest: GuardMessage[] = [];
  host.forEach((m, i) => {
    if ((i < from && m?.role === 'system') || i === request || i >= from) smallest.push(m);
  });
  const measured = input.measure(smallest);
  return {
    from,
    messages,
    protected: Math.ceil(input.price(measured.chars, measured.mediaTokens)) <= fitAim(input.threshold),
  };
}
