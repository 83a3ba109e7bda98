// The compaction pipeline, cheapest step first, stopping as soon as the prompt is under target:
//   1. prune: truncate oversized tool results, then replace old ones (outside a protected recent
//      tail) by placeholders — only when that alone reaches the target, since otherwise those
//      outputs are better read by the summarizer than thrown away before it;
//   2. summarize everything before a cut point (never inside a tool-call unit) into one summary
//      message, updating the previous summary; the summarizer's failures fall back to a digest;
//   3. hard fit: shrink the largest tool outputs, then the largest messages, to the target;
//   4. when even that is over the threshold, the smallest prompt possible (system messages and the
//      latest request) and an `overflow` report. Never throws, never loops: each step runs once.
// Every step edits the memo (what to do to the host's history), and the prompt is re-rendered
// from it, so what this call sends is exactly what later calls will re-apply.
import type { CompactionSettings } from '../config.ts';
import type { GuardMessage } from '../messages.ts';
import type { PromptFingerprint } from '../state/session.ts';
import type { Entry } from '../tokens/prompt-measure.ts';
import { extractFileOps, parseFileOpsFooter, renderFileOpsFooter, stripFileOpsFooter } from './file-ops.ts';
import { mediaKey } from './media-placeholder.ts';
import { renderView, replaceMedia, requestEditsDropped, type CompactionMemo, type View } from './memo.ts';
import { continuationNote, isContinuation, isOwnMessage, rememberOwn, summaryBodyOf, summaryMessage } from './placement.ts';
import { isProtectedTool, outputChars, PLACEHOLDER, placeholderOutput, toolEditKey, toolResultsOf } from './prune.ts';
import { toolOutputText } from './text.ts';
import { mechanicalDigest } from './mechanical.ts';
import { leadingSystemCount, unitsOf, type Unit } from './structure.ts';
import type { SummarizeOutcome } from './summarize.ts';
import type { CompactionReason, CompactionResult, CompactionStep } from './types.ts';

/** A result is truncated only when it exceeds the cap by more than this (the marker costs ~40). */
const TRUNCATION_MARGIN_CHARS = 200;

/** Fewest characters hard fit leaves of a message or tool output: enough to say what it was. */
const MIN_KEPT_CHARS = 200;

export interface PipelineInput {
  sessionId: string;
  reason: CompactionReason;
  focus: string | undefined;
  /** The host's messages. */
  input: readonly GuardMessage[];
  /** Content hash of host message i. */
  hashOf: (index: number) => number;
  /** Fingerprint of the host's first n messages. */
  prefixOf: (n: number) => PromptFingerprint;
  memo: CompactionMemo;
  /** Whether `memo.summary` covers the start of `input`. */
  summaryApplies: boolean;
  settings: CompactionSettings;
  threshold: number;
  /** The model's window: the latest request is kept whole whenever it fits what is left of it. */
  contextWindow: number;
  /** Applied to everything the compaction writes that quotes the conversation (digests, continuations, file lists). */
  redact: (text: string) => string;
  tokensBefore: number;
  /** Measures a prompt (messages and tools) with the guard's heuristic. */
  measure: (messages: GuardMessage[]) => { chars: number; mediaTokens: number; entries: readonly Entry[] };
  /** The calibrated tokens of a measured prompt, as the calls after this compaction will estimate them. */
  price: (chars: number, mediaTokens: number) => number;
  /** Provider tokens per heuristic character (an upper bound of the marginal rate). */
  tokensPerChar: number;
  /**
   * `roomTokens`: what the summary may take under the target, the mechanical digest's bound;
   * `userRoomTokens`: what it may take under the threshold, only to keep the user's words.
   */
  summarize: (messages: GuardMessage[], previousSummary: string | undefined, roomTokens: number, userRoomTokens: number) => Promise<SummarizeOutcome>;
  /** Called once, before the first step that changes the prompt (not at all when none does). */
  onStart: () => void;
  /** Called when a mechanical digest could not keep the start of every message it stands for. */
  onDigestLoss: (lostMessages: number, lostUserMessages: number) => void;
}

export interface PipelineOutput {
  memo: CompactionMemo;
  view: View;
  tokens: number;
  /** Undefined when no step changed anything. */
  result: Omit<CompactionResult, 'durationMs'> | undefined;
}

interface Rendered {
  view: View;
  entries: readonly Entry[];
  tokens: number;
}

/**
 * The latest user message of the host's history that is a real request, not a summary the guard
 * wrote (`own`: the guard's own messages, see placement.ts; a user's text that merely looks like
 * one is a request).
 */
export function requestIndex(input: readonly GuardMessage[], own: readonly number[] | undefined): number {
  for (let i = input.length - 1; i >= 0; i--) {
    const m = input[i] as GuardMessage;
    if (m?.role === 'user' && !((summaryBodyOf(m) !== undefined || isContinuation(m)) && isOwnMessage(m, own))) return i;
  }
  return -1;
}

/**
 * Whether compaction has anything left to work on in this prompt: a message from the host's
 * history other than system messages and the latest request. When the prompt is over the
 * threshold with nothing of the kind (the smallest prompt was sent), compacting again cannot help
 * until the host adds something.
 */
export function hasCompactable(view: View, request: number): boolean {
  const { messages, origin } = view;
  // The kept head counts too: a request kept by the smallest prompt is an old message once a new one came.
  for (let i = 0; i < messages.length; i++) {
    const o = origin[i] ?? -1;
    if (o >= 0 && o !== request && messages[i]?.role !== 'system') return true;
  }
  return false;
}

/**
 * The largest cap such that cutting every size above it down to it saves at least `excess`
 * (never below `floor`): the fairest way to shrink many things by a total amount.
 */
function waterLevel(sizes: number[], excess: number, floor: number): number {
  const sorted = sizes.filter((s) => s > floor).sort((a, b) => b - a);
  let saved = 0;
  for (let k = 0; k < sorted.length; k++) {
    const next = k + 1 < sorted.length ? Math.max(floor, sorted[k + 1] as number) : floor;
    const gain = (k + 1) * ((sorted[k] as number) - next);
    if (saved + gain >= excess) return Math.max(floor, Math.floor((sorted[k] as number) - (excess - saved) / (k + 1)));
    saved += gain;
  }
  return floor;
}

export async function runPipeline(p: PipelineInput): Promise<PipelineOutput> {
  // When system messages and tool definitions alone take most of the room, the configured target
  // cannot be reached: aim halfway between them and the threshold instead, so that the next calls
  // still have room to grow before compacting again.
  const fixed = p.measure(p.input.filter((m) => m?.role === 'system'));
  const fixedTokens = p.price(fixed.chars, fixed.mediaTokens);
  const target = fixedTokens < p.threshold ? Math.max(p.settings.target, fixedTokens + (p.threshold - fixedTokens) / 2) : p.settings.target;
  const s = { ...p.settings, target };
  const memo: CompactionMemo = {
    ...p.memo,
    tools: { ...p.memo.tools },
    clips: { ...p.memo.clips },
    media: { ...p.memo.media },
    ...(p.summaryApplies && p.memo.summary ? { summary: p.memo.summary } : {}),
  };
  if (!p.summaryApplies) delete memo.summary;
  // The request's cut and media placeholders are decided again by this compaction (see lastResort).
  const request = requestIndex(p.input, p.memo.own);
  const relaxed = requestEditsDropped(memo, request);
  if (relaxed) {
    delete memo.requestClip;
    if (relaxed.media) memo.media = relaxed.media;
    else delete memo.media;
  }
  const manual = p.reason === 'manual';
  const steps: CompactionStep[] = [];
  let started = false;
  const start = () => {
    if (!started) p.onStart();
    started = true;
  };
  const step = (name: CompactionStep) => {
    start();
    if (steps[steps.length - 1] !== name) steps.push(name);
  };
  const stats: Stats = { pruned: 0, truncated: 0, summarized: 0, splitTurn: false, calls: 0, inputTokens: 0, summaryTokens: 0, summary: undefined, extended: false };

  const render = (): Rendered => {
    const view = renderView(p.input, memo, memo.summary !== undefined, p.hashOf);
    const measured = p.measure(view.messages);
    // A copy: the measurer reuses its arrays on the next measure, and the steps measure other prompts.
    // Whole tokens, as the guard reports them: a fraction over the threshold is over it.
    return { view, entries: measured.entries.slice(), tokens: Math.ceil(p.price(measured.chars, measured.mediaTokens)) };
  };
  let cur = render();
  const messagesBefore = cur.view.messages.length;
  // A digest that grew past the target to keep the user's words is not then cut back by hard fit:
  // from there the aim is the threshold.
  const under = () => cur.tokens <= (stats.extended ? p.threshold : s.target);
  const messageTokens = (i: number) => {
    const e = cur.entries[i];
    return e ? e.chars * p.tokensPerChar + e.mediaTokens : 0;
  };

  /** Tool results of the host's messages in the view, oldest first, with their key in the memo. */
  const toolResults = () =>
    cur.view.messages.flatMap((m, i) => {
      const o = cur.view.origin[i] ?? -1;
      return o >= 0 ? toolResultsOf(m).map((part) => ({ part, index: i, key: toolEditKey(o, part.toolCallId) })) : [];
    });

  // The irreducible part (system messages, tools, the text of the latest request: its images and
  // files can be named instead) over the threshold: no step can help, so straight to the smallest
  // prompt, the request cut only when it alone exceeds what is left of the window.
  const requestMessage = request >= 0 ? (p.input[request] as GuardMessage) : undefined;
  const irreducible = p.measure([
    ...p.input.filter((m) => m?.role === 'system'),
    ...(requestMessage ? [replaceMedia(requestMessage, () => true)] : []),
  ]);
  if (p.price(irreducible.chars, irreducible.mediaTokens) > p.threshold) return lastResort();

  // 1. Prune.
  if (s.prune) {
    const prune = s.prune;
    const maxChars = Math.max(MIN_KEPT_CHARS, Math.floor(prune.maxToolResultTokens / p.tokensPerChar));
    for (const { part, key } of toolResults()) {
      if (isProtectedTool(part.toolName, prune.neverPrune) || Object.hasOwn(memo.tools, key)) continue;
      // Truncating barely-over results would save less than the marker it adds.
      if (outputChars(part) > maxChars + TRUNCATION_MARGIN_CHARS) {
        memo.tools[key] = maxChars;
        stats.truncated++;
      }
    }
    if (stats.truncated > 0) {
      step('prune');
      cur = render();
    }

    if (!under() && !manual) {
      // The protected tail: the most recent messages within protectRecentTokens.
      let protectedFrom = cur.view.messages.length;
      for (let acc = 0; protectedFrom > cur.view.headLength; protectedFrom--) {
        acc += messageTokens(protectedFrom - 1);
        if (acc > prune.protectRecentTokens) break;
      }
      const candidates = toolResults().filter(
        // Errors are small and say what went wrong: they are kept for the summary.
        ({ part, index, key }) =>
          index < protectedFrom &&
          !isProtectedTool(part.toolName, prune.neverPrune) &&
          memo.tools[key] !== PLACEHOLDER &&
          !toolOutputText(part.output).isError,
      );
      const saving = (part: (typeof candidates)[number]['part']) =>
        Math.max(0, outputChars(part) - String((placeholderOutput(part) as { value: string }).value).length) * p.tokensPerChar;
      const need = cur.tokens - s.target;
      const total = candidates.reduce((n, c) => n + saving(c.part), 0);
      if (total >= need) {
        // Oldest first, until the target is reached: one batch, so the next calls do not prune again.
        let saved = 0;
        for (const { part, key } of candidates) {
          if (saved >= need) break;
          const gain = saving(part);
          if (gain <= 0) continue;
          memo.tools[key] = PLACEHOLDER;
          stats.pruned++;
          saved += gain;
        }
        step('prune');
        cur = render();
      }
    }
  }

  // 2. Summarize.
  if (manual || !under()) {
    const summarized = await summarizeStep({ ...p, settings: s, onStart: start }, memo, cur, messageTokens, stats, request);
    if (summarized) {
      step(summarized);
      cur = render();
    }
  }

  // 3. Hard fit, what matters least first: the largest tool outputs, then images and files (the
  //    oldest first), then assistant text, then the user's earlier messages, each down to the
  //    target. The latest request is never among them.
  if (!under()) hardFitToolOutputs();
  if (!under()) replaceMediaUntil(s.target, (o) => o !== request);
  if (!under()) clipMessagesOf((m) => m.role === 'assistant');
  if (!under()) clipMessagesOf((m, o) => m.role === 'user' && o !== request);

  // 4. Still over the threshold: the smallest prompt.
  if (cur.tokens > p.threshold) return lastResort();
  return finish(false);

  /**
   * The smallest prompt: the system messages and the latest request, nothing else (what else was
   * in the prompt is folded into the summary's text, kept for later calls). Then, only as far as
   * needed: the request's own images and files, oldest first; its text, only when it alone exceeds
   * what is left of the window.
   */
  function lastResort(): PipelineOutput {
    smallestPrompt(p, memo, cur, request);
    // What now stands for the older messages, though not sent: the digest the next summary builds on.
    if (memo.summary?.text) {
      stats.summary = memo.summary.text;
      stats.summaryTokens = Math.ceil(memo.summary.text.length * p.tokensPerChar);
    }
    step('hard-fit');
    cur = render();
    if (cur.tokens > p.threshold) replaceMediaUntil(p.threshold, (o) => o === request);
    // A request that had to be cut is an overflow too: the event tells the host it was not sent whole.
    const cut = cur.tokens > p.contextWindow && fitRequest();
    return finish(cut || cur.tokens > p.threshold);
  }

  /**
   * Cuts the request (head and tail kept, a marker saying how much was left out) until the prompt
   * is under the threshold. Characters are measured the way the guard prices them (exact counting
   * makes a character of emoji or CJK cost more than a letter), so the cut is re-measured and
   * tightened until it fits, a few rounds at most.
   */
  function fitRequest(): boolean {
    const viewIndex = cur.view.origin.indexOf(request);
    const message = cur.view.messages[viewIndex];
    if (request < 0 || viewIndex < 0 || !message) return false;
    let chars = textLength(p.input[request] as GuardMessage);
    for (let round = 0; round < 6 && cur.tokens > p.threshold && chars > MIN_KEPT_CHARS; round++) {
      const requestTokens = messageTokens(cur.view.origin.indexOf(request));
      const keepShare = requestTokens > 0 ? Math.max(0, (requestTokens - (cur.tokens - p.threshold)) / requestTokens) : 0;
      chars = Math.max(MIN_KEPT_CHARS, Math.floor(chars * keepShare * 0.95) - 100);
      memo.requestClip = { index: request, chars };
      cur = render();
    }
    return memo.requestClip?.index === request;
  }

  function hardFitToolOutputs(): void {
    const results = toolResults();
    const excess = (cur.tokens - s.target) / p.tokensPerChar;
    const level = waterLevel(results.map((r) => outputChars(r.part)), excess, MIN_KEPT_CHARS);
    let changed = false;
    for (const { part, key } of results) {
      if (outputChars(part) > level) {
        memo.tools[key] = level;
        changed = true;
      }
    }
    if (changed) {
      step('hard-fit');
      cur = render();
    }
  }

  /** Replaces images and files of the host's messages whose origin `which` accepts, oldest first, until `aim`. */
  function replaceMediaUntil(aim: number, which: (origin: number) => boolean): void {
    const media = memo.media ?? (memo.media = {});
    let changed = false;
    const { messages, origin } = cur.view;
    let excess = cur.tokens - aim;
    for (let i = 0; i < messages.length && excess > 0; i++) {
      const o = origin[i] ?? -1;
      const content = messages[i]?.content;
      if (o < 0 || !which(o) || !Array.isArray(content) || (messages[i]?.role !== 'user' && messages[i]?.role !== 'assistant')) continue;
      for (let j = 0; j < content.length && excess > 0; j++) {
        const part = content[j] as { type?: unknown } | undefined;
        if (part?.type !== 'image' && part?.type !== 'file') continue;
        const key = mediaKey(o, j);
        if (Object.hasOwn(media, key)) continue;
        media[key] = 1;
        changed = true;
        // What one part costs is what the message's media cost shared out: good enough to stop early.
        const mediaParts = content.filter((x) => (x as { type?: unknown })?.type === 'image' || (x as { type?: unknown })?.type === 'file').length;
        excess -= (cur.entries[i]?.mediaTokens ?? 0) / Math.max(1, mediaParts);
      }
    }
    if (changed) {
      step('hard-fit');
      cur = render();
      if (cur.tokens > aim) replaceMediaUntil(aim, which);
    }
  }

  /** Clips the text of the host's messages `which` accepts, largest first (water-filling), down to the target. */
  function clipMessagesOf(which: (message: GuardMessage, origin: number) => boolean): void {
    // A few rounds: a clipped message keeps a little more than its level (markers, its parts'
    // shares), and a round measured on the clipped prompt closes the gap.
    for (let round = 0; round < 3 && !under(); round++) {
      const candidates: Array<{ index: number; chars: number }> = [];
      cur.view.messages.forEach((m, i) => {
        const o = cur.view.origin[i] ?? -1;
        // Tool outputs were shrunk above; system messages are never changed.
        if (o < 0 || m.role === 'system' || m.role === 'tool' || !which(m, o)) return;
        candidates.push({ index: i, chars: cur.entries[i]?.chars ?? 0 });
      });
      const excess = (cur.tokens - s.target) / p.tokensPerChar;
      const level = waterLevel(candidates.map((c) => c.chars), excess, MIN_KEPT_CHARS);
      let changed = false;
      for (const c of candidates) {
        if (c.chars <= level) continue;
        const key = String(p.hashOf(cur.view.origin[c.index] as number));
        const next = Math.min(memo.clips[key] ?? Number.POSITIVE_INFINITY, level);
        if (next === memo.clips[key]) continue;
        memo.clips[key] = next;
        changed = true;
      }
      if (!changed) return;
      step('hard-fit');
      cur = render();
    }
  }

  /** The output; an overflow when even the smallest prompt is over the threshold. */
  function finish(overflow: boolean): PipelineOutput {
    if (steps.length === 0) return { memo: p.memo, view: cur.view, tokens: cur.tokens, result: undefined };
    memo.compactions = p.memo.compactions + 1;
    // Remembered so that later calls do not compact the same smallest prompt again (see hasCompactable).
    if (overflow) memo.overflowed = true;
    else delete memo.overflowed;
    if (memo.media && Object.keys(memo.media).length === 0) delete memo.media;
    return {
      memo,
      view: cur.view,
      tokens: cur.tokens,
      result: {
        reason: p.reason,
        strategy: steps[steps.length - 1] as CompactionStep,
        steps,
        tokensBefore: p.tokensBefore,
        tokensAfter: Math.ceil(cur.tokens),
        target: Math.floor(s.target),
        messagesBefore,
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
      },
    };
  }
}

interface Stats {
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
}

/**
 * Chooses the cut, summarizes what is before it and records the summary in the memo. Returns the
 * step it took, or undefined when there was nothing to summarize.
 */
async function summarizeStep(
  p: PipelineInput,
  memo: CompactionMemo,
  cur: Rendered,
  messageTokens: (i: number) => number,
  stats: Stats,
  request: number,
): Promise<CompactionStep | undefined> {
  const s = p.settings;
  const { messages, origin } = cur.view;
  const from = Math.max(cur.view.headLength, memo.summary ? 0 : leadingSystemCount(messages));
  const units = unitsOf(messages, from);
  if (units.length === 0) return undefined;

  // The cut: keep-recent keeps the newest units within the tail budget (always the last one);
  // summarize-all keeps nothing. A manual compaction keeps at most half of what is there.
  let cut = messages.length;
  if (s.retention === 'keep-recent') {
    // The tail gets what the target leaves once the fixed part (system messages, tools, the kept
    // head) and the summary are counted, at most keepRecentTokens; a manual compaction keeps at
    // most half of the conversation, so that it always has something to summarize.
    let conversation = 0;
    for (let i = from; i < messages.length; i++) conversation += messageTokens(i);
    let budget = Math.min(s.keepRecentTokens, Math.max(0, s.target - (cur.tokens - conversation) - s.maxSummaryTokens));
    if (p.reason === 'manual') budget = Math.min(budget, conversation / 2);
    const unitTokens = (u: Unit) => {
      let t = 0;
      for (let i = u.start; i < u.end; i++) t += messageTokens(i);
      return t;
    };
    let k = units.length - 1;
    let acc = unitTokens(units[k] as Unit);
    while (k > 0 && acc + unitTokens(units[k - 1] as Unit) <= budget) acc += unitTokens(units[--k] as Unit);
    cut = (units[k] as Unit).start;
  }
  if (cut <= from) return undefined;

  // What stays verbatim before the summary: system messages (never summarized) and, in
  // keep-recent, the conversation's first user request when it is small.
  const own = memo.own;
  const firstUser = p.input.findIndex((m) => m?.role === 'user');
  const keep = memo.summary ? [...memo.summary.keep] : origin.slice(0, from).filter((o) => o >= 0);
  const toSummarize: GuardMessage[] = [];
  let summarizedTokens = 0;
  let previousSummary = memo.summary?.text;
  let previousFileOps = memo.summary?.fileOps;
  // The summarizer reads the messages as the host wrote them, not the placeholders and truncations
  // of earlier prunes (its transcript clips each tool result on its own): what was pruned to save
  // context is still worth a line in the summary, errors above all.
  const unedited = Object.keys(memo.tools).length + Object.keys(memo.clips).length > 0
    ? renderView(p.input, { ...memo, tools: {}, clips: {} }, memo.summary !== undefined, p.hashOf).messages
    : messages;
  // A request an earlier summary sent after itself is an old message once a newer one came: it
  // is summarized with the rest (first: it came before them).
  const earlierRequest = memo.summary?.request;
  if (earlierRequest !== undefined && earlierRequest !== request && p.input[earlierRequest]) {
    toSummarize.push(p.input[earlierRequest] as GuardMessage);
  }
  for (let i = from; i < cut; i++) {
    const m = messages[i] as GuardMessage;
    const o = origin[i] ?? -1;
    if (m.role === 'system') {
      keep.push(o);
      continue;
    }
    const found = isOwnMessage(m, own) ? summaryBodyOf(m) : undefined;
    if (found !== undefined) {
      // Its file list is rebuilt from the tool calls, not carried as text.
      const body = stripFileOpsFooter(found);
      previousFileOps ??= parseFileOpsFooter(found);
      // A summary the host kept in its history (a stateful host that applied our compaction).
      previousSummary = previousSummary === undefined ? body : `${previousSummary}\n\n${body}`;
      continue;
    }
    // A continuation the guard wrote quotes a request that is in the history anyway.
    if (isContinuation(m) && o !== request && isOwnMessage(m, own)) continue;
    if (
      s.retention === 'keep-recent' &&
      s.keepFirstUserMessage &&
      o === firstUser &&
      messageTokens(i) <= Math.min(s.keepRecentTokens / 2, s.target / 10)
    ) {
      keep.push(o);
      continue;
    }
    // The latest request is never summarized: it is sent whole after the summary.
    if (o === request) continue;
    toSummarize.push(unedited[i] ?? m);
    summarizedTokens += messageTokens(i);
  }
  if (toSummarize.length === 0) return undefined;

  p.onStart();
  // The digest may fill most of the room the summarized messages leave under the target; the rest
  // is for the summary's framing and the continuation.
  // To keep the start of every user message, a digest may grow further, up to the threshold.
  const rest = cur.tokens - summarizedTokens;
  const outcome = await p.summarize(
    toSummarize,
    previousSummary,
    0.75 * (s.target - rest) - 200 * p.tokensPerChar,
    0.85 * (p.threshold - rest) - 200 * p.tokensPerChar,
  );
  stats.extended = outcome.extended === true;
  const extracted = s.fileOps ? extractFileOps(toSummarize, s.fileOps, previousFileOps) : undefined;
  // Paths are the conversation's words too: a clone URL may carry credentials.
  const fileOps = extracted && { read: extracted.read.map(p.redact), modified: extracted.modified.map(p.redact) };
  const footer = fileOps ? renderFileOpsFooter(fileOps) : '';
  const text = outcome.text.trim();
  const body = footer ? `${text}\n\n${footer}` : text;

  // The request is still in place when it is kept or in the tail; otherwise it is sent right after
  // the summary, whole, with a note telling the model to go on with it.
  const requestKept = request < 0 || keep.includes(request) || (cut < messages.length && request >= (origin[cut] ?? Infinity));
  const inserted: GuardMessage[] = [summaryMessage(body)];
  const after = requestKept ? [] : [continuationNote()];
  memo.own = rememberOwn(own, [...inserted, ...after]);
  const covers = cut < messages.length ? (origin[cut] as number) : p.input.length;
  const systems = keep.filter((o) => p.input[o]?.role === 'system').sort((a, b) => a - b);
  const others = keep.filter((o) => p.input[o]?.role !== 'system').sort((a, b) => a - b);
  memo.summary = {
    covers: p.prefixOf(covers),
    keep: [...new Set([...systems, ...others])],
    messages: inserted,
    ...(requestKept ? {} : { request, after }),
    text,
    ...(fileOps ? { fileOps } : {}),
  };

  stats.summarized += toSummarize.length;
  // The latest turn was split when its request is before the cut: its first steps are in the summary.
  stats.splitTurn = s.retention === 'keep-recent' && request >= 0 && request < covers;
  stats.calls += outcome.calls;
  stats.inputTokens += outcome.inputTokens;
  stats.summaryTokens = Math.ceil(body.length * p.tokensPerChar);
  stats.summary = body;
  return outcome.mechanical ? 'mechanical' : 'summary';
}

/** Characters of a message's text parts (what a clip works on). */
function textLength(message: GuardMessage): number {
  const content = message.content as unknown;
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) if (part?.type === 'text' && typeof part.text === 'string') n += part.text.length;
  return n;
}

/**
 * Replaces the memo's summary by the smallest prompt: the system messages and the latest request.
 * Every other message of the prompt (the kept head, the tail, an earlier request) leaves it, so it
 * is folded into the summary's text as a digest: not sent now, but the next summary builds on it.
 */
function smallestPrompt(p: PipelineInput, memo: CompactionMemo, cur: Rendered, request: number): void {
  const systems: number[] = [];
  p.input.forEach((m, i) => {
    if (m?.role === 'system') systems.push(i);
  });
  const leaving: GuardMessage[] = [];
  cur.view.messages.forEach((m, i) => {
    const o = cur.view.origin[i] ?? -1;
    // The host's own words, not the placeholders and cuts of this compaction.
    if (o >= 0 && o !== request && m.role !== 'system') leaving.push(p.input[o] as GuardMessage);
  });
  let text = memo.summary?.text ?? '';
  if (leaving.length > 0) {
    const maxChars = Math.floor(p.settings.maxSummaryTokens / p.tokensPerChar);
    const digest = mechanicalDigest(leaving, { ...(text ? { previousSummary: text } : {}), maxChars });
    text = p.redact(digest.text);
    p.onDigestLoss(digest.lostMessages, digest.lostUserMessages);
  }
  memo.summary = {
    covers: p.prefixOf(p.input.length),
    keep: request >= 0 ? [...systems, request] : systems,
    messages: [],
    text,
    ...(memo.summary?.fileOps ? { fileOps: memo.summary.fileOps } : {}),
  };
}
