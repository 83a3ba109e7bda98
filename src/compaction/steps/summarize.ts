// Step 2: everything before a cut point (never inside a tool-call unit) is summarized into one
// summary message, updating the previous summary instead of summarizing a summary; the
// summarizer's failures fall back to the mechanical digest. What stays verbatim: system messages,
// the first user request when small (keep-recent), the recent tail (keep-recent), and the latest
// request, which is never summarized: when the cut passes it, it is sent whole after the summary.
import type { GuardMessage } from '../../messages.ts';
import {
  extractFileOps,
  parseFileOpsFooter,
  renderFileOpsFooter,
  stripFileOpsFooter,
  type FileOps,
} from '../file-ops.ts';
import { renderView } from '../memo.ts';
import {
  continuationNote,
  isContinuation,
  isOwnMessage,
  rememberOwn,
  summaryBodyOf,
  summaryMessage,
} from '../placement.ts';
import { leadingSystemCount, unitsOf, type Unit } from '../structure.ts';
import { clipArchiveBatches } from '../clip-archive.ts';
import { collectInstructions, renderInstructions, splitInstructionsFooter, wordsBudget } from '../instructions.ts';
import type { CompactionStep } from '../contract.ts';
import type { Work } from '../work.ts';

/** Summarizes what is before the cut; the step it took, or undefined when there was nothing to summarize. */
export async function summarizeOlder(w: Work): Promise<void> {
  const cut = chooseCut(w);
  if (!cut) return;
  const gathered = gather(w, cut.from, cut.cut);
  if (gathered.toSummarize.length - gathered.contextOnly === 0) return;
  w.start();
  const step = await writeSummary(w, cut.cut, gathered);
  w.changed(step);
}

/**
 * The cut: keep-recent keeps the newest units within the tail budget (always the last one);
 * summarize-all keeps nothing. The tail gets what the target leaves once the fixed part (system
 * messages, tools, the kept head) and the summary are counted, at most keepRecentTokens; a manual
 * compaction keeps at most half of the conversation, so that it always has something to summarize.
 */
function chooseCut(w: Work): { from: number; cut: number } | undefined {
  const s = w.settings;
  const { messages } = w.cur.view;
  const from = Math.max(w.cur.view.headLength, w.memo.summary ? 0 : leadingSystemCount(messages));
  const units = unitsOf(messages, from);
  if (units.length === 0) return undefined;
  let cut = messages.length;
  if (s.retention === 'keep-recent') {
    let conversation = 0;
    for (let i = from; i < messages.length; i++) conversation += w.messageTokens(i);
    // The recent user messages carried over verbatim (gather) come out of the same room.
    let users = 0;
    for (let i = from; i < messages.length; i++) if (messages[i]?.role === 'user') users += w.messageTokens(i);
    const carry = Math.min(s.keepUserMessagesTokens, users);
    let budget = Math.min(
      s.keepRecentTokens,
      Math.max(0, s.target - (w.cur.tokens - conversation) - s.maxSummaryTokens - carry),
    );
    if (w.input.reason === 'manual') budget = Math.min(budget, conversation / 2);
    const unitTokens = (u: Unit) => {
      let t = 0;
      for (let i = u.start; i < u.end; i++) t += w.messageTokens(i);
      return t;
    };
    let k = units.length - 1;
    let acc = unitTokens(units[k] as Unit);
    while (k > 0 && acc + unitTokens(units[k - 1] as Unit) <= budget) acc += unitTokens(units[--k] as Unit);
    cut = (units[k] as Unit).start;
  }
  // The latest tool step stays verbatim when its results are protected (see Work.latest), in
  // summarize-all as well: the model has not seen them, and a summary is no way to read them.
  if (w.latest.protected) {
    const at = w.cur.view.origin.indexOf(w.latest.from);
    if (at >= from) cut = Math.min(cut, at);
  }
  return cut > from ? { from, cut } : undefined;
}

interface Gathered {
  /** Host indices kept verbatim before the summary. */
  keep: number[];
  toSummarize: GuardMessage[];
  summarizedTokens: number;
  /** Messages given to the summarizer for context that stay in the prompt (the latest request). */
  contextOnly: number;
  /** Those messages themselves: a mechanical digest leaves them out. */
  context: Set<GuardMessage>;
  previousSummary: string | undefined;
  previousFileOps: FileOps | undefined;
  /** The user's words kept under the previous summary. */
  previousInstructions: string[] | undefined;
  /** Where each message of `toSummarize` is in the host's history (the footer's losses name it). */
  indexOf: Map<GuardMessage, number>;
}

/** What the summary stands for, and what stays verbatim before it. */
function gather(w: Work, from: number, cut: number): Gathered {
  const { input, memo, settings: s, request } = w;
  const { origin } = w.cur.view;
  const firstUser = input.hostMessages.findIndex((m) => m?.role === 'user');
  const carryOver = s.retention === 'keep-recent' && s.keepUserMessagesTokens > 0;
  // User messages an earlier summary carried over are candidates again, older than the new ones.
  const carried = (o: number) =>
    carryOver && o !== firstUser && o !== request && input.hostMessages[o]?.role === 'user';
  const previousKeep = memo.summary ? memo.summary.keep : origin.slice(0, from).filter((o) => o >= 0);
  const candidates: Candidate[] = [];
  for (let i = 0; i < from; i++) {
    const o = origin[i] ?? -1;
    if (o >= 0 && previousKeep.includes(o) && carried(o))
      candidates.push({ o, tokens: w.messageTokens(i), message: input.hostMessages[o] as GuardMessage, at: -1 });
  }
  const g: Gathered = {
    keep: previousKeep.filter((o) => !carried(o)),
    toSummarize: [],
    summarizedTokens: 0,
    contextOnly: 0,
    context: new Set(),
    previousSummary: memo.summary?.text,
    previousFileOps: memo.summary?.fileOps,
    previousInstructions: memo.summary?.instructions,
    indexOf: new Map(),
  };
  const scope: Scope = { firstUser, carried, candidates, unedited: uneditedMessages(w) };
  // A request an earlier summary sent after itself is an old message once a newer one came: it is
  // summarized with the rest (first: it came before them).
  const earlierRequest = memo.summary?.request;
  if (earlierRequest !== undefined && earlierRequest !== request && input.hostMessages[earlierRequest]) {
    g.toSummarize.push(input.hostMessages[earlierRequest] as GuardMessage);
    g.indexOf.set(input.hostMessages[earlierRequest] as GuardMessage, earlierRequest);
  }
  for (let i = from; i < cut; i++) gatherMessage(w, g, i, scope);
  carryUserMessages(g, candidates, s.keepUserMessagesTokens);
  return g;
}

/** What {@link gather} knows while it goes through the messages before the cut. */
interface Scope {
  /** The host index of the conversation's first user message (-1: none). */
  firstUser: number;
  /** Whether host message `o` is a user message that may be carried over a summary. */
  carried: (o: number) => boolean;
  candidates: Candidate[];
  /** The prompt's messages without the tool edits and clips of earlier compactions. */
  unedited: readonly GuardMessage[];
}

/**
 * The summarizer reads the messages as the host wrote them, not the placeholders and truncations
 * of earlier prunes (its transcript clips each tool result on its own): what was pruned to save
 * context is still worth a line in the summary, errors above all.
 */
function uneditedMessages(w: Work): readonly GuardMessage[] {
  const { input, memo } = w;
  if (Object.keys(memo.tools).length + Object.keys(memo.clips).length === 0) return w.cur.view.messages;
  const unedited = { ...memo, tools: {}, clips: {} };
  return renderView(input.hostMessages, unedited, { summaryApplies: memo.summary !== undefined, hashOf: input.hashOf })
    .messages;
}

/** Message `i` of the prompt, before the cut: kept, folded into the previous summary, or summarized. */
function gatherMessage(w: Work, g: Gathered, i: number, scope: Scope): void {
  const { memo, settings: s, request } = w;
  const m = w.cur.view.messages[i] as GuardMessage;
  const o = w.cur.view.origin[i] ?? -1;
  if (m.role === 'system') {
    g.keep.push(o);
    return;
  }
  const found = isOwnMessage(m, memo.own) ? summaryBodyOf(m) : undefined;
  if (found !== undefined) {
    foldKeptSummary(g, found);
    return;
  }
  // A continuation the guard wrote stands for a request that is in the history anyway.
  if (isContinuation(m) && o !== request && isOwnMessage(m, memo.own)) return;
  if (
    s.retention === 'keep-recent' &&
    s.keepFirstUserMessage &&
    o === scope.firstUser &&
    w.messageTokens(i) <= Math.min(s.keepRecentTokens / 2, s.target / 10)
  ) {
    g.keep.push(o);
    return;
  }
  // The latest request is never replaced: it is sent whole after the summary. The summarizer
  // still reads it, so that the steps taken on it are summarized with it in view.
  if (o === request) {
    g.toSummarize.push(m);
    g.contextOnly++;
    g.context.add(m);
    return;
  }
  const message = scope.unedited[i] ?? m;
  if (scope.carried(o) && !isOwnMessage(m, memo.own))
    scope.candidates.push({ o, tokens: w.messageTokens(i), message, at: g.toSummarize.length });
  g.toSummarize.push(message);
  g.indexOf.set(message, o);
  g.summarizedTokens += w.messageTokens(i);
}

/**
 * A summary the host kept in its history (a stateful host that applied our compaction). Its
 * footers are taken off (the archive line, the file list, the user's instructions) and carried
 * as the stateless path carries them, so that a digest under it is folded, not nested.
 */
function foldKeptSummary(g: Gathered, found: string): void {
  const unarchived = stripArchiveFooter(found);
  const { body, notes } = splitInstructionsFooter(stripFileOpsFooter(unarchived));
  g.previousFileOps ??= parseFileOpsFooter(unarchived);
  if (notes) g.previousInstructions = [...(g.previousInstructions ?? []), ...notes];
  g.previousSummary = g.previousSummary === undefined ? body : `${g.previousSummary}\n\n${body}`;
}

/** A user message that may be carried over: `at` is its place in `toSummarize` (-1: carried before, not there). */
interface Candidate {
  o: number;
  tokens: number;
  message: GuardMessage;
  at: number;
}

/**
 * The most recent user messages stay verbatim within `budget`, in place of being summarized; older
 * ones are summarized (one carried over earlier, now too old, is summarized now) and archived.
 */
function carryUserMessages(g: Gathered, candidates: Candidate[], budget: number): void {
  if (candidates.length === 0) return;
  let left = budget;
  const kept = new Set<Candidate>();
  for (const c of [...candidates].sort((a, b) => b.o - a.o)) {
    if (c.tokens > left) continue;
    left -= c.tokens;
    kept.add(c);
    g.keep.push(c.o);
  }
  const skip = new Set([...kept].filter((c) => c.at >= 0).map((c) => c.at));
  const dropped = candidates.filter((c) => c.at < 0 && !kept.has(c));
  for (const c of kept) if (c.at >= 0) g.summarizedTokens -= c.tokens;
  for (const c of dropped) {
    g.summarizedTokens += c.tokens;
    g.indexOf.set(c.message, c.o);
  }
  g.toSummarize = [...dropped.map((c) => c.message), ...g.toSummarize.filter((_, k) => !skip.has(k))];
}

const ARCHIVE_FOOTER_RE =
  /\n*\[Archived: the [\d,]+ messages? this summary replaced are in archive batch "[^"\n]*", earlier ones in earlier batches\. The recall tool finds them by query or by that label\.\]\s*$/;

/** `summary` without the archive line {@link archiveFooter} wrote at its end. */
function stripArchiveFooter(summary: string): string {
  return summary.replace(ARCHIVE_FOOTER_RE, '');
}

/** The line under a summary that tells the model where the messages it replaced went. */
export function archiveFooter(label: string, count: number): string {
  return `[Archived: the ${count} message${count === 1 ? '' : 's'} this summary replaced are in archive batch "${label}", earlier ones in earlier batches. The recall tool finds them by query or by that label.]`;
}

/** Calls the summarizer (or its fallback) and records the summary in the memo. */
async function writeSummary(w: Work, cut: number, g: Gathered): Promise<CompactionStep> {
  const { input, settings: s, stats } = w;
  // The digest may fill most of the room the summarized messages leave under the target (the rest
  // is for the summary's framing); to keep the start of every user message it may grow further,
  // up to the threshold.
  const rest = w.cur.tokens - g.summarizedTokens;
  const clip = s.clipArchive ? clipArchiveBatches(w, g.previousSummary) : undefined;
  const under = footersOf(w, g, { archiveLine: !clip });
  // The footers and, in clip-archive mode, the batches shown beside this one's summary take room
  // the summary cannot have: budgeted here, they never push the prompt past what was planned.
  const taken = ((clip?.shownChars ?? 0) + under.footers.reduce((n, f) => n + f.length + 2, 0)) * input.tokensPerChar;
  const outcome = await input.summarize(
    g.toSummarize,
    clip ? undefined : g.previousSummary,
    0.75 * (s.target - rest) - 200 * input.tokensPerChar - taken,
    0.85 * (input.threshold - rest) - 200 * input.tokensPerChar - taken,
    g.context,
  );
  stats.extended = outcome.extended === true;
  const text = clip ? await clip.render(outcome.text.trim(), under.summarized) : outcome.text.trim();
  const footer = under.footers.filter((f) => f.length > 0).join('\n\n');
  const body = footer ? `${text}\n\n${footer}` : text;
  const covers = placeSummary(w, cut, g, { body, text, fileOps: under.fileOps, instructions: under.instructions });

  stats.summarized += g.toSummarize.length - g.contextOnly;
  // The latest turn was split when its request is before the cut: its first steps are in the summary.
  stats.splitTurn = s.retention === 'keep-recent' && w.request >= 0 && w.request < covers;
  stats.calls += outcome.calls;
  stats.inputTokens += outcome.inputTokens;
  stats.summaryTokens = Math.ceil(body.length * input.tokensPerChar);
  stats.summary = body;
  return outcome.mechanical ? 'mechanical' : 'summary';
}

/**
 * What goes under the summary, whoever writes it: the user's words, verbatim (the request stays in
 * the prompt; what does not fit is reported by message), the file list, and (`archiveLine`) where
 * the messages it replaced were archived.
 */
function footersOf(w: Work, g: Gathered, { archiveLine }: { archiveLine: boolean }) {
  const { input, memo, settings: s, request } = w;
  const latest = request >= 0 ? input.hostMessages[request] : undefined;
  const budget = wordsBudget(s.maxSummaryTokens, input.contextWindow, input.tokensPerChar);
  const words = collectInstructions(
    g.previousInstructions,
    g.toSummarize
      .filter((m) => m !== latest && !g.context.has(m))
      .map((message) => ({ message, index: g.indexOf.get(message) ?? -1 })),
    budget,
    input.redact,
  );
  const instructions = words.notes;
  if (words.lost.length > 0) input.onUserWordsLost(words.lost, budget);
  const extracted = s.fileOps ? extractFileOps(g.toSummarize, s.fileOps, g.previousFileOps) : undefined;
  // Paths are the conversation's words too: a clone URL may carry credentials. Those the memo
  // carries were redacted by an earlier compaction: only new ones are (the lists grow with every
  // file the agent touches; all of them again on every compaction was quadratic in a long run).
  const carried = new Set([...(memo.summary?.fileOps?.read ?? []), ...(memo.summary?.fileOps?.modified ?? [])]);
  const redactPath = (path: string): string => (carried.has(path) ? path : input.redact(path));
  const fileOps = extracted && { read: extracted.read.map(redactPath), modified: extracted.modified.map(redactPath) };
  const summarized = g.toSummarize.length - g.contextOnly;
  const footers = [
    renderInstructions(instructions),
    fileOps ? renderFileOpsFooter(fileOps) : '',
    input.archive && archiveLine ? archiveFooter(input.archive.label, summarized) : '',
  ];
  return { instructions, fileOps, footers, summarized };
}

/**
 * The host index the prompt's messages from `cut` on start at (`end`: none is the host's). The
 * message at the cut may be the guard's own: the call the pairing repair gives back to orphan
 * results that end the prompt (origin -1), which goes with the host's tool messages after it.
 */
function hostIndexAt(origin: readonly number[], cut: number, end: number): number {
  for (let i = cut; i < origin.length; i++) if ((origin[i] ?? -1) >= 0) return origin[i] as number;
  return end;
}

/**
 * Records the summary in the memo: what it covers, what stays verbatim before it, and the request
 * after it when the cut passed it. The host index the summary covers up to.
 */
function placeSummary(
  w: Work,
  cut: number,
  g: Gathered,
  summary: { body: string; text: string; fileOps: FileOps | undefined; instructions: string[] },
): number {
  const { input, memo, request } = w;
  const { origin } = w.cur.view;
  const { text, fileOps, instructions } = summary;
  // The request is still in place when it is kept or in the tail; otherwise it is sent right after
  // the summary, whole, with a note telling the model to go on with it.
  const tailStart = hostIndexAt(origin, cut, input.hostMessages.length);
  const requestKept = request < 0 || g.keep.includes(request) || request >= tailStart;
  const inserted: GuardMessage[] = [summaryMessage(summary.body)];
  const after = requestKept ? [] : [continuationNote()];
  memo.own = rememberOwn(memo.own, [...inserted, ...after]);
  const covers = tailStart;
  const systems = g.keep.filter((o) => input.hostMessages[o]?.role === 'system').sort((a, b) => a - b);
  const others = g.keep.filter((o) => input.hostMessages[o]?.role !== 'system').sort((a, b) => a - b);
  memo.summary = {
    covers: input.prefixOf(covers),
    keep: [...new Set([...systems, ...others])],
    messages: inserted,
    ...(requestKept ? {} : { request, after }),
    text,
    ...(fileOps ? { fileOps } : {}),
    ...(instructions.length > 0 ? { instructions } : {}),
  };
  return covers;
}
