// What the summarizer reads: the messages it replaces with their tool outputs clipped and redacted,
// within a bound of what it may read (tool output cut first, assistant text next, the user's words
// last), cut into chunks that each fit its window.
import type { GuardMessage } from '../messages.ts';
import { clipMessage } from './memo.ts';
import { DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS, renderTranscript } from './prompt.ts';
import { redactMessage } from './redact.ts';
import { unitsOf } from './structure.ts';
import { safeJson } from './text.ts';
import { applyToolEdits, outputChars, toolResultsOf } from './tool-edits.ts';
import { waterLevel } from './water-level.ts';

/**
 * What the summarizer reads of the messages it replaces is bounded (`readTokens`, the
 * `summarizerInputTokens` option: by default SUMMARIZER_READ_FACTOR × what it may write). Its input is billed in full on
 * every compaction (it is a request of its own, not a cached continuation of the prompt), while what
 * it cannot read is not lost: the originals are archived, and the guard itself keeps the user's
 * instruction sentences and the file list under the summary. Over the bound, the transcript is cut
 * in the project's order of what matters least: tool output first, assistant text next, the user's
 * words last, each tier cut evenly (the largest first) and in its middle, so that every message
 * keeps its start and end.
 */
export const SUMMARIZER_READ_FACTOR = 4;
/**
 * Fewest characters the bound leaves of a message or tool output: enough to say what it was; less
 * (down to MIN_READ_FLOOR_CHARS) when the messages are so many that these would not fit it twice.
 */
const MIN_READ_CHARS = 200;
const MIN_READ_FLOOR_CHARS = 40;

/** The message with each tool result cut to `maxChars` (what the summarizer receives). */
function clipToolOutputs(message: GuardMessage, maxChars: number): GuardMessage {
  const results = toolResultsOf(message);
  if (results.length === 0 || results.every((p) => outputChars(p) <= maxChars)) return message;
  const edits: Record<string, number> = {};
  for (const p of results) if (outputChars(p) > maxChars) edits[p.toolCallId] = maxChars;
  return applyToolEdits(message, edits);
}

/**
 * The message with its text parts joined into one (where the first was). Clipping shares a
 * message's budget among its text parts, so thousands of small parts (a log pasted line by line)
 * would each stay under their share and the message would not shrink at all; one part can be cut.
 */
function mergeTextParts(message: GuardMessage): GuardMessage {
  const content = message.content as unknown;
  if (!Array.isArray(content)) return message;
  const texts: string[] = [];
  for (const p of content) if (p?.type === 'text') texts.push(String(p.text ?? ''));
  if (texts.length < 2) return message;
  const parts: unknown[] = [];
  let placed = false;
  for (const p of content) {
    if (p?.type !== 'text') parts.push(p);
    else if (!placed) {
      parts.push({ type: 'text', text: texts.join('\n') });
      placed = true;
    }
  }
  return { ...message, content: parts } as GuardMessage;
}

/**
 * The message each clipped copy was made from, one map per summarization. The summarizer reads the
 * copies (they fit its window); a fallback digest reads the originals, so that what a clip left out
 * (the words after a long paste) is still there to keep.
 */
export type Originals = WeakMap<GuardMessage, GuardMessage>;

/**
 * Cuts messages into chunks whose rendered transcript fits `budgetChars`. A tool call and its
 * results stay in one chunk when they fit one (the summarizer should see what a call returned);
 * a single message too big for a chunk is clipped (its original recorded in `originals`).
 */
export function chunk(messages: GuardMessage[], budgetChars: number, originals: Originals): GuardMessage[][] {
  const options = { maxToolResultChars: DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS };
  const sized = messages.map((original) => {
    let message = clipToolOutputs(original, options.maxToolResultChars);
    let size = renderTranscript([message], options).length;
    if (size > budgetChars) {
      // One message larger than a chunk (a long paste, many parallel results): its text and each
      // of its tool results get a share of the chunk.
      const results = toolResultsOf(message).length;
      if (results > 0)
        message = clipToolOutputs(message, Math.max(100, Math.floor((budgetChars - 200) / results) - 150));
      message = clipMessage(mergeTextParts(message), Math.max(200, budgetChars - 200));
      size = renderTranscript([message], options).length;
    }
    if (message !== original) originals.set(message, originals.get(original) ?? original);
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

/** The transcript's tiers, in the order they give way: tool output, assistant text, the user's words. */
function tierOf(message: GuardMessage): number {
  if (message.role === 'user') return 2;
  if (message.role === 'tool') return 0;
  return 1;
}

/**
 * `messages` as the summarizer will read them, within `budgetChars` of transcript when that can be
 * reached (see `readTokens`): each tier in turn, tool output first, is cut to the level
 * that saves what is over (never below MIN_READ_CHARS). What is still over is chunked as before.
 */
export function boundTranscript(messages: GuardMessage[], budgetChars: number, originals: Originals): GuardMessage[] {
  const options = { maxToolResultChars: DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS };
  const out = messages.map((m) => clipToolOutputs(m, DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS));
  const size = (m: GuardMessage) => renderTranscript([m], options).length;
  const sizes = out.map(size);
  let total = sizes.reduce((n, x) => n + x, 0);
  const floor = Math.max(MIN_READ_FLOOR_CHARS, Math.min(MIN_READ_CHARS, Math.floor(budgetChars / (2 * out.length))));
  for (let tier = 0; tier < 3 && total > budgetChars; tier++) {
    const members = out.flatMap((m, i) => (m && typeof m === 'object' && tierOf(m) === tier ? [i] : []));
    if (members.length === 0) continue;
    const level = waterLevel(
      members.map((i) => sizes[i] as number),
      total - budgetChars,
      floor,
    );
    for (const i of members) {
      if ((sizes[i] as number) <= level) continue;
      const m = out[i] as GuardMessage;
      // A rendered block is a little more than its text (role and call labels): cut the text by what is over.
      const over = (sizes[i] as number) - level;
      const cut =
        tier === 0
          ? clipToolOutputs(m, Math.max(floor, maxOutputChars(m) - over))
          : clipMessage(mergeTextParts(m), Math.max(floor, textChars(m) - over));
      out[i] = cut;
      const next = size(cut);
      total += next - (sizes[i] as number);
      sizes[i] = next;
    }
  }
  out.forEach((m, i) => {
    const original = messages[i] as GuardMessage;
    if (m !== original) originals.set(m, originals.get(original) ?? original);
  });
  return out;
}

/** The longest tool output of a message, in characters. */
function maxOutputChars(message: GuardMessage): number {
  return toolResultsOf(message).reduce((n, p) => Math.max(n, outputChars(p)), 0);
}

/** Characters of a message's text (its string content, or its text and reasoning parts and tool inputs). */
function textChars(message: GuardMessage): number {
  const content = message.content as unknown;
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const p of content) {
    if (p?.type === 'text' || p?.type === 'reasoning') n += String(p.text ?? '').length;
    else if (p?.type === 'tool-call') n += safeJson(p.input ?? null).length;
  }
  return n;
}

/**
 * The messages as the summarizer and every digest read them: tool outputs clipped (no digest or
 * transcript shows more of one, and scanning megabytes of output for secrets would stall the call),
 * then redacted. A digest is built from these, never redacted after: its lines are flattened, and a
 * secret assignment on a line of its own (`aws_secret_access_key:` in YAML) no longer reads as one
 * in the middle of a flattened line.
 */
export function redactedMessages(messages: readonly GuardMessage[], redact: (text: string) => string): GuardMessage[] {
  return messages.map((m) => redactMessage(clipToolOutputs(m, DEFAULT_TRANSCRIPT_TOOL_RESULT_CHARS), redact));
}
