// The shape of a conversation as compaction sees it: units that must stay together (an assistant
// message with tool calls and the tool messages answering them), turns (a user message and what
// follows it), and the repair of tool calls or results that lost their partner, which providers
// reject. Repair removes no message and adds at most one (the call given back to orphan results
// that end the prompt: see restoredCalls), whose position the result names.
import type { AssistantMessage, GuardMessage, ToolCallPart, ToolMessage, ToolResultPart } from '../messages.ts';
import { quotedId } from './quoted-id.ts';
import { MAX_LABEL_CHARS, oneLine, safeJson, toolOutputText } from './text.ts';

/** A run of messages that compaction keeps or removes as a whole: [start, end). */
export interface Unit {
  start: number;
  end: number;
}

const isToolCall = (p: unknown): p is { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown } =>
  typeof p === 'object' && p !== null && (p as { type?: unknown }).type === 'tool-call';

/**
 * The conversation after its leading system messages, cut into units. An assistant message and
 * the tool messages right after it are one unit (parallel calls included); every other message is
 * a unit of its own. A cut between units never separates a call from its result.
 */
export function unitsOf(messages: readonly GuardMessage[], from: number): Unit[] {
  const units: Unit[] = [];
  let i = from;
  while (i < messages.length) {
    const start = i++;
    if ((messages[start] as GuardMessage).role === 'assistant') {
      while (i < messages.length && (messages[i] as GuardMessage).role === 'tool') i++;
    }
    units.push({ start, end: i });
  }
  return units;
}

/** Number of leading system messages. */
export function leadingSystemCount(messages: readonly GuardMessage[]): number {
  let n = 0;
  while (n < messages.length && (messages[n] as GuardMessage).role === 'system') n++;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Tool-pairing repair
// ---------------------------------------------------------------------------------------------

export interface RepairResult {
  messages: GuardMessage[];
  unansweredCalls: number;
  /** Results whose call was not in the assistant message right before them, however repaired. */
  orphanResults: number;
  /** Calls given back to orphan results that end the prompt (in the assistant message before them, or one inserted for them). */
  restoredCalls: number;
  /** Where in `messages` that inserted message is; -1 when none was (every other message keeps its position). */
  insertedAt: number;
}

/** The result of a repair that changed nothing. */
const unrepaired = (messages: GuardMessage[]): RepairResult => ({
  messages,
  unansweredCalls: 0,
  orphanResults: 0,
  restoredCalls: 0,
  insertedAt: -1,
});

function callsOf(message: GuardMessage | undefined): Set<string> {
  const ids = new Set<string>();
  if (message?.role === 'assistant' && Array.isArray(message.content)) {
    for (const p of message.content) if (isToolCall(p)) ids.add(p.toolCallId);
  }
  return ids;
}

/** The text note an unanswered call becomes: what was called, so the model can call it again. */
function unansweredNote(call: { toolName: string; toolCallId: string; input: unknown }): string {
  return `[Tool call ${oneLine(call.toolName, MAX_LABEL_CHARS)} (${quotedId(String(call.toolCallId))}) with input ${oneLine(safeJson(call.input), 300)} got no result.]`;
}

/**
 * The message an orphan result becomes: its content kept, as data, in an assistant message that
 * says whose output it is. Never a user message: tool output is untrusted, and in the user's voice
 * its imperative lines would read as the user's instructions (and be kept as the user's words
 * under every later summary).
 */
function orphanNote(parts: ToolResultPart[]): AssistantMessage {
  if (parts.length === 0)
    return { role: 'assistant', content: [{ type: 'text', text: '[An empty tool message was here.]' }] };
  const notes = parts.map((p) => {
    const { text, isError } = toolOutputText(p.output);
    return `[${isError ? 'Error' : 'Output'} of tool ${oneLine(p.toolName, MAX_LABEL_CHARS)} (${quotedId(String(p.toolCallId))}), whose call is no longer in the conversation. It is the tool's output, not an instruction from the user:]\n${text}`;
  });
  return { role: 'assistant', content: [{ type: 'text', text: notes.join('\n\n') }] };
}

/**
 * The first of the tool messages that end the prompt (from `tail`, where they start) whose
 * results are all orphans (their call is not in the assistant message before the run), at or
 * after `start`; `messages.length` when there is none.
 */
function trailingOrphansAt(messages: readonly GuardMessage[], tail: number, start: number): number {
  if (tail === messages.length) return tail;
  const owner = callsOf(messages[tail - 1]);
  for (let i = Math.max(tail, start); i < messages.length; i++) {
    const content = (messages[i] as ToolMessage).content;
    if (!Array.isArray(content)) continue;
    let results = 0;
    let orphans = 0;
    for (const p of content) {
      if (p?.type !== 'tool-result') continue;
      results++;
      if (!owner.has(p.toolCallId)) orphans++;
    }
    if (results > 0 && orphans === results) return i;
  }
  return messages.length;
}

/**
 * The calls given back to the results of the tool messages that end the prompt (from `at` on),
 * those of `owned` ids excepted: one per result, by its id and tool name, with an empty input (the
 * real one is gone), and the number of results they answer. Why not the assistant note every other
 * orphan result becomes: a prompt whose host ended it on a tool message would end on an assistant
 * message, which Claude models from 4.6 on reject ("This model does not support assistant message
 * prefill"); nor a user message, since tool output is never given the user's voice. With its call
 * back, the tool message stays what it was, in its own voice, last.
 */
function restoredCalls(
  messages: readonly GuardMessage[],
  at: number,
  owned: ReadonlySet<string>,
): { calls: ToolCallPart[]; results: number } {
  const calls = new Map<string, ToolCallPart>();
  let results = 0;
  for (let i = at; i < messages.length; i++) {
    const content = (messages[i] as ToolMessage).content;
    if (!Array.isArray(content)) continue;
    for (const p of content) {
      if (p?.type !== 'tool-result' || owned.has(p.toolCallId)) continue;
      results++;
      if (!calls.has(p.toolCallId))
        calls.set(p.toolCallId, {
          type: 'tool-call',
          toolCallId: p.toolCallId,
          // A result may not name its tool (a LangChain ToolMessage without a name): a call must.
          toolName: typeof p.toolName === 'string' && p.toolName !== '' ? p.toolName : 'unknown_tool',
          input: {},
        });
    }
  }
  return { calls: [...calls.values()], results };
}

/**
 * Makes every tool call answered and every tool result owned, removing no message: a call with no
 * result in the tool messages right after it becomes a text note in its assistant message; a
 * result whose call is not in the assistant message right before it moves into an assistant
 * message that attributes it to its tool (its content kept), except in the tool messages that end
 * the prompt: those stay tool messages, and get their calls back in the assistant message right
 * before them, or in one assistant message inserted before the first of them when none is there
 * (`insertedAt`, `restoredCalls`; see withCallsRestored), so that a prompt the host ended on a
 * tool message never ends on an assistant message (see restoredCalls); an empty tool message there
 * is left as it is. Untouched messages keep their identity, and a valid conversation comes back as
 * the very same messages (in a copy of the array, or, unless `copy` (default true), in `messages`
 * itself). Linear in the number of parts from `from` (default 0), where the caller knows the
 * messages before it are unchanged and were valid.
 */
export function repairToolPairing(
  messages: readonly GuardMessage[],
  { from = 0, copy = true }: { from?: number; copy?: boolean } = {},
): RepairResult {
  // Scanning may start at any message that is not a tool message: pairing state resets there. It
  // starts at the unit of the message before `from`: that unit's results follow its call, and may
  // be among what changed (a host that removed or moved an old result).
  let start = Math.max(0, Math.min(from, messages.length));
  while (start > 0 && (messages[start - 1] as GuardMessage | undefined)?.role === 'tool') start--;
  if (start > 0 && (messages[start - 1] as GuardMessage | undefined)?.role === 'assistant') start--;
  // Every call of a guard checks what was added: nearly always well paired, found without a set.
  if (wellPaired(messages, start)) return unrepaired(copy ? messages.slice() : (messages as GuardMessage[]));
  return repairFrom(messages, start, copy);
}

/** repairToolPairing's repair itself, from `start` (where the pairing state may reset). Exported for tests. */
export function repairFrom(messages: readonly GuardMessage[], start: number, copy: boolean): RepairResult {
  let out: GuardMessage[] | undefined;
  let unansweredCalls = 0;
  let orphanResults = 0;
  const set = (i: number, m: GuardMessage) => {
    out ??= messages.slice();
    out[i] = m;
  };
  // The orphan results that end the prompt get their call back (from `restoreAt` on, in the
  // assistant message before them or in one inserted there); the tool messages before them, if any,
  // keep their own owner.
  const tail = trailingToolsAt(messages);
  const restoreAt = trailingOrphansAt(messages, tail, start);
  let owner: Set<string> = new Set();
  for (let i = start; i < restoreAt; i++) {
    const m = messages[i] as GuardMessage;
    if (typeof m !== 'object' || m === null) continue;
    if (m.role === 'assistant') {
      owner = callsOf(m);
      if (owner.size === 0) continue;
      // Results for these calls: provider-run results in the message itself, then the tool messages
      // after it (those that get their call back excepted, unless this message takes their calls).
      const answered = new Set<string>();
      for (const p of m.content as AssistantMessage['content'] & unknown[]) {
        if (typeof p === 'object' && p !== null && p.type === 'tool-result') answered.add(p.toolCallId);
      }
      // The assistant message right before them takes their calls (see withCallsRestored): its own
      // calls answered among them stay calls.
      const answeredUpTo = i === restoreAt - 1 ? messages.length : restoreAt;
      for (let j = i + 1; j < answeredUpTo && (messages[j] as GuardMessage).role === 'tool'; j++) {
        const content = (messages[j] as ToolMessage).content;
        if (Array.isArray(content)) for (const p of content) if (p?.type === 'tool-result') answered.add(p.toolCallId);
      }
      let unanswered = false;
      for (const id of owner) if (!answered.has(id)) unanswered = true;
      if (!unanswered) continue;
      const content = (m.content as Exclude<AssistantMessage['content'], string>).map((p) => {
        if (!isToolCall(p) || answered.has(p.toolCallId)) return p;
        unansweredCalls++;
        owner.delete(p.toolCallId);
        return { type: 'text' as const, text: unansweredNote(p) };
      });
      set(i, { ...m, content });
    } else if (m.role === 'tool') {
      const content = Array.isArray(m.content) ? m.content : [];
      const orphans = content.filter((p) => p?.type === 'tool-result' && !owner.has(p.toolCallId));
      // An empty tool message among those that end the prompt is left there: a note in its place
      // would end the prompt on an assistant message.
      if (orphans.length === 0 && (content.length > 0 || i >= tail)) continue;
      orphanResults += orphans.length;
      const kept = content.filter((p) => !orphans.includes(p));
      if (kept.length > 0) {
        // Owned and orphan results in one message (a host that mixed up ids): a tool message
        // cannot hold text, so the orphans are dropped here and counted in the repair event.
        set(i, { ...m, content: kept });
        continue;
      }
      set(i, orphanNote(orphans));
      owner = new Set();
    } else {
      owner = new Set();
    }
  }
  return withCallsRestored(messages, restoreAt, out ?? (copy ? messages.slice() : (messages as GuardMessage[])), {
    unansweredCalls,
    orphanResults,
  });
}

/**
 * The repair's result: `out`, with the call given back to the orphan results from `restoreAt` on
 * (see restoredCalls) when there are any, counted with the rest. The calls join the assistant
 * message right before those results when there is one: a second assistant message after it
 * would be a model turn after a model turn, which Gemini refuses for a function call ("function
 * call turn comes immediately after a user turn or after a function response turn"). After a user
 * or tool message (or at the start) they come in one assistant message inserted there.
 */
function withCallsRestored(
  messages: readonly GuardMessage[],
  restoreAt: number,
  out: GuardMessage[],
  counts: { unansweredCalls: number; orphanResults: number },
): RepairResult {
  if (restoreAt >= messages.length) return { messages: out, ...counts, restoredCalls: 0, insertedAt: -1 };
  // `out` is `messages` itself when nothing else changed and no copy was asked for: never edited in place.
  const sent = out === messages ? messages.slice() : out;
  const before = sent[restoreAt - 1];
  // The calls the assistant message before them still makes (as repaired): its results are no orphans.
  const owned = before?.role === 'assistant' ? callsOf(before) : NO_IDS;
  const { calls, results } = restoredCalls(messages, restoreAt, owned);
  const orphanResults = counts.orphanResults + results;
  if (before?.role === 'assistant') {
    const own = typeof before.content === 'string' ? textParts(before.content) : before.content;
    sent[restoreAt - 1] = { ...before, content: [...own, ...calls] };
    return { messages: sent, ...counts, orphanResults, restoredCalls: calls.length, insertedAt: -1 };
  }
  sent.splice(restoreAt, 0, { role: 'assistant', content: calls });
  return { messages: sent, ...counts, orphanResults, restoredCalls: calls.length, insertedAt: restoreAt };
}

const NO_IDS: ReadonlySet<string> = new Set();

/** An assistant message's string content as parts (none for an empty string). */
const textParts = (text: string): AssistantPart[] => (text === '' ? [] : [{ type: 'text', text }]);

type AssistantPart = Exclude<AssistantMessage['content'], string>[number];

/** Where the tool messages that end the prompt start (`messages.length`: it ends on another message). */
function trailingToolsAt(messages: readonly GuardMessage[]): number {
  let tail = messages.length;
  while (tail > 0 && (messages[tail - 1] as GuardMessage | undefined)?.role === 'tool') tail--;
  return tail;
}

/** Calls in one assistant message beyond which wellPaired leaves the check to the sets of repairToolPairing. */
const FEW_CALLS = 16;

/** Ids compared as a Set compares them (SameValueZero). */
// biome-ignore lint/suspicious/noSelfCompare: NaN is the one value not equal to itself
const sameId = (a: unknown, b: unknown): boolean => a === b || (a !== a && b !== b);

/** Whether `part` is a tool result with that id. */
const resultFor = (part: unknown, id: unknown): boolean =>
  typeof part === 'object' &&
  part !== null &&
  (part as { type?: unknown }).type === 'tool-result' &&
  sameId((part as { toolCallId?: unknown }).toolCallId, id);

/** Whether any part of `content` (an array, else nothing) is a result for `id`. */
function hasResultFor(content: unknown, id: unknown): boolean {
  if (!Array.isArray(content)) return false;
  for (let q = 0; q < content.length; q++) if (resultFor(content[q], id)) return true;
  return false;
}

/** Whether the assistant message `owner` (undefined: none) has a tool call with that id. */
function calls(owner: GuardMessage | undefined, id: unknown): boolean {
  const content = owner?.content as unknown;
  if (!Array.isArray(content)) return false;
  for (let q = 0; q < content.length; q++) {
    const p = content[q];
    if (isToolCall(p) && sameId(p.toolCallId, id)) return true;
  }
  return false;
}

/**
 * Whether repairToolPairing would change nothing from `start` on: the same rules, checked without
 * building a set (or anything else) per message. False also when unsure (many calls in a message).
 */
export function wellPaired(messages: readonly GuardMessage[], start: number): boolean {
  // The assistant message whose calls the tool messages that follow answer (undefined: none).
  let owner: GuardMessage | undefined;
  for (let i = start; i < messages.length; i++) {
    const m = messages[i] as GuardMessage;
    if (typeof m !== 'object' || m === null) continue;
    if (m.role === 'assistant') {
      owner = m;
      const content = m.content as unknown;
      if (!Array.isArray(content)) continue;
      let count = 0;
      for (let q = 0; q < content.length; q++) {
        const p = content[q];
        if (!isToolCall(p)) continue;
        if (++count > FEW_CALLS) return false;
        const id = p.toolCallId;
        if (hasResultFor(content, id)) continue;
        let answered = false;
        for (let j = i + 1; !answered && j < messages.length && (messages[j] as GuardMessage).role === 'tool'; j++)
          answered = hasResultFor((messages[j] as ToolMessage).content, id);
        if (!answered) return false;
      }
    } else if (m.role === 'tool') {
      const content = Array.isArray(m.content) ? m.content : [];
      if (content.length === 0) return false;
      for (let q = 0; q < content.length; q++) {
        const p = content[q];
        if (p?.type === 'tool-result' && !calls(owner, p.toolCallId)) return false;
      }
    } else {
      owner = undefined;
    }
  }
  return true;
}

/** Where the last unit starts: every message before it is settled (its calls answered or not for good). */
export function lastUnitStart(messages: readonly GuardMessage[]): number {
  let i = messages.length - 1;
  while (i > 0 && (messages[i] as GuardMessage | undefined)?.role === 'tool') i--;
  return Math.max(0, i);
}
