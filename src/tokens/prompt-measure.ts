// Measures a whole prompt at a cost that grows with what was added since the session's previous
// call, not with the whole history. Hosts resend the entire history on every call: LangChain
// reuses the message objects, the AI SDK rebuilds them around the same strings. So each message
// is matched against the one at the same position last time (same object, or a shallow copy of
// it), then against a per-object cache (messages kept after a compaction move position), and only
// then measured. The cache lives in this process only; the session state keeps just fingerprints.
import type { GuardMessage, ToolDefinition } from '../messages.ts';
import type { PromptFingerprint, RequestMeasure } from './fingerprint.ts';
import { hashMessage } from './hash.ts';
import type { TextMeasure } from './exact.ts';
import { measureMessage, measureTool } from './heuristic.ts';
import type { MediaProvider } from './media.ts';

/** One measured message. */
export interface Entry {
  message: GuardMessage;
  /** How it was measured (media pricing and text measure): measures of other kinds do not mix. */
  kind: string;
  chars: number;
  mediaTokens: number;
  /** Content hash, so that an edit anywhere in an earlier prompt is noticed. */
  hash: number;
}

interface SessionCache {
  kind: string;
  entries: Entry[];
  /** Running totals over `entries`: chars, media tokens and the prefix hash up to each message. */
  cumChars: number[];
  cumMedia: number[];
  cumHash: number[];
  tools: readonly ToolDefinition[] | undefined;
  toolChars: number;
}

/** A measured prompt, with what the estimator needs to compare it with an earlier one. */
export interface MeasuredPrompt extends RequestMeasure {
  entries: readonly Entry[];
  /** Heuristic characters of messages 0..i (tools excluded). */
  cumChars: readonly number[];
  /** Hash of messages 0..i. */
  cumHash: readonly number[];
  /** Leading messages found unchanged since this session's previous measure (same content). */
  unchanged: number;
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
  if (
    Array.isArray(b) ||
    Object.getPrototypeOf(a) !== Object.prototype ||
    Object.getPrototypeOf(b) !== Object.prototype
  )
    return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth - 1)) return false;
  }
  return true;
}

type AnyPart = Record<string, unknown> & { type?: unknown };

/**
 * Whether two parts carry the same content. The fields that hold content are compared first and
 * by identity, which is what a rebuilt part shares with the original; only unusual parts fall
 * back to a generic comparison.
 */
function samePart(a: AnyPart, b: AnyPart): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || a.type !== b.type) return false;
  if (a['providerOptions'] !== b['providerOptions'] && !sameValue(a['providerOptions'], b['providerOptions'], 3))
    return false;
  switch (a.type) {
    case 'text':
    case 'reasoning':
      return a['text'] === b['text'];
    case 'tool-call':
      return (
        a['toolCallId'] === b['toolCallId'] && a['toolName'] === b['toolName'] && sameValue(a['input'], b['input'], 8)
      );
    case 'tool-result': {
      if (a['toolCallId'] !== b['toolCallId'] || a['toolName'] !== b['toolName']) return false;
      const oa = a['output'] as AnyPart | undefined;
      const ob = b['output'] as AnyPart | undefined;
      return (
        oa === ob ||
        (!!oa && !!ob && oa.type === ob.type && sameValue(oa['value'], ob['value'], 8) && oa['reason'] === ob['reason'])
      );
    }
    case 'image':
      return a['image'] === b['image'] && a['mediaType'] === b['mediaType'];
    case 'file':
      return a['data'] === b['data'] && a['mediaType'] === b['mediaType'] && a['filename'] === b['filename'];
    default:
      return sameValue(a, b, 6);
  }
}

/** Whether `b` is the same message as `a`, typically a copy the host rebuilt around the same strings. */
function sameMessage(a: GuardMessage, b: GuardMessage): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || a.role !== b.role) return false;
  if (a.providerOptions !== b.providerOptions && !sameValue(a.providerOptions, b.providerOptions, 3)) return false;
  const ca = a.content as unknown;
  const cb = b.content as unknown;
  if (ca === cb) return true;
  if (!Array.isArray(ca) || !Array.isArray(cb) || ca.length !== cb.length) return false;
  for (let i = 0; i < ca.length; i++) if (!samePart(ca[i] as AnyPart, cb[i] as AnyPart)) return false;
  return true;
}

export class PromptMeasurer {
  private readonly sessions = new Map<string, SessionCache>();
  private readonly byObject = new WeakMap<object, Entry>();
  private readonly toolCache = new WeakMap<object, { key: string; chars: number }>();
  private readonly maxSessions: number;

  constructor(maxSessions: number) {
    this.maxSessions = maxSessions;
  }

  /**
   * Measures `messages` (+ `tools`). The result shares the session's cache arrays: it is valid
   * until the next measure of the same session, which is all a single guard call needs.
   */
  measure(
    sessionId: string,
    messages: readonly GuardMessage[],
    tools: readonly ToolDefinition[] | undefined,
    provider: MediaProvider,
    text: TextMeasure,
  ): MeasuredPrompt {
    const kind = `${provider}:${text.key}`;
    let cache = this.sessions.get(sessionId);
    if (cache) this.sessions.delete(sessionId); // re-inserted below: Map order is recency order
    if (!cache || cache.kind !== kind) {
      cache = { kind, entries: [], cumChars: [], cumMedia: [], cumHash: [], tools: undefined, toolChars: 0 };
    }
    const { entries, cumChars, cumMedia, cumHash } = cache;

    // The unchanged prefix: one identity comparison per message when the host resends the same
    // objects, a shallow comparison when it rebuilt them around the same strings.
    const n = messages.length;
    const limit = Math.min(n, entries.length);
    let same = 0;
    while (same < limit) {
      const entry = entries[same] as Entry;
      const message = messages[same] as GuardMessage;
      if (entry.message !== message) {
        if (!sameMessage(entry.message, message)) break;
        entries[same] = { ...entry, message }; // next time the identity check suffices
      }
      same++;
    }
    entries.length = cumChars.length = cumMedia.length = cumHash.length = same;

    let chars = same > 0 ? (cumChars[same - 1] as number) : 0;
    let media = same > 0 ? (cumMedia[same - 1] as number) : 0;
    let hash = same > 0 ? (cumHash[same - 1] as number) : PREFIX_HASH_SEED;
    for (let i = same; i < n; i++) {
      const message = messages[i] as GuardMessage;
      const known = typeof message === 'object' && message !== null ? this.byObject.get(message) : undefined;
      const entry = known && known.kind === kind ? known : this.measureOne(message, provider, text, kind);
      chars += entry.chars;
      media += entry.mediaTokens;
      hash = combineHash(hash, entry.hash);
      entries.push(entry);
      cumChars.push(chars);
      cumMedia.push(media);
      cumHash.push(hash);
    }

    if (cache.tools !== tools) {
      cache.tools = tools;
      cache.toolChars = this.measureTools(tools, text);
    }
    this.sessions.set(sessionId, cache);
    if (this.sessions.size > this.maxSessions) this.sessions.delete(this.sessions.keys().next().value as string);
    return {
      entries,
      cumChars,
      cumHash,
      chars: chars + cache.toolChars,
      toolChars: cache.toolChars,
      mediaTokens: media,
      prompt: { messages: n, chars, hash: n > 0 ? hash : 0 },
      unchanged: same,
    };
  }

  /** Forgets a session's cached measures (the per-object cache forgets on its own). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  private measureOne(message: GuardMessage, provider: MediaProvider, text: TextMeasure, kind: string): Entry {
    const { chars, mediaTokens } = measureMessage(message, provider, text.length);
    const entry: Entry = { message, kind, chars, mediaTokens, hash: hashMessage(message) };
    if (typeof message === 'object' && message !== null) this.byObject.set(message, entry);
    return entry;
  }

  private measureTools(tools: readonly ToolDefinition[] | undefined, text: TextMeasure): number {
    if (!Array.isArray(tools)) return 0;
    let total = 0;
    for (const tool of tools) {
      if (typeof tool !== 'object' || tool === null) continue;
      const cached = this.toolCache.get(tool);
      let chars = cached?.key === text.key ? cached.chars : undefined;
      if (chars === undefined) {
        chars = measureTool(tool, text.length);
        this.toolCache.set(tool, { key: text.key, chars });
      }
      total += chars;
    }
    return total;
  }
}

const PREFIX_HASH_SEED = 0x811c9dc5;

/** Order-sensitive combination of message hashes into a prefix hash. */
function combineHash(prefix: number, message: number): number {
  return Math.imul(prefix ^ message, 0x01000193) >>> 0;
}

/**
 * Whether `prompt` starts with the prompt `earlier` describes: the same leading messages, by count,
 * heuristic size and content hash. Constant time: the running totals are already there.
 */
export function extendsPrompt(prompt: MeasuredPrompt, earlier: PromptFingerprint): boolean {
  const n = earlier.messages;
  if (n === 0 || n > prompt.entries.length) return false;
  return prompt.cumChars[n - 1] === earlier.chars && prompt.cumHash[n - 1] === earlier.hash;
}
