// The guard's last lines of defence against what it cannot trust: entries of the host's message
// array that are not messages, and its own bugs. Bad entries are left out (and reported) before
// anything else looks at the prompt; when a call fails anyway, the guard fails closed: it sends
// the smallest prompt that fits (system messages, a digest of the rest, the latest user request),
// never the raw input, which may be far over the window.
import type { BeforeModelInput, BeforeModelResult } from './api.ts';
import type { CallResolver } from './call.ts';
import type { ResolvedOptions } from './config.ts';
import type { GuardMessage, UserMessage } from './messages.ts';
import { mechanicalSummary } from './compaction/mechanical.ts';
import { summaryMessage } from './compaction/placement.ts';
import { clipMiddle, formatCount, mediaLabel } from './compaction/text.ts';
import { CHARS_PER_TOKEN, measureMessage } from './tokens/heuristic.ts';
import { RecentMap } from './state/recent.ts';
import { canonicalForms, MessageKeys } from './tokens/prompt-measure.ts';

/** Deepest nesting searched for a cycle: no provider accepts deeper JSON anyway. */
const MAX_DEPTH = 64;

/** Values of at most this many objects are not remembered as sendable: a lookup costs more than walking them again. */
const SMALL_VALUE = 8;

/**
 * Most objects a value may come to once serialized, when it holds the same objects several times
 * (more than twice its own): past this, its JSON (each shared object written out at every place)
 * is too large for any provider, and walking or printing it would stall the host. A value that
 * shares little is never judged by this: its size is its own.
 */
export const MAX_EXPANDED_OBJECTS = 1_000_000;

const CYCLE = 'a part refers to itself (a cycle cannot be sent as JSON)';
// Not toLocaleString: loading the locale data at import costs tens of milliseconds.
const EXPANDS = `a part holds the same objects so many times that its JSON would hold over ${formatCount(MAX_EXPANDED_OBJECTS)} objects`;

/** What the walk knows of an object it finished: its expanded size, found with `room` levels left. */
interface Walked {
  size: number;
  room: number;
  /** Its walk stopped at the depth limit somewhere below: exact only for as little room or less. */
  cut: boolean;
}

/** Whether the walk in progress stopped at the depth limit since it was last reset. */
let cutBelow = false;

/**
 * How many objects `value` comes to once serialized (shared objects counted at every place), or
 * Infinity when it refers to itself (a cycle no provider can serialize). `done` holds what the walk
 * found of each object it finished: one shared many times is walked again only when reached with
 * more room under the depth limit than before (at most MAX_DEPTH times), so the walk stays linear
 * in the distinct objects even when their expansion is exponential, and an object first reached
 * near the limit is still walked whole where it is reached higher up.
 */
function expandedSize(value: unknown, ancestors: object[], done: Map<object, Walked>): number {
  if (
    typeof value !== 'object' ||
    value === null ||
    ArrayBuffer.isView(value) ||
    value instanceof ArrayBuffer ||
    value instanceof URL
  )
    return 0;
  // Before the memo: an object walked again with more room is on the path while it is.
  if (ancestors.includes(value)) return Number.POSITIVE_INFINITY;
  const room = MAX_DEPTH - ancestors.length;
  const known = done.get(value);
  if (known !== undefined && (!known.cut || room <= known.room)) {
    if (known.cut) cutBelow = true;
    return known.size;
  }
  if (room <= 0) {
    cutBelow = true;
    return 1;
  }
  const outer = cutBelow;
  cutBelow = false;
  ancestors.push(value);
  let size = 1;
  try {
    if (Array.isArray(value)) {
      for (const v of value) if (typeof v === 'object' && v !== null) size += expandedSize(v, ancestors, done);
    } else {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        const v = (value as Record<string, unknown>)[key];
        if (typeof v === 'object' && v !== null) size += expandedSize(v, ancestors, done);
      }
    }
  } finally {
    ancestors.pop();
  }
  const cut = cutBelow;
  cutBelow = outer || cut;
  // A cycle ends the walk at once (Infinity): nothing to remember.
  if (size !== Number.POSITIVE_INFINITY) done.set(value, { size, room, cut });
  return size;
}

/** Objects already found sendable: a large tool input is walked once, however often it is resent. */
const sendable = new WeakSet<object>();

/** Whether a value holds no object at all (a tool input of a few strings, an output holding a text): no cycle. */
function flat(value: object): boolean {
  // Binary data holds numbers only (and is not walked key by key).
  if (ArrayBuffer.isView(value)) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (typeof value[i] === 'object' && value[i] !== null) return false;
    return true;
  }
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null) return false;
  }
  return true;
}

/** Why a structured value cannot be sent as JSON (a cycle, an exponential expansion), or undefined. */
function valueProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || flat(value) || sendable.has(value)) return undefined;
  const done = new Map<object, Walked>();
  cutBelow = false;
  const size = expandedSize(value, [], done);
  if (size === Number.POSITIVE_INFINITY) return CYCLE;
  // Shared objects written out at every place, to more than twice the value's own size: too large
  // to send, and to walk (hashing and measuring print the value as JSON does).
  if (size > MAX_EXPANDED_OBJECTS && size > 2 * done.size) return EXPANDS;
  // A small value (a tool output holding a text, a path) is walked again next time: no set to look it up in.
  if (size > SMALL_VALUE) sendable.add(value);
  return undefined;
}

/**
 * A field the guard reads as text (a text, a tool name or id, a media type, a file name): a string,
 * or absent. Providers take nothing else there, and the guard compares ids as strings.
 */
const textOrAbsent = (value: unknown): boolean => value === undefined || typeof value === 'string';

/**
 * Why a message's parts cannot be sent, or undefined. Only where hosts put arbitrary values is
 * walked (tool-call inputs, tool-result outputs, parts of unknown types), and the fields the guard
 * reads as text are checked to be strings; media data is left alone. Runs on every part of every
 * new message.
 */
function partsProblem(parts: readonly unknown[], checked: readonly unknown[] | undefined): string | undefined {
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j] as {
      type?: unknown;
      text?: unknown;
      toolCallId?: unknown;
      toolName?: unknown;
      input?: unknown;
      output?: unknown;
      mediaType?: unknown;
      filename?: unknown;
    } | null;
    if (typeof part !== 'object' || part === null) continue;
    // The value a part at this place held last call, already found sendable: a host that rebuilds
    // its parts around the same values (the AI SDK) costs one comparison, not a lookup.
    const before = checked?.[j] as { input?: unknown; output?: unknown } | undefined;
    let problem: string | undefined;
    switch (part.type) {
      case 'text':
      case 'reasoning':
        if (!textOrAbsent(part.text)) return `a ${part.type} part whose text is not a string`;
        continue;
      case 'image':
      case 'file':
        if (!textOrAbsent(part.mediaType) || !textOrAbsent(part.filename))
          return `a ${part.type} part whose media type or file name is not a string`;
        continue;
      case 'tool-call':
        if (!textOrAbsent(part.toolCallId) || !textOrAbsent(part.toolName))
          return 'a tool call whose id or name is not a string';
        if (part.input !== before?.input) problem = valueProblem(part.input);
        break;
      case 'tool-result':
        if (!textOrAbsent(part.toolCallId) || !textOrAbsent(part.toolName))
          return 'a tool result whose id or name is not a string';
        if (part.output !== before?.output) problem = valueProblem(part.output);
        break;
      default:
        problem = valueProblem(part);
    }
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** A role named in a reason: quoted, cut, and never a throw (a role without a string form). */
function roleLabel(role: unknown): string {
  try {
    return JSON.stringify(String(role)).slice(0, 40);
  } catch {
    return `of type ${typeof role} that cannot be printed`;
  }
}

/**
 * Why an entry cannot be sent, or undefined when it is a message. Cheap: runs on every entry of
 * every call. `checked` is the entry at the same place in the last input found valid, if any.
 */
function problemOf(entry: unknown, checked?: unknown): string | undefined {
  if (entry === null || typeof entry !== 'object') return entry === null ? 'null' : `a ${typeof entry}, not a message`;
  let role: unknown;
  let content: unknown;
  try {
    role = (entry as { role?: unknown }).role;
    content = (entry as { content?: unknown }).content;
  } catch {
    return 'its fields cannot be read';
  }
  if (role !== 'user' && role !== 'assistant' && role !== 'tool' && role !== 'system')
    return `unknown role ${roleLabel(role)}`;
  if (typeof content === 'string')
    return role === 'tool' ? 'tool message whose content is not an array of results' : undefined;
  if (!Array.isArray(content)) return 'content is neither a string nor an array of parts';
  try {
    const before = (checked as { content?: unknown } | undefined)?.content;
    return partsProblem(content, Array.isArray(before) ? before : undefined);
  } catch {
    return 'its parts cannot be read';
  }
}

export interface ValidatedMessages {
  messages: readonly GuardMessage[];
  /** Indices (in the input) of the entries left out, with the reason for each. */
  dropped: number[];
  reasons: string[];
}

// Shared by every input with nothing left out (the common call allocates no arrays for it); frozen,
// and never handed to a listener (events are sent only when something was left out).
const NONE = Object.freeze([]) as unknown as number[];
const NO_REASONS = Object.freeze([]) as unknown as string[];

/**
 * The input without the entries that are not messages; the input itself when every entry is one.
 * Entries before `from` are known to be messages (the caller checked the same objects before).
 */
export function validMessages(input: readonly unknown[], from = 0, checked?: readonly unknown[]): ValidatedMessages {
  let dropped: number[] | undefined;
  let reasons: string[] | undefined;
  for (let i = from; i < input.length; i++) {
    const problem = problemOf(input[i], checked?.[i]);
    if (problem === undefined) continue;
    (dropped ??= []).push(i);
    (reasons ??= []).push(problem);
  }
  if (!dropped || !reasons) return { messages: input as readonly GuardMessage[], dropped: NONE, reasons: NO_REASONS };
  const skip = new Set(dropped);
  return { messages: input.filter((_, i) => !skip.has(i)) as GuardMessage[], dropped, reasons };
}

/** Fewest characters kept of the latest request when even it must be cut. */
const MIN_REQUEST_CHARS = 200;

/**
 * The smallest prompt that fits `threshold` at `correction` provider tokens per heuristic token:
 * the system messages, a mechanical digest of everything else (when it fits), and the latest user
 * request, whole when it fits, else cut in the middle with a marker. Built from the plainest
 * functions only (it runs after something else failed) and never throws.
 */
export function minimalPrompt(
  messages: readonly GuardMessage[],
  threshold: number,
  correction: number,
): GuardMessage[] {
  const tokensOf = (m: GuardMessage): number => {
    try {
      const measure = measureMessage(m, 'generic');
      return (measure.chars / CHARS_PER_TOKEN) * correction + measure.mediaTokens;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  };
  const valid = validMessages(messages).messages;
  const systems = valid.filter((m) => m.role === 'system');
  let requestIndex = -1;
  for (let i = valid.length - 1; i >= 0 && requestIndex < 0; i--) if (valid[i]?.role === 'user') requestIndex = i;
  let room = threshold - systems.reduce((n, m) => n + tokensOf(m), 0);
  const out: GuardMessage[] = [...systems];
  let request = requestIndex >= 0 ? (valid[requestIndex] as UserMessage) : undefined;
  if (request) {
    const cost = tokensOf(request);
    try {
      if (!(cost <= room))
        request = clippedRequest(request, Math.max(MIN_REQUEST_CHARS, (room / correction) * CHARS_PER_TOKEN - 200));
    } catch {
      // A request whose parts cannot even be read cannot be sent either.
      request = { role: 'user', content: '[The latest message could not be read.]' };
    }
    room -= tokensOf(request);
  }
  try {
    const rest = valid.filter((m, i) => m.role !== 'system' && i !== requestIndex);
    if (rest.length > 0 && room > 0) {
      const maxChars = Math.floor(((room * 0.8) / correction) * CHARS_PER_TOKEN) - 200;
      if (maxChars > 400) out.push(summaryMessage(mechanicalSummary(rest, { maxChars })));
    }
  } catch {
    // The digest is a courtesy: the request alone is a valid prompt.
  }
  if (request) out.push(request);
  return out;
}

/** The request's text cut to about `maxChars`; its media named instead of sent. */
function clippedRequest(request: UserMessage, maxChars: number): UserMessage {
  const text =
    typeof request.content === 'string'
      ? request.content
      : request.content
          .map((p) =>
            p?.type === 'text'
              ? p.text
              : p?.type === 'image'
                ? mediaLabel('image', { data: p.image, mediaType: p.mediaType })
                : mediaLabel('file', p),
          )
          .join('\n');
  return { role: 'user', content: text.length > maxChars ? clipMiddle(text, Math.floor(maxChars)) : text };
}

/**
 * How far `input` has the same messages as those `keys` describes (`canon`, in canonical form)
 * from `from` on, below `limit`: the same object, or one the host rebuilt around the same content
 * (see MessageKeys). An entry that cannot even be compared (a getter that throws) ends the run: it
 * is checked as a new entry.
 */
function sameUpTo(
  keys: MessageKeys,
  canon: readonly GuardMessage[],
  input: readonly unknown[],
  from: number,
  limit: number,
): number {
  try {
    return keys.matching(input, canon, from, limit);
  } catch {
    // Compared again one by one, to find the entry that throws: checked from there (problemOf catches).
    let i = from;
    try {
      while (i < limit && keys.matching(input, canon, i, i + 1) === i + 1) i++;
    } catch {
      // Entry i cannot be read.
    }
    return i;
  }
}

/**
 * Messages at the start of the history compared on every call (with any further leading system
 * messages): a new conversation on the same session id shows there first.
 */
export const HEAD_MESSAGES = 4;
/**
 * The last messages known before a call, compared on every call: where hosts edit (a retry, a
 * rewritten last step). An edit further back is found by the rotating slice.
 */
export const BOUNDARY_MESSAGES = 8;
/**
 * Older messages compared per call, in rotation, when the host resends its message objects (one
 * identity comparison each): each is compared again at least every ceil(N / this) calls.
 */
export const SLICE_MESSAGES = 64;
/**
 * The same, when the host rebuilt its messages on the last call (the AI SDK): each comparison then
 * reads the host's freshly built objects, which its own rebuild has pushed out of the processor's
 * caches (about 15-25 ns a message at 2,550 messages, BENCHMARKS.md). Each message is compared again
 * at least every ceil(N / this) calls.
 */
export const REBUILT_SLICE_MESSAGES = 16;

/** A session's last input whose entries were all messages. */
interface CheckedHistory {
  /** For each position, the object first seen there with that content (an array that only grows). */
  canon: GuardMessage[];
  /** The content fields of `canon`'s messages, to compare rebuilt messages with. */
  keys: MessageKeys;
  /** Where the next rotating slice of older messages starts. */
  cursor: number;
  /** The last check matched some messages by content (the host rebuilds them): the smaller slice. */
  rebuilt: boolean;
  /** Whether every message of the last input was compared (none of it taken on trust). */
  verified: boolean;
}

/** What the input check found: the messages, and how far they were compared. */
export interface CheckedInput extends ValidatedMessages {
  /** Leading entries found the same as the last call's; the input's length when nothing changed. */
  unchanged: number;
}

/**
 * Remembers, per session, the last input whose entries were all messages, in canonical form: for
 * each position, the object first seen there with that content. The next call compares its
 * messages with it, by identity when the host resends its objects, by content fields when it
 * rebuilt them (the AI SDK: one comparison per field of each part, never a walk of the values),
 * and checks only the entries after the first that differs.
 *
 * In `amortized` mode (the default) a long history is not compared whole on every call: only the
 * first messages, the last BOUNDARY_MESSAGES known before, and a rotating slice of the others
 * (every message again at least every ceil(N / SLICE_MESSAGES) calls, ceil(N /
 * REBUILT_SLICE_MESSAGES) for a host that rebuilds its messages), then what was added. A
 * difference found anywhere compares everything. The rest is taken on trust until its turn, and
 * `verify` compares it all when the call must be exact (before a compaction decides anything).
 * What is taken on trust only feeds the estimate: the prompt sent is always built from the host's
 * own objects (prepare.ts renders the view from them), so an edit not yet found may skew the
 * estimate for a few calls but never reverts the host's edit.
 *
 * The canonical array only grows (an edit or a removal starts a new one from a copy of the
 * unchanged part), so its first `n` entries never change once handed out, whatever later calls
 * add. It is handed to the call that measures this input (canonicalForms, read by call.ts): the
 * measures of earlier calls hold for the entries they covered, and those are not looked at again.
 */
export class CheckedInputs {
  private readonly last: RecentMap<string, CheckedHistory>;
  private readonly amortized: boolean;

  constructor(max: number, historyCheck: 'amortized' | 'full' = 'amortized') {
    this.last = new RecentMap(max);
    this.amortized = historyCheck === 'amortized';
  }

  check(sessionId: string, input: readonly unknown[], full = false): CheckedInput {
    const history = this.last.get(sessionId);
    const n = input.length;
    let same = 0;
    let rebuilt = false;
    let verified = true;
    if (history) {
      const { canon, keys } = history;
      const known = canon.length;
      if (this.amortized && !full && n >= known && known > HEAD_MESSAGES + BOUNDARY_MESSAGES + SLICE_MESSAGES) {
        const sampled = sample(history, input);
        if (sampled !== undefined) {
          same = known;
          rebuilt = sampled;
          verified = false;
        }
      }
      if (verified) {
        // Everything compared: by identity up to the first object that differs, then by content.
        const limit = Math.min(n, known);
        while (same < limit && input[same] === canon[same]) same++;
        const identical = same;
        if (same < limit) same = sameUpTo(keys, canon, input, same, limit);
        rebuilt = same > identical;
      }
    }
    const checked = validMessages(input, same, history?.canon);
    if (checked.dropped.length > 0) {
      // Nothing of this input is remembered: the next call checks every entry again.
      this.last.delete(sessionId);
      canonicalForms.delete(input);
      return { ...checked, unchanged: same };
    }
    const canon = history?.canon;
    // Grown in place when only new entries follow the known ones; otherwise a new array.
    const next = canon && same === canon.length ? canon : (canon?.slice(0, same) ?? []);
    const keys = history?.keys ?? new MessageKeys();
    keys.truncate(same);
    try {
      for (let i = same; i < n; i++) {
        next.push(input[i] as GuardMessage);
        keys.push(input[i] as GuardMessage);
      }
    } catch {
      // A field that cannot be read twice (a hostile getter): nothing is remembered, the next call
      // checks everything again, and this one measures the input as it is.
      this.last.delete(sessionId);
      canonicalForms.delete(input);
      return { ...checked, unchanged: same };
    }
    const kept: CheckedHistory = history ?? { canon: next, keys, cursor: 0, rebuilt, verified };
    kept.canon = next;
    kept.rebuilt = rebuilt;
    kept.verified = verified;
    this.last.set(sessionId, kept);
    canonicalForms.set(input, { messages: next, length: n, rebuilt });
    return { messages: checked.messages, dropped: checked.dropped, reasons: checked.reasons, unchanged: same };
  }

  /**
   * Compares every message of `input`, the array the session's last check took partly on trust
   * (see check): undefined when all of them are the same (or nothing was taken on trust); else the
   * input checked again from the first message that differs, with its canonical form replaced.
   */
  verify(sessionId: string, input: readonly unknown[]): CheckedInput | undefined {
    const history = this.last.get(sessionId);
    if (!history || history.verified || history.canon.length !== input.length) return undefined;
    const checked = this.check(sessionId, input, true);
    return checked.unchanged === input.length && checked.dropped.length === 0 ? undefined : checked;
  }

  forget(sessionId: string): void {
    this.last.delete(sessionId);
  }
}

/**
 * Whether `input`'s first messages, the last BOUNDARY_MESSAGES known before and the next rotating
 * slice of the others are the same as the known ones: undefined when one differs (or cannot be
 * read), else whether any of them was matched by content rather than identity (a rebuilt history).
 * Advances the rotation.
 */
function sample(history: CheckedHistory, input: readonly unknown[]): boolean | undefined {
  const { canon, keys } = history;
  const known = canon.length;
  let head = HEAD_MESSAGES;
  while (head < known && keys.roleOf(head) === 'system') head++;
  const boundary = Math.max(head, known - BOUNDARY_MESSAGES);
  const from = history.cursor >= head && history.cursor < boundary ? history.cursor : head;
  // As many more as the call added: the rotation gains a full slice on the history's growth on every
  // call, however fast the host adds messages, so that it comes round within ceil(N / slice) calls.
  const size = (history.rebuilt ? REBUILT_SLICE_MESSAGES : SLICE_MESSAGES) + (input.length - known);
  const to = Math.min(boundary, from + size);
  const head0 = sameRun(history, input, 0, head);
  if (head0 === undefined) return undefined;
  const last = sameRun(history, input, boundary, known);
  if (last === undefined) return undefined;
  const slice = sameRun(history, input, from, to);
  if (slice === undefined) return undefined;
  history.cursor = to >= boundary ? head : to;
  return head0 || last || slice;
}

/**
 * Whether `input` has the known messages from `start` to `end`: undefined when one differs, else
 * whether any was matched by content rather than identity.
 */
function sameRun(history: CheckedHistory, input: readonly unknown[], start: number, end: number): boolean | undefined {
  const { canon, keys } = history;
  let i = start;
  while (i < end && input[i] === canon[i]) i++;
  if (i === end) return false;
  return sameUpTo(keys, canon, input, i, end) === end ? true : undefined;
}

/**
 * The prompt a call that failed inside the guard sends, with its estimate at `correction`: the
 * smallest prompt that fits `threshold` (see minimalPrompt); the messages as they are when no
 * threshold is known (no window: every call for that model is unguarded). Never throws.
 */
export function failClosedPrompt(
  messages: readonly GuardMessage[],
  threshold: number,
  correction: number,
): { messages: GuardMessage[]; tokens: number } {
  if (!Number.isFinite(threshold)) return { messages: messages.slice(), tokens: 0 };
  const out = minimalPrompt(messages, threshold, correction);
  let tokens = 0;
  for (const m of out) {
    try {
      const measure = measureMessage(m, 'generic');
      tokens += (measure.chars / CHARS_PER_TOKEN) * correction + measure.mediaTokens;
    } catch {
      // Counted as nothing: minimalPrompt already priced what it kept.
    }
  }
  return { messages: out, tokens: Math.ceil(tokens) };
}

/**
 * A call that failed inside the guard: never the raw input, the smallest prompt that fits (unguarded only without any
 * window).
 */
export function failClosed(
  resolver: CallResolver,
  options: ResolvedOptions,
  input: BeforeModelInput | undefined,
  messages: readonly GuardMessage[],
): BeforeModelResult {
  const sessionId = input?.sessionId ?? '';
  // The configured window, else the fallback, if resolving it again is what failed: never none.
  let contextWindow = options.contextWindow ?? options.fallbackContextWindow;
  try {
    contextWindow = resolver.window(sessionId, input?.modelId, input?.contextWindow);
  } catch {
    // Keep the configured or fallback window.
  }
  const threshold = resolver.threshold(sessionId, contextWindow);
  const sent = failClosedPrompt(validMessages(messages).messages, threshold, options.calibration.default);
  return { ...sent, threshold, contextWindow, fraction: contextWindow ? sent.tokens / contextWindow : 0 };
}
