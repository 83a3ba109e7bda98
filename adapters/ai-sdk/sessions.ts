// Which session a tool call belongs to. A tool's execute function learns only its call id and the
// messages of the step that made the call (without the system prompt), not the session the
// middleware used; so the middleware notes the session of every tool call the model makes, and the
// compact and recall tools look it up. The note is keyed by the call id AND a key of the
// conversation the call was made in: models reuse call ids (`call_0` in every conversation), and a
// tool of one session must never act on another's because their ids met.
import { LRUCache } from 'lru-cache';
import type { ContextGuard } from '../../src/index.ts';
import { atMostEntries } from '../shared/bounded.ts';

/** Tool calls remembered per guard (the newest); what one costs is an id, a 16-character key and a session id. */
export const MAX_TRACKED_TOOL_CALLS = 10_000;

/** The session a tool call was made in, and whether its id was derived from the conversation's start. */
export interface ToolCallSession {
  sessionId: string;
  /**
   * Derived ids are shared by every conversation that starts alike: recall then returns only what
   * the asking conversation itself holds.
   */
  derived: boolean;
}

const byGuard = new WeakMap<ContextGuard, LRUCache<string, ToolCallSession>>();

function mix(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * A key of a conversation's non-system messages, the same for the prompt the middleware sees (the
 * provider's message shapes) and the messages a tool's execute function gets (the SDK's
 * `ModelMessage`s): the roles, the text of text parts (a string content counts as one text part),
 * and the ids of tool calls and results. Consecutive messages of one role count as one (the SDK may
 * join them), empty text and parts of other types are skipped (the SDK drops some on the way).
 * Linear in the conversation's prose; tool outputs are not read.
 */
export function conversationKey(messages: readonly unknown[]): string {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  const add = (s: string) => {
    a = mix(a, s);
    b = mix(b, s);
  };
  let lastRole: string | undefined;
  for (const m of Array.isArray(messages) ? messages : []) {
    const role = (m as { role?: unknown } | null)?.role;
    if (typeof role !== 'string' || role === 'system') continue;
    const content = (m as { content?: unknown }).content;
    const tokens: string[] = [];
    if (typeof content === 'string') {
      if (content !== '') tokens.push(`t${content}`);
    } else if (Array.isArray(content)) {
      for (const part of content as Array<Record<string, unknown> | null>) {
        const type = part?.type;
        if (type === 'text' && typeof part?.text === 'string' && part.text !== '') tokens.push(`t${part.text}`);
        else if ((type === 'tool-call' || type === 'tool-result') && typeof part?.toolCallId === 'string')
          tokens.push(`${type === 'tool-call' ? 'c' : 'r'}${part.toolCallId}`);
      }
    }
    if (tokens.length === 0) continue;
    if (role !== lastRole) add(`\u0000r${role}`);
    lastRole = role;
    for (const t of tokens) add(`\u0000${t}`);
  }
  return `${a.toString(16).padStart(8, '0')}${b.toString(16).padStart(8, '0')}`;
}

const noteKey = (toolCallId: string, conversation: string) => `${conversation}\u0000${toolCallId}`;

/**
 * Notes the session of each tool-call part in a model response; `conversation` is the key of the
 * call's prompt (computed once per response, when it holds a tool call).
 */
export function recordToolCalls(
  guard: ContextGuard,
  session: ToolCallSession,
  conversation: () => string,
  content: unknown,
): void {
  if (!Array.isArray(content)) return;
  let calls = byGuard.get(guard);
  let key: string | undefined;
  for (const part of content) {
    if ((part as { type?: unknown })?.type !== 'tool-call') continue;
    const id = (part as { toolCallId?: unknown }).toolCallId;
    if (typeof id !== 'string') continue;
    if (!calls) byGuard.set(guard, (calls = new LRUCache(atMostEntries(MAX_TRACKED_TOOL_CALLS))));
    key ??= conversation();
    calls.set(noteKey(id, key), session);
  }
}

/**
 * The session a tool call was made in, when the middleware saw that call in this very conversation
 * (`messages`: what the tool's execute function is given).
 */
export function sessionOfToolCall(
  guard: ContextGuard,
  toolCallId: string,
  messages: readonly unknown[],
): ToolCallSession | undefined {
  const calls = byGuard.get(guard);
  if (!calls || typeof toolCallId !== 'string') return undefined;
  return calls.peek(noteKey(toolCallId, conversationKey(messages)));
}
