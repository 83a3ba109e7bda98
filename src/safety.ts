// The guard's last lines of defence against what it cannot trust: entries of the host's message
// array that are not messages, and its own bugs. Bad entries are left out (and reported) before
// anything else looks at the prompt; when a call fails anyway, the guard fails closed: it sends
// the smallest prompt that fits (system messages, a digest of the rest, the latest user request),
// never the raw input, which may be far over the window.
import type { GuardMessage, UserMessage } from './messages.ts';
import { mechanicalSummary } from './compaction/mechanical.ts';
import { summaryMessage } from './compaction/placement.ts';
import { clipMiddle, mediaLabel } from './compaction/text.ts';
import { CHARS_PER_TOKEN, measureMessage } from './tokens/heuristic.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** Deepest nesting searched for a cycle: no provider accepts deeper JSON anyway. */
const MAX_DEPTH = 64;

/** Whether a value refers to itself (a cycle no provider can serialize). */
function hasCycle(value: unknown, ancestors: object[]): boolean {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof URL) return false;
  if (ancestors.includes(value)) return true;
  if (ancestors.length >= MAX_DEPTH) return false;
  ancestors.push(value);
  try {
    for (const v of Array.isArray(value) ? value : Object.values(value)) if (hasCycle(v, ancestors)) return true;
    return false;
  } finally {
    ancestors.pop();
  }
}

/**
 * Messages and parts already found free of cycles. The check walks a part once: hosts resend the
 * same objects call after call (the AI SDK's converted parts included), so later calls only look it up.
 */
const acyclic = new WeakSet<object>();

function isAcyclic(entry: object, parts: readonly unknown[]): boolean {
  if (acyclic.has(entry)) return true;
  for (const part of parts) {
    if (typeof part !== 'object' || part === null || acyclic.has(part)) continue;
    if (hasCycle(part, [])) return false;
    acyclic.add(part);
  }
  acyclic.add(entry);
  return true;
}

/** Why an entry cannot be sent, or undefined when it is a message. Cheap: runs on every entry of every call. */
function problemOf(entry: unknown): string | undefined {
  if (entry === null || typeof entry !== 'object') return entry === null ? 'null' : `a ${typeof entry}, not a message`;
  let role: unknown;
  let content: unknown;
  try {
    ({ role, content } = entry as { role?: unknown; content?: unknown });
  } catch {
    return 'its fields cannot be read';
  }
  if (typeof role !== 'string' || !ROLES.has(role)) return `unknown role ${JSON.stringify(String(role)).slice(0, 40)}`;
  if (typeof content === 'string') return role === 'tool' ? 'tool message whose content is not an array of results' : undefined;
  if (!Array.isArray(content)) return 'content is neither a string nor an array of parts';
  try {
    if (!isAcyclic(entry, content)) return 'a part refers to itself (a cycle cannot be sent as JSON)';
  } catch {
    return 'its parts cannot be read';
  }
  return undefined;
}

export interface ValidatedMessages {
  messages: readonly GuardMessage[];
  /** Indices (in the input) of the entries left out, with the reason for each. */
  dropped: number[];
  reasons: string[];
}

/** The input without the entries that are not messages; the input itself when every entry is one. */
export function validMessages(input: readonly unknown[]): ValidatedMessages {
  let dropped: number[] | undefined;
  let reasons: string[] | undefined;
  for (let i = 0; i < input.length; i++) {
    const problem = problemOf(input[i]);
    if (problem === undefined) continue;
    (dropped ??= []).push(i);
    (reasons ??= []).push(problem);
  }
  if (!dropped || !reasons) return { messages: input as readonly GuardMessage[], dropped: [], reasons: [] };
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
export function minimalPrompt(messages: readonly GuardMessage[], threshold: number, correction: number): GuardMessage[] {
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
      if (!(cost <= room)) request = clippedRequest(request, Math.max(MIN_REQUEST_CHARS, (room / correction) * CHARS_PER_TOKEN - 200));
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
      : request.content.map((p) => (p?.type === 'text' ? p.text : p?.type === 'image' ? mediaLabel('image', { data: p.image, mediaType: p.mediaType }) : mediaLabel('file', p))).join('\n');
  return { role: 'user', content: text.length > maxChars ? clipMiddle(text, Math.floor(maxChars)) : text };
}
