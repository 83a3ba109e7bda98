// The summary of last resort. When the summarizer fails, times out or returns nothing usable, the
// old messages must still be replaced by something (the bloated conversation is never passed
// through) and no history may be lost to the failure. This digest needs no model: one line per
// message or tool step, cut to its first characters. It is deterministic (same input, same bytes),
// so a stateless host that replays the history gets a byte-stable prefix and provider prompt caches
// keep working.
//
// Over its budget, the digest gives way in the project's order of what matters least: tool output
// first (shorter, then a size label, then left out), assistant steps next (shorter, then left out),
// the user's words last (shorter down to the start of each message; only when even those starts
// do not fit are the oldest left out, and counted). A previous summary is kept whole when it and
// the starts of the user messages fit; a previous mechanical digest is folded into the new list,
// so that a chain of fallbacks shrinks old tool lines before any user line.
import type { AssistantMessage, GuardMessage, ToolResultPart } from '../messages.ts';
import {
  MAX_LABEL_CHARS,
  asText,
  clipMiddle,
  formatCount,
  hasText,
  mediaLabel,
  oneLine,
  safeHead,
  safeJson,
  stripInlineBinary,
  toolOutputText,
  userContentText,
} from './text.ts';

/** Characters kept of each message (or tool call, or tool result) by default. */
export const DEFAULT_MECHANICAL_CHARS_PER_MESSAGE = 200;

/**
 * Characters of each user message a digest keeps at the least: the start of what the user said.
 * Only when these starts of all the user messages do not fit are the oldest left out.
 */
export const MECHANICAL_USER_FLOOR_CHARS = 60;

/** Characters an assistant step or tool output is cut to before it is reduced further. */
const OTHER_FLOOR_CHARS = 40;

/** How every mechanical digest starts, so callers can tell it from a model-written summary. */
export const MECHANICAL_SUMMARY_PREFIX = '[Mechanical digest:';

const HEADER_START = `${MECHANICAL_SUMMARY_PREFIX} the summarizer was unavailable, so the earlier messages are listed by role`;
const SHRUNK_HEADER = `${HEADER_START}, shortened to fit (tool output first, the user's words last).]`;
const PREVIOUS_OPEN = '\n\nPrevious summary:\n';
const PREVIOUS_CLOSE = '\n\nMessages since then:';
const NO_PREVIOUS = '\n\nMessages:';

export interface MechanicalSummaryOptions {
  /** Characters kept of each message, tool call and tool result; default 200. */
  charsPerMessage?: number;
  /**
   * The summary of the history before these messages, at the top. Kept whole when it and the start
   * of every user message fit `maxChars`; otherwise its middle is cut (it keeps at least half of
   * what the header leaves). A previous mechanical digest is merged into the new list instead.
   */
  previousSummary?: string;
  /**
   * Upper bound of the digest's length. Only a bound too small for the header and the count lines
   * (about 400 characters) is exceeded.
   */
  maxChars?: number;
}

export interface MechanicalDigest {
  text: string;
  /** Messages (or lines of an earlier digest) this digest names only by count. */
  lostMessages: number;
  /** Of those, user messages. */
  lostUserMessages: number;
  /** Of those, user messages among `messages` (not lines carried from an earlier digest). */
  lostNewUserMessages: number;
}

/** What goes first when the digest is over its budget: tool output, then assistant steps, then the user's words. */
const TOOL = 0;
const ASSISTANT = 1;
const USER = 2;
type Tier = typeof TOOL | typeof ASSISTANT | typeof USER;

const FLOOR: Record<Tier, number> = {
  [TOOL]: OTHER_FLOOR_CHARS,
  [ASSISTANT]: OTHER_FLOOR_CHARS,
  [USER]: MECHANICAL_USER_FLOOR_CHARS,
};

/** One line of the digest: `label` + the first `cap` characters of `body` (+ `…`) + `suffix`. */
interface Line {
  tier: Tier;
  /** The message it describes; -1 for a line carried over from an earlier digest. */
  message: number;
  label: string;
  body: string;
  suffix: string;
  /** The body is already a cut of something longer (an ellipsis follows it at any cap). */
  cut: boolean;
  /** A shorter form without the body (tool results: name and size). */
  short?: string;
  cap: number;
  shortened: boolean;
  dropped: boolean;
}

function lineText(l: Line): string {
  if (l.shortened && l.short !== undefined) return l.short;
  const over = l.body.length > l.cap;
  return `${l.label}${over ? safeHead(l.body, l.cap) : l.body}${over || l.cut ? '…' : ''}${l.suffix}`;
}

/**
 * Characters of the line at `cap`, with the line break before it (an upper bound when a cut falls inside a surrogate
 * pair).
 */
function costAt(l: Line, cap: number): number {
  if (l.dropped) return 0;
  if (l.shortened && l.short !== undefined) return l.short.length + 1;
  const over = l.body.length > cap;
  return l.label.length + Math.min(l.body.length, cap) + (over || l.cut ? 1 : 0) + l.suffix.length + 1;
}

/** A model-written name (tool, role, part type) on one short line. */
const label = (name: unknown) => oneLine(name, MAX_LABEL_CHARS);

type LineParts = Pick<Line, 'tier' | 'message' | 'label' | 'body' | 'suffix' | 'cut' | 'cap'> & {
  short?: string | undefined;
};

function makeLine({ short, ...parts }: LineParts): Line {
  return { ...parts, ...(short !== undefined ? { short } : {}), shortened: false, dropped: false };
}

/** A line of the current digest: text flattened to one line, inline binary labelled, cut to `max`. */
function line(
  tier: Tier,
  message: number,
  label: string,
  text: string,
  max: number,
  suffix = '',
  short?: string,
): Line {
  const flat = stripInlineBinary(text).replace(/\s+/g, ' ').trim() || '(empty)';
  const body = safeHead(flat, max);
  return makeLine({ tier, message, label, body, suffix, cut: body.length < flat.length, cap: max, short });
}

/** A line with nothing to cut (a label, a placeholder): it can only be left out. */
function fixed(tier: Tier, message: number, text: string): Line {
  return makeLine({ tier, message, label: text, body: '', suffix: '', cut: false, cap: 0 });
}

function toolResultLine(part: ToolResultPart, message: number, max: number): Line {
  const { text, isError } = toolOutputText(part.output);
  const head = `- tool ${label(part.toolName)} ${isError ? 'returned an error' : 'returned'}`;
  return line(TOOL, message, `${head}: `, text, max, '', `${head} (${formatCount(text.length)} characters)`);
}

function assistantLines(content: AssistantMessage['content'], message: number, max: number): Line[] {
  if (!Array.isArray(content)) return [line(ASSISTANT, message, '- assistant: ', asText(content), max)];
  const lines: Line[] = [];
  const text: string[] = [];
  // Text and file parts of one message make one line; reasoning is left out (internal, often
  // redacted); each tool call and provider-run tool result is a step of its own.
  const flush = () => {
    if (text.length > 0) lines.push(line(ASSISTANT, message, '- assistant: ', text.join(' '), max));
    text.length = 0;
  };
  for (const part of content) {
    if (!part || typeof part !== 'object') continue;
    switch (part.type) {
      case 'text':
        if (hasText(part.text)) text.push(part.text);
        break;
      case 'file':
        text.push(mediaLabel('file', part));
        break;
      case 'reasoning':
        break;
      case 'tool-call':
        flush();
        lines.push(
          line(ASSISTANT, message, `- assistant called ${label(part.toolName)}(`, safeJson(part.input), max, ')'),
        );
        break;
      case 'tool-result':
        flush();
        lines.push(toolResultLine(part, message, max));
        break;
      default:
        text.push(`[${label((part as { type: unknown }).type)}]`);
    }
  }
  flush();
  return lines;
}

function messageLines(m: GuardMessage, index: number, max: number): Line[] {
  if (!m || typeof m !== 'object') return [];
  switch (m.role) {
    case 'system':
      return [line(ASSISTANT, index, '- system: ', asText(m.content), max)];
    case 'user':
      return [line(USER, index, '- user: ', userContentText(m.content), max)];
    case 'assistant':
      return assistantLines(m.content, index, max);
    case 'tool':
      if (!Array.isArray(m.content)) return [line(TOOL, index, '- tool: ', safeJson(m.content), max)];
      return m.content.map((part) =>
        part?.type === 'tool-result'
          ? toolResultLine(part, index, max)
          : fixed(TOOL, index, `- tool: [${label((part as { type?: unknown })?.type)}]`),
      );
    default: {
      const unknown = m as { role?: unknown; content?: unknown };
      return [line(TOOL, index, `- ${label(unknown.role)}: `, safeJson(unknown.content), max)];
    }
  }
}

function lostOthersNote(n: number): string {
  // Not "earlier": they are the oldest of their kind, but lines of other kinds may come before them.
  return `- (${formatCount(n)} tool and assistant ${n === 1 ? 'step' : 'steps'} left out to fit)`;
}

function lostUsersNote(n: number): string {
  return `- (${formatCount(n)} earlier user ${n === 1 ? 'message' : 'messages'} could not be kept)`;
}

const LOST_OTHERS_RE = /^- \(([\d,]+) tool and assistant steps? left out to fit\)$/;
const LOST_USERS_RE = /^- \(([\d,]+) earlier user messages? could not be kept\)$/;
const TOOL_RESULT_RE = /^- tool (.*?) returned( an error)?: /;

interface Parsed {
  previous: string | undefined;
  lines: Line[];
  lostUsers: number;
  lostOthers: number;
}

/** A line of an earlier digest, back into a line that can be cut again. */
function carriedLine(text: string, max: number): Line {
  const split = (tier: Tier, head: string, suffix = '', short?: string): Line => {
    let body = text.slice(head.length, text.length - suffix.length);
    const cut = body.endsWith('…');
    if (cut) body = body.slice(0, -1);
    return makeLine({ tier, message: -1, label: head, body, suffix, cut, cap: Math.max(max, body.length), short });
  };
  if (text.startsWith('- user: ')) return split(USER, '- user: ');
  if (text.startsWith('- assistant: ')) return split(ASSISTANT, '- assistant: ');
  if (text.startsWith('- system: ')) return split(ASSISTANT, '- system: ');
  const open = text.startsWith('- assistant called ') && text.endsWith(')') ? text.indexOf('(') : -1;
  if (open >= 0) return split(ASSISTANT, text.slice(0, open + 1), ')');
  const result = TOOL_RESULT_RE.exec(text);
  if (result) return split(TOOL, result[0], '', result[0].slice(0, -2));
  return fixed(TOOL, -1, text);
}

/**
 * An earlier mechanical digest taken apart: its previous summary, its lines and the counts of what
 * it had already left out. Undefined for anything else (a model-written summary, a digest that was
 * edited), which is then kept as an opaque previous summary.
 */
function parseDigest(text: string, max: number): Parsed | undefined {
  if (!text.startsWith(MECHANICAL_SUMMARY_PREFIX)) return undefined;
  const headerEnd = text.indexOf('\n');
  if (headerEnd < 0) return undefined;
  let rest = text.slice(headerEnd);
  let previous: string | undefined;
  if (rest.startsWith(NO_PREVIOUS)) {
    rest = rest.slice(NO_PREVIOUS.length);
  } else if (rest.startsWith(PREVIOUS_OPEN)) {
    // The digest's own lines never contain a line break, so the last marker is the digest's own.
    const close = rest.lastIndexOf(PREVIOUS_CLOSE);
    if (close < PREVIOUS_OPEN.length) return undefined;
    previous = rest.slice(PREVIOUS_OPEN.length, close);
    rest = rest.slice(close + PREVIOUS_CLOSE.length);
  } else {
    return undefined;
  }
  if (rest !== '' && !rest.startsWith('\n')) return undefined;
  const parsed: Parsed = { previous: hasText(previous) ? previous : undefined, lines: [], lostUsers: 0, lostOthers: 0 };
  for (const text of rest === '' ? [] : rest.slice(1).split('\n')) {
    if (!text.startsWith('- ')) return undefined;
    const users = LOST_USERS_RE.exec(text);
    const others = LOST_OTHERS_RE.exec(text);
    if (users) parsed.lostUsers += Number(users[1]?.replaceAll(',', ''));
    else if (others) parsed.lostOthers += Number(others[1]?.replaceAll(',', ''));
    else parsed.lines.push(carriedLine(text, max));
  }
  return parsed;
}

/**
 * Shrinks, shortens and finally leaves out lines until they fit `budget` characters, least
 * important first. `reserve` is taken from the budget once anything must be left out (room for the
 * count lines). Linear in the lines but for a binary search of the cap per tier.
 */
function fit(lines: Line[], budget: number, reserve: number): void {
  let total = lines.reduce((n, l) => n + costAt(l, l.cap), 0);
  let reserved = false;
  for (const tier of [TOOL, ASSISTANT, USER] as const) {
    if (total <= budget) return;
    const members = lines.filter((l) => l.tier === tier && !l.dropped);

    // Every line of the tier cut to one cap, the highest that fits (never under the floor).
    const cuttable = members.filter((l) => !l.shortened && l.body.length > FLOOR[tier] && l.cap > FLOOR[tier]);
    if (cuttable.length > 0) {
      const current = cuttable.reduce((n, l) => n + costAt(l, l.cap), 0);
      const rest = total - current;
      const at = (cap: number) => cuttable.reduce((n, l) => n + costAt(l, Math.min(l.cap, cap)), 0);
      let lo = FLOOR[tier];
      let hi = cuttable.reduce((n, l) => Math.max(n, l.cap), 0);
      if (rest + at(lo) > budget) {
        hi = lo;
      } else {
        while (lo < hi) {
          const mid = Math.ceil((lo + hi) / 2);
          if (rest + at(mid) <= budget) lo = mid;
          else hi = mid - 1;
        }
      }
      for (const l of cuttable) l.cap = Math.min(l.cap, hi);
      total = rest + at(hi);
    }

    // Tool output: its size label instead of its text, oldest first.
    for (const l of members) {
      if (total <= budget) return;
      if (l.short === undefined || l.shortened) continue;
      const before = costAt(l, l.cap);
      if (l.short.length + 1 >= before) continue;
      l.shortened = true;
      total += costAt(l, l.cap) - before;
    }

    // Left out, oldest first; the count lines take their room the first time.
    for (const l of members) {
      if (!reserved && total > budget) {
        budget -= reserve;
        reserved = true;
      }
      if (total <= budget) return;
      total -= costAt(l, l.cap);
      l.dropped = true;
    }
  }
}

/** `text` cut in its middle to at most `room` characters, the marker included. */
function clipTo(text: string, room: number): string {
  if (text.length <= room) return text;
  const marker = `\n[... ${formatCount(text.length)} characters omitted ...]\n`.length;
  return clipMiddle(text, Math.max(0, room - marker));
}

/**
 * A model-free digest of `messages`: a header, the previous summary (if any), then one line per
 * message or tool step by role, e.g. `- user: ...`, `- assistant called read_file({"path":"a.ts"})`,
 * `- tool read_file returned: ...`, `- tool bash returned an error: ...`. Within `maxChars` it keeps
 * what the user said before anything else (see the top of this file), and reports what it lost.
 */
export function mechanicalDigest(messages: GuardMessage[], options: MechanicalSummaryOptions = {}): MechanicalDigest {
  const requested = options.charsPerMessage;
  const valid = requested !== undefined && Number.isFinite(requested) && requested > 0;
  const max = valid ? Math.floor(requested) : DEFAULT_MECHANICAL_CHARS_PER_MESSAGE;
  const earlier = hasText(options.previousSummary) ? parseDigest(options.previousSummary.trim(), max) : undefined;
  let previous = earlier
    ? earlier.previous?.trim()
    : hasText(options.previousSummary)
      ? options.previousSummary.trim()
      : undefined;
  const lines = [...(earlier?.lines ?? []), ...messages.flatMap((m, i) => messageLines(m, i, max))];
  const carriedUsers = earlier?.lostUsers ?? 0;
  const carriedOthers = earlier?.lostOthers ?? 0;

  const framing = () =>
    previous !== undefined ? PREVIOUS_OPEN.length + previous.length + PREVIOUS_CLOSE.length : NO_PREVIOUS.length;
  const notesCost = (users: number, others: number) =>
    (users > 0 ? lostUsersNote(users).length + 1 : 0) + (others > 0 ? lostOthersNote(others).length + 1 : 0);
  const standard = `${HEADER_START}, each cut to its first ${formatCount(max)} characters.]`;
  const limit = options.maxChars;
  const whole =
    standard.length +
    framing() +
    notesCost(carriedUsers, carriedOthers) +
    lines.reduce((n, l) => n + costAt(l, l.cap), 0);
  let header = standard;
  if (limit !== undefined && whole > limit) {
    header = SHRUNK_HEADER;
    // The count lines at their longest, should anything be left out.
    const reserve = notesCost(carriedUsers + lines.length, carriedOthers + lines.length);
    if (previous !== undefined) {
      // The previous summary is kept whole when it fits beside the start of every user message;
      // otherwise it gets at least half of what the header and the count lines leave.
      const users = lines.reduce((n, l) => n + (l.tier === USER ? costAt(l, Math.min(l.cap, FLOOR[USER])) : 0), 0);
      const fixedCost = header.length + PREVIOUS_OPEN.length + PREVIOUS_CLOSE.length + reserve;
      previous = clipTo(previous, Math.max(limit - fixedCost - users, Math.floor((limit - fixedCost) / 2)));
    }
    const carriedNotes = notesCost(carriedUsers, carriedOthers);
    fit(lines, limit - header.length - framing() - carriedNotes, reserve - carriedNotes);
  }

  const { droppedUsers, droppedNewUsers, droppedOthers, lostMessages } = countDropped(lines);
  const out = [header + (previous !== undefined ? `${PREVIOUS_OPEN}${previous}${PREVIOUS_CLOSE}` : NO_PREVIOUS)];
  if (carriedUsers + droppedUsers > 0) out.push(lostUsersNote(carriedUsers + droppedUsers));
  if (carriedOthers + droppedOthers > 0) out.push(lostOthersNote(carriedOthers + droppedOthers));
  for (const l of lines) if (!l.dropped) out.push(lineText(l));
  return { text: out.join('\n'), lostMessages, lostUserMessages: droppedUsers, lostNewUserMessages: droppedNewUsers };
}

/**
 * What is named only by count: user messages and lines of an earlier digest one by one, other
 * messages when every line of theirs was left out.
 */
function countDropped(lines: readonly Line[]) {
  let droppedUsers = 0;
  let droppedNewUsers = 0;
  let droppedOthers = 0;
  let lostMessages = 0;
  const linesOf = new Map<number, { all: number; dropped: number }>();
  for (const l of lines) {
    if (l.dropped) {
      if (l.tier === USER) {
        droppedUsers++;
        if (l.message >= 0) droppedNewUsers++;
      } else droppedOthers++;
      if (l.message < 0) lostMessages++;
    }
    if (l.message >= 0) {
      const n = linesOf.get(l.message) ?? { all: 0, dropped: 0 };
      n.all++;
      if (l.dropped) n.dropped++;
      linesOf.set(l.message, n);
    }
  }
  for (const n of linesOf.values()) if (n.dropped === n.all) lostMessages++;
  return { droppedUsers, droppedNewUsers, droppedOthers, lostMessages };
}

/**
 * Characters the digest lines of the user messages among `messages` take when each is cut to its
 * first `cap` characters (default MECHANICAL_USER_FLOOR_CHARS, the least a digest keeps of one),
 * line breaks included.
 */
export function userStartsChars(messages: readonly GuardMessage[], cap = MECHANICAL_USER_FLOOR_CHARS): number {
  let n = 0;
  for (const m of messages) {
    if (m?.role !== 'user') continue;
    for (const l of messageLines(m, 0, cap)) n += costAt(l, cap);
  }
  return n;
}

/** {@link mechanicalDigest}'s text. */
export function mechanicalSummary(messages: GuardMessage[], options: MechanicalSummaryOptions = {}): string {
  return mechanicalDigest(messages, options).text;
}
