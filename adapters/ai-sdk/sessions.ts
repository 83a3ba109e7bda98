// Which session a tool call belongs to. A tool's execute function learns only its call id and the
// messages (without the system prompt), not the session the middleware used; so the middleware
// notes the session of every tool call the model makes, and the compact tool looks it up.
import type { ContextGuard } from '../../src/index.ts';
import { BoundedMap } from '../shared/bounded-map.ts';

const MAX_CALLS = 10_000;
const byGuard = new WeakMap<ContextGuard, BoundedMap<string, string>>();

/** Notes the session of each tool-call part in a model response. */
export function recordToolCalls(guard: ContextGuard, sessionId: string, content: unknown): void {
  if (!Array.isArray(content)) return;
  let calls = byGuard.get(guard);
  for (const part of content) {
    if ((part as { type?: unknown })?.type !== 'tool-call') continue;
    const id = (part as { toolCallId?: unknown }).toolCallId;
    if (typeof id !== 'string') continue;
    if (!calls) byGuard.set(guard, (calls = new BoundedMap(MAX_CALLS)));
    calls.set(id, sessionId);
  }
}

/** The session a tool call was made in, when the middleware saw it. */
export function sessionOfToolCall(guard: ContextGuard, toolCallId: string): string | undefined {
  return byGuard.get(guard)?.get(toolCallId);
}
