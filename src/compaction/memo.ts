// What a compaction leaves behind, and how it is re-applied. A stateless host (the AI SDK) sends
// its whole history on every call; the memo turns that history into the same compacted prompt
// each time without calling the summarizer again: the covered prefix becomes the stored summary
// messages (byte-identical, so provider prompt caches keep working), and tool outputs and
// messages shrunk earlier are shrunk the same way again. Plain JSON, so any store can keep it.
import type { GuardMessage } from '../messages.ts';
import type { PromptFingerprint } from '../tokens/fingerprint.ts';
import type { FileOps } from './file-ops.ts';
import { mediaKey, mediaPlaceholder } from './media-placeholder.ts';
import { applyToolEditsAt, type ToolEdit } from './tool-edits.ts';
import { repairToolPairing, type RepairResult } from './structure.ts';
import { clipMiddle, safeJson } from './text.ts';

export interface SummaryMemo {
  /** The host's messages [0, covers.messages) that the summary replaces. */
  covers: PromptFingerprint;
  /**
   * Indices (in the host's history) of covered messages kept verbatim before the summary: system messages, the first
   * user request.
   */
  keep: number[];
  /** The summary message, exactly as sent. */
  messages: GuardMessage[];
  /**
   * The latest request, when the summary covers it (a split turn, `summarize-all`, a manual
   * compaction): sent verbatim right after the summary, never quoted or cut by the summary, then `after`.
   */
  request?: number;
  /** The continuation note sent after the request, exactly as sent. */
  after?: GuardMessage[];
  /** The summary text without its file list: the previous summary of the next update. */
  text: string;
  fileOps?: FileOps;
  /** The user's instruction sentences kept verbatim under the summary (see instructions.ts). */
  instructions?: string[];
}

/** A clip-archive summary batch: one compaction's summary (depth 0), or several merged (depth + 1). */
export interface SummaryBatch {
  label: string;
  depth: number;
  /** Messages it stands for. */
  count: number;
  text: string;
}

export interface CompactionMemo {
  summary?: SummaryMemo;
  /** Tool outputs edited, by host message index and tool call id (see `toolEditKey`). */
  tools: Record<string, ToolEdit>;
  /** Other messages shrunk to fit (hard fit), by content hash: characters kept. */
  clips: Record<string, number>;
  /** Images and files replaced by a placeholder, by host message index and part index (see `mediaKey`). */
  media?: Record<string, 1>;
  /**
   * Text hashes of the summary and continuation messages the guard wrote (the most recent ones).
   * Only these are treated as the guard's own: a user may well start a message with `[Continue]`.
   */
  own?: number[];
  /** Compactions run in this session. */
  compactions: number;
  /** Tool placeholders and cuts name the archived original (its tool-call id) for recall. */
  recall?: true;
  /** The end of the session's last archive batch (ISO): where the next one starts. */
  archivedUntil?: string;
  /** Clip-archive mode: the summary batches, oldest first (the prompt shows the first and last ones). */
  batches?: SummaryBatch[];
  /** The last compaction could not bring the prompt under the threshold (the `overflow` event). */
  overflowed?: boolean;
  /**
   * The latest request cut to fit, when it alone exceeded the window: host index and characters
   * kept. Apart from `clips` because it is checked again on every call: once the calibration says
   * the request fits whole after all, the cut is dropped.
   */
  requestClip?: { index: number; chars: number };
  /**
   * The compaction that left the latest request cut or without its media: its index, the length of
   * the history and the real counts recorded then. Until one of them changes, no call compacts
   * again just to try sending the request whole.
   */
  requestDecided?: { request: number; messages: number; usage: number };
}

export function emptyMemo(): CompactionMemo {
  return { tools: {}, clips: {}, compactions: 0 };
}

/**
 * The memo without its edits of host message `request`: its cut and, unless `keepMedia`, its media
 * placeholders. Undefined when there were none to drop.
 */
export function requestEditsDropped(
  memo: CompactionMemo,
  request: number,
  keepMedia = false,
): CompactionMemo | undefined {
  if (request < 0) return undefined;
  const prefix = `${request}:`;
  const mediaKeys = memo.media && !keepMedia ? Object.keys(memo.media).filter((k) => k.startsWith(prefix)) : [];
  const cut = memo.requestClip?.index === request;
  if (!cut && mediaKeys.length === 0) return undefined;
  const { requestClip, media, ...rest } = memo;
  const next: CompactionMemo = { ...rest };
  if (requestClip && !cut) next.requestClip = requestClip;
  if (media) {
    const kept = Object.fromEntries(Object.entries(media).filter(([k]) => !mediaKeys.includes(k)));
    if (Object.keys(kept).length > 0) next.media = kept;
  }
  return next;
}

/** Characters of the marker `clipMiddle` inserts, with its line breaks. */
const CLIP_MARKER_CHARS = 40;

/** The message with the media parts `replace(partIndex)` names replaced by placeholders. */
export function replaceMedia(message: GuardMessage, replace: (partIndex: number) => boolean): GuardMessage {
  const content = message.content as unknown;
  if (!Array.isArray(content) || (message.role !== 'user' && message.role !== 'assistant')) return message;
  let changed = false;
  const parts = content.map((p, j) => {
    if ((p?.type !== 'image' && p?.type !== 'file') || !replace(j)) return p;
    changed = true;
    return mediaPlaceholder(p);
  });
  return changed ? ({ ...message, content: parts } as GuardMessage) : message;
}

/** A message with its text cut to about `maxChars` (head and tail kept); media parts are named instead of sent. */
export function clipMessage(message: GuardMessage, maxChars: number): GuardMessage {
  const content = message.content as unknown;
  // A text only a little over the bound is left whole: the clip marker would cost more than it saves.
  const clip = (text: string, max: number) => (text.length > max + CLIP_MARKER_CHARS ? clipMiddle(text, max) : text);
  if (typeof content === 'string') return { ...message, content: clip(content, maxChars) } as GuardMessage;
  if (!Array.isArray(content)) return message;
  // The budget is shared by every part that can be cut: text, reasoning and large tool inputs (a
  // whole file written), or a message with all three keeps about twice what it was given.
  const clippable = content.filter(
    (p) =>
      p?.type === 'text' ||
      p?.type === 'reasoning' ||
      (p?.type === 'tool-call' && safeJson(p.input).length > CLIP_MARKER_CHARS),
  ).length;
  const each = Math.max(1, Math.floor(maxChars / Math.max(1, clippable)));
  const parts = content.flatMap((p) => {
    if (p?.type === 'text' || p?.type === 'reasoning') return [{ ...p, text: clip(String(p.text ?? ''), each) }];
    // An image or document cannot be cut down; one that must go is named instead.
    if (p?.type === 'image' || p?.type === 'file') return [mediaPlaceholder(p)];
    if (p?.type === 'tool-call') {
      // A huge input (a whole file written) is history now: a clipped copy, as a JSON string, still tells what was
      // done.
      const json = safeJson(p.input);
      return [json.length > each + CLIP_MARKER_CHARS ? { ...p, input: clipMiddle(json, each) } : p];
    }
    return [p];
  });
  return { ...message, content: parts } as GuardMessage;
}

/** The prompt as sent, and where each of its messages comes from in the host's history (-1: written by the guard). */
export interface View {
  /** Never changed in place: it may be the host's own array (see renderView's `copy`). */
  messages: GuardMessage[];
  /** Built on first use: only compaction needs it, and the guard renders a view on every call. */
  readonly origin: number[];
  /** Messages before the first message taken from the uncovered history (kept head, summary, continuation). */
  headLength: number;
  unansweredCalls: number;
  orphanResults: number;
  /** Calls the repair gave back to orphan results ending the prompt (see RepairResult.restoredCalls). */
  restoredCalls?: number;
  /** The messages are the input's, all of them, in order and unedited (no summary, no edit applies). */
  untouched?: boolean;
}

/** Whether a record has an own key: checked on every call, without an array of its keys. */
function hasKeys(record: object): boolean {
  for (const key in record) if (Object.hasOwn(record, key)) return true;
  return false;
}

/**
 * What the memo does to host message i, or undefined when the memo edits no message at all.
 * System messages are never edited: they stay exactly as the host wrote them.
 */
function editorOf(
  memo: CompactionMemo | undefined,
  hashOf: (index: number) => number,
): ((m: GuardMessage, i: number) => GuardMessage) | undefined {
  if (!memo) return undefined;
  const edits = hasKeys(memo.tools) ? memo.tools : undefined;
  const clips = hasKeys(memo.clips) ? memo.clips : undefined;
  const media = memo.media && hasKeys(memo.media) ? memo.media : undefined;
  const requestClip = memo?.requestClip;
  const recall = memo?.recall === true;
  if (!edits && !clips && !media && !requestClip) return undefined;
  return (m, i) => {
    if (typeof m !== 'object' || m === null || m.role === 'system') return m;
    if (edits) m = applyToolEditsAt(m, edits, i, recall);
    // Clipped before its media are named: the clip's budget is for the message's own text.
    const clip = clips?.[String(hashOf(i))];
    if (clip !== undefined) m = clipMessage(m, clip);
    if (requestClip?.index === i) m = clipMessage(m, requestClip.chars);
    if (media) m = replaceMedia(m, (j) => Object.hasOwn(media, mediaKey(i, j)));
    return m;
  };
}

/** How {@link renderView} applies a memo. */
export interface RenderOptions {
  /** Whether the history starts with the messages the stored summary covers (checked by the caller on fingerprints). */
  summaryApplies: boolean;
  /** The content hash of host message i, for the clips. */
  hashOf: (index: number) => number;
  /** Whether tool pairing is repaired last (default true; the guard repairs incrementally itself). */
  repair?: boolean;
  /**
   * Whether a view the memo leaves untouched holds a copy of the host's messages (default true);
   * false: `input` itself (the guard's per-call path: see View.messages).
   */
  copy?: boolean;
}

/** Applies the memo to the host's messages. */
export function renderView(
  input: readonly GuardMessage[],
  memo: CompactionMemo | undefined,
  { summaryApplies, hashOf, repair = true, copy = true }: RenderOptions,
): View {
  const edit = editorOf(memo, hashOf);
  // The common case, on every call: no summary and no edit, the host's messages as they are (one
  // native copy, or none), with no array or closure built for a head there is not.
  if (!edit && !(summaryApplies && memo?.summary)) {
    const messages = copy ? input.slice() : (input as GuardMessage[]);
    const view = viewOf(messages, 0, NO_ORIGINS, 0, input.length, repair);
    if (view.unansweredCalls + view.orphanResults === 0) view.untouched = true;
    return view;
  }
  const messages: GuardMessage[] = [];
  const headOrigin: number[] = [];
  const push = (m: GuardMessage, origin: number) => {
    messages.push(origin >= 0 && edit ? edit(m, origin) : m);
    headOrigin.push(origin);
  };
  let from = 0;
  const summary = summaryApplies ? memo?.summary : undefined;
  if (summary) {
    for (const i of summary.keep) push(input[i] as GuardMessage, i);
    for (const m of summary.messages) push(m, -1);
    if (summary.request !== undefined && summary.request < input.length) {
      push(input[summary.request] as GuardMessage, summary.request);
      for (const m of summary.after ?? []) push(m, -1);
    }
    from = summary.covers.messages;
  }
  const headLength = messages.length;
  // The common case, on every call: the host's messages as they are (one native copy, or none).
  if (!edit && headLength === 0) {
    const messages = from === 0 && !copy ? (input as GuardMessage[]) : input.slice(from);
    const view = viewOf(messages, headLength, headOrigin, from, input.length, repair);
    if (from === 0 && view.unansweredCalls + view.orphanResults === 0) view.untouched = true;
    return view;
  }
  for (let i = from; i < input.length; i++)
    messages.push(edit ? edit(input[i] as GuardMessage, i) : (input[i] as GuardMessage));
  return viewOf(messages, headLength, headOrigin, from, input.length, repair);
}

/** The head of a view without one (only read: a view's origins are built from a copy). */
const NO_ORIGINS: readonly number[] = [];

/** A view whose origins are built on first use (only compaction reads them; a view is rendered on every call). */
class LazyView implements View {
  messages: GuardMessage[];
  headLength: number;
  unansweredCalls = 0;
  orphanResults = 0;
  restoredCalls = 0;
  untouched?: boolean;
  /** Where the repair inserted a message of its own (origin -1); -1: nowhere. */
  insertedAt = -1;
  private builtOrigin: number[] | undefined;
  private readonly headOrigin: readonly number[];
  private readonly from: number;
  private readonly inputLength: number;

  constructor(
    messages: GuardMessage[],
    headLength: number,
    headOrigin: readonly number[],
    from: number,
    inputLength: number,
  ) {
    this.messages = messages;
    this.headLength = headLength;
    this.headOrigin = headOrigin;
    this.from = from;
    this.inputLength = inputLength;
  }

  /** Records the message the repair inserted at `index` (before the origins are built: see applyRepair). */
  insertAt(index: number): void {
    if (this.builtOrigin) this.builtOrigin.splice(index, 0, -1);
    else this.insertedAt = index;
  }

  get origin(): number[] {
    if (!this.builtOrigin) {
      const origin = this.headOrigin.slice();
      for (let i = this.from; i < this.inputLength; i++) origin.push(i);
      if (this.insertedAt >= 0) origin.splice(this.insertedAt, 0, -1);
      this.builtOrigin = origin;
    }
    return this.builtOrigin;
  }
}

/** The view of `messages`: the head's origins, then host messages from `from` on (built on first use). */
function viewOf(
  messages: GuardMessage[],
  headLength: number,
  headOrigin: readonly number[],
  from: number,
  inputLength: number,
  repair: boolean,
): View {
  // A class, not an object literal with a getter: that is built by the engine's slow path, per call.
  const view = new LazyView(messages, headLength, headOrigin, from, inputLength);
  if (!repair) return view;
  applyRepair(view, repairToolPairing(messages));
  return view;
}

/**
 * `view` with the tool-pairing repair's messages and counts. A message the repair inserted (a call
 * given back to orphan results that end the prompt) is the guard's own: origin -1, and the head
 * grows when it lands inside it.
 */
export function applyRepair(view: View, repaired: RepairResult): void {
  view.messages = repaired.messages;
  view.unansweredCalls = repaired.unansweredCalls;
  view.orphanResults = repaired.orphanResults;
  view.restoredCalls = repaired.restoredCalls;
  const at = repaired.insertedAt;
  if (at < 0) return;
  if (at < view.headLength) view.headLength++;
  if (view instanceof LazyView) view.insertAt(at);
  else (view.origin as number[]).splice(at, 0, -1);
}
