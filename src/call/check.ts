// The entry check: entries of the host's message array that are not messages (a wrong role, parts
// that are not strings where the guard reads text, a value that refers to itself or expands past
// any provider's limit) are left out and reported before anything else looks at the prompt; a tool
// message whose output is such a value keeps its place as a note of why (see standIn).
import type { GuardMessage } from '../messages.ts';
import { formatCount } from '../compaction/text.ts';

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
  /** Indices (in the input) of the entries left out (or sent as a stand-in), with the reason for each. */
  dropped: number[];
  reasons: string[];
}

// Shared by every input with nothing left out (the common call allocates no arrays for it); frozen,
// and never handed to a listener (events are sent only when something was left out).
const NONE = Object.freeze([]) as unknown as number[];
const NO_REASONS = Object.freeze([]) as unknown as string[];

/**
 * The input without the entries that are not messages (a tool message whose output cannot be sent
 * replaced by its stand-in); the input itself when every entry is one. Entries before `from` are
 * known to be messages (the caller checked the same objects before).
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
  const problems = new Map(dropped.map((at, k) => [at, reasons?.[k] ?? '']));
  const messages: GuardMessage[] = [];
  for (let i = 0; i < input.length; i++) {
    const problem = problems.get(i);
    if (problem === undefined) messages.push(input[i] as GuardMessage);
    else {
      const stand = standIn(input[i], problem);
      if (stand) messages.push(stand);
    }
  }
  return { messages, dropped, reasons };
}

/**
 * What stands for a tool message whose output cannot be sent (a cycle, or the same objects
 * repeated past what JSON can hold): its results, each by its id and tool name, with a note of why
 * as their output. Left out, it would leave its call without a result (a note in the assistant's
 * voice), and a prompt the host ended on it would end on an assistant message, which Claude models
 * from 4.6 on refuse (no prefill). Undefined for every other entry left out: nothing of it can be
 * read as sure (a wrong role, ids that are not strings).
 */
function standIn(entry: unknown, problem: string): GuardMessage | undefined {
  if (problem !== CYCLE && problem !== EXPANDS) return undefined;
  const { role, content } = entry as { role?: unknown; content?: unknown };
  if (role !== 'tool' || !Array.isArray(content)) return undefined;
  const value = `[The output of this call could not be sent: ${problem}.]`;
  const results = content.flatMap((part: { type?: unknown; toolCallId?: unknown; toolName?: unknown } | null) =>
    typeof part === 'object' && part !== null && part.type === 'tool-result' && typeof part.toolCallId === 'string'
      ? [
          {
            type: 'tool-result' as const,
            toolCallId: part.toolCallId,
            toolName: typeof part.toolName === 'string' ? part.toolName : '',
            output: { type: 'text' as const, value },
          },
        ]
      : [],
  );
  return results.length > 0 ? { role: 'tool', content: results } : undefined;
}
