// Measures a whole prompt at a cost that grows with what was added since the session's previous
// call, not with the whole history. Hosts resend the entire history on every call: LangChain
// reuses the message objects, the AI SDK rebuilds them around the same strings. So each message
// is matched against the one at the same position last time (same object, or a shallow copy of
// it), then against a per-object cache (messages kept after a compaction move position), and only
// then measured. The cache lives in this process only; the session state keeps just fingerprints.
import type { GuardMessage, ToolDefinition } from '../messages.ts';
import type { PromptFingerprint, RequestMeasure } from '../state/session.ts';
import { hashMessage } from './hash.ts';
import { measureMessage, measureTool } from './heuristic.ts';
import type { MediaProvider } from './media.ts';

/** One measured message. */
export interface Entry {
  message: GuardMessage;
  provider: MediaProvider;
  chars: number;
  mediaTokens: number;
  /** Content hash, so that an edit anywhere in an earlier prompt is noticed. */
  hash: number;
}

interface SessionCache {
  entries: Entry[];
  tools: readonly ToolDefinition[] | undefined;
  toolChars: number;
}

/** A measured prompt, with what the estimator needs to compare it with an earlier one. */
export interface MeasuredPrompt extends RequestMeasure {
  entries: readonly Entry[];
}

// Structural equality that is cheap when the two values share their strings and sub-objects, as
// copies made by the hosts do. Deep or unusual shapes give up (false) and are simply re-measured.
function sameValue(a: unknown, b: unknown, depth: number): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth === 0) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i], depth - 1)) return false;
    return true;
  }
  if (Array.isArray(b) || Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth - 1)) return false;
  }
  return true;
}

/** message → content → part → output → value: deep enough for every GuardMessage shape. */
const MESSAGE_DEPTH = 5;

export class PromptMeasurer {
  private readonly sessions = new Map<string, SessionCache>();
  private readonly byObject = new WeakMap<object, Entry>();
  private readonly toolCache = new WeakMap<object, number>();

  private readonly maxSessions: number;

  constructor(maxSessions: number) {
    this.maxSessions = maxSessions;
  }

  measure(
    sessionId: string,
    messages: readonly GuardMessage[],
    tools: readonly ToolDefinition[] | undefined,
    provider: MediaProvider,
  ): MeasuredPrompt {
    const cache = this.sessions.get(sessionId);
    const previous = cache?.entries ?? [];
    const entries: Entry[] = new Array(messages.length);
    let chars = 0;
    let mediaTokens = 0;
    let aligned = true;
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i] as GuardMessage;
      let entry: Entry | undefined;
      const prev = aligned ? previous[i] : undefined;
      if (prev && prev.provider === provider && (prev.message === message || sameValue(prev.message, message, MESSAGE_DEPTH))) {
        entry = prev.message === message ? prev : { ...prev, message };
      } else {
        aligned = false;
        const known = typeof message === 'object' && message !== null ? this.byObject.get(message) : undefined;
        entry = known && known.provider === provider ? known : this.measureOne(message, provider);
      }
      entries[i] = entry;
      chars += entry.chars;
      mediaTokens += entry.mediaTokens;
    }
    const toolChars = cache && cache.tools === tools ? cache.toolChars : this.measureTools(tools);
    // Re-inserting keeps the Map in least-recently-used order for eviction.
    this.sessions.delete(sessionId);
    this.sessions.set(sessionId, { entries, tools, toolChars });
    if (this.sessions.size > this.maxSessions) this.sessions.delete(this.sessions.keys().next().value as string);
    return {
      entries,
      chars: chars + toolChars,
      toolChars,
      mediaTokens,
      prompt: { messages: entries.length, chars, hash: prefixHash(entries, entries.length) },
    };
  }

  /** Forgets a session's cached measures (the per-object cache forgets on its own). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  private measureOne(message: GuardMessage, provider: MediaProvider): Entry {
    const { chars, mediaTokens } = measureMessage(message, provider);
    const entry: Entry = { message, provider, chars, mediaTokens, hash: hashMessage(message) };
    if (typeof message === 'object' && message !== null) this.byObject.set(message, entry);
    return entry;
  }

  private measureTools(tools: readonly ToolDefinition[] | undefined): number {
    if (!Array.isArray(tools)) return 0;
    let total = 0;
    for (const tool of tools) {
      if (typeof tool !== 'object' || tool === null) continue;
      let chars = this.toolCache.get(tool);
      if (chars === undefined) {
        chars = measureTool(tool);
        this.toolCache.set(tool, chars);
      }
      total += chars;
    }
    return total;
  }
}

/** Order-sensitive combination of the first `n` message hashes. */
function prefixHash(entries: readonly Entry[], n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < n; i++) h = Math.imul(h ^ (entries[i] as Entry).hash, 0x01000193);
  return h >>> 0;
}

/**
 * Whether `prompt` starts with the prompt `earlier` describes: the same leading messages, by count,
 * heuristic size and content hash. Cheap: one pass over cached per-message numbers.
 */
export function extendsPrompt(prompt: MeasuredPrompt, earlier: PromptFingerprint): boolean {
  const n = earlier.messages;
  if (n === 0 || n > prompt.entries.length) return false;
  let chars = 0;
  for (let i = 0; i < n; i++) chars += (prompt.entries[i] as Entry).chars;
  return chars === earlier.chars && prefixHash(prompt.entries, n) === earlier.hash;
}
