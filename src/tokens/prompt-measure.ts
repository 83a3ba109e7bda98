// Measures a whole prompt at a cost that grows with what was added since the session's previous
// call, not with the whole history. Hosts resend the entire history on every call: LangChain
// reuses the message objects, the AI SDK rebuilds them around the same strings. The guard's input
// check (call/history.ts) compares each call's messages with the last ones once, and hands over the
// history in canonical form: an array that only grows, holding for each message the object first
// seen with its content. Measured in that form, the messages measured last time are known
// unchanged without looking at them again. Any other prompt (one a compaction edited) is matched
// message by message against the one at the same position last time (same object, or a shallow
// copy of it), then against a per-object cache (messages kept after a compaction move position),
// and only then measured. The cache lives in this process only; the session state keeps just
// fingerprints.
import type { GuardMessage, ToolDefinition } from '../messages.ts';
import type { PromptFingerprint, RequestMeasure } from './fingerprint.ts';
import { hashMessage } from './hash.ts';
import type { TextMeasure } from './exact.ts';
import { measureMessage, measureTool } from './heuristic.ts';
import type { MediaProvider } from './media.ts';
import { BoundedMap } from '../state/bounded.ts';

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

/**
 * A host's messages in canonical form: the first `length` entries of `messages`, an array that only
 * ever grows. Its entries below a length once handed out never change, so a measure of the same
 * array that covered `n` messages still holds for its first `n` (see CheckedInputs in call/history.ts).
 */
export interface CanonicalMessages {
  messages: readonly GuardMessage[];
  length: number;
  /** Some of them may not be the host's own objects (it rebuilt them around the same content). */
  rebuilt: boolean;
  /**
   * The latest request last found among the first messages of `messages` (see requestIndex in
   * compaction/request.ts): one holder per canonical array, handed over again with it on later calls
   * and replaced with it (undefined: nothing is remembered).
   */
  latestRequest?: LatestRequestFound;
}

/** Where the latest request was found, and among how many messages: those never change once handed out. */
export interface LatestRequestFound {
  found?: { upTo: number; index: number; own: readonly number[] | undefined };
}

interface SessionCache {
  kind: string;
  entries: Entry[];
  /** The message of each entry, flat: the identity comparison reads no entry object. */
  seen: GuardMessage[];
  /** The canonical array the entries measure (all of them), when the last measure was of one. */
  source: readonly GuardMessage[] | undefined;
  /** Running totals over `entries`: chars, media tokens and the prefix hash up to each message. */
  cumChars: number[];
  cumMedia: number[];
  cumHash: number[];
  tools: readonly ToolDefinition[] | undefined;
  toolChars: number;
  /** Entries below this index are in the measurer's per-object cache (see PromptMeasurer.publish). */
  published: number;
  /** Whether the cache waits in the measurer's list of caches with entries to publish. */
  queued: boolean;
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
  // The same keys in the same order: JSON (what the provider reads, and what the hash sees) keeps it.
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i] as string;
    if (k !== kb[i] || !sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth - 1))
      return false;
  }
  return true;
}

type AnyPart = Record<string, unknown> & { type?: unknown };

/**
 * Whether two tool outputs carry the same content: the fields the message hash reads (hash.ts),
 * or, for an output of unknown shape, the whole value.
 */
function sameOutput(a: AnyPart | undefined, b: AnyPart | undefined): boolean {
  if (a === b) return true;
  if (
    typeof a !== 'object' ||
    typeof b !== 'object' ||
    a === null ||
    b === null ||
    Array.isArray(a) ||
    Array.isArray(b)
  )
    return sameValue(a, b, 8);
  return (
    a.type === b.type &&
    sameValue(a['value'], b['value'], 8) &&
    a['reason'] === b['reason'] &&
    (a['providerOptions'] === b['providerOptions'] || sameValue(a['providerOptions'], b['providerOptions'], 3))
  );
}

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
    case 'tool-result':
      return (
        a['toolCallId'] === b['toolCallId'] &&
        a['toolName'] === b['toolName'] &&
        sameOutput(a['output'] as AnyPart | undefined, b['output'] as AnyPart | undefined)
      );
    case 'image':
      return a['image'] === b['image'] && a['mediaType'] === b['mediaType'];
    case 'file':
      return a['data'] === b['data'] && a['mediaType'] === b['mediaType'] && a['filename'] === b['filename'];
    default:
      return sameValue(a, b, 6);
  }
}

/**
 * Whether `b` is the same message as `a`, typically a copy the host rebuilt around the same strings:
 * the same role and options, and parts of the same types with the same content fields.
 */
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

// Empty arrays whose elements are already of the kind they will hold. A `[]` literal starts as an
// array of small integers, and the first object (or number beyond the small integers) pushed onto
// it widens its kind: the optimized code of the loop that pushes (PromptMeasurer.extend, compiled
// on the arrays of earlier sessions) then deoptimizes at a new session's first measure, and runs
// unoptimized for the next thousand calls or so. An array's kind only ever widens: emptied, it
// stays. (One function per kind: a literal's kind is also learned by the place that makes it.)

/** An empty array of the kind that holds objects. */
function emptyObjects<T extends object>(): T[] {
  const array: object[] = [emptyObjects];
  array.length = 0;
  return array as T[];
}

/** An empty array of the kind that holds prefix hashes (unsigned 32-bit: half beyond the small integers). */
function emptyHashes(): number[] {
  const array = [PREFIX_HASH_SEED];
  array.length = 0;
  return array;
}

/** A session's cache before its first measure (or after a measure of another kind). */
function emptyCache(kind: string): SessionCache {
  return {
    kind,
    entries: emptyObjects<Entry>(),
    seen: emptyObjects<GuardMessage>(),
    source: undefined,
    cumChars: [],
    cumMedia: [],
    cumHash: emptyHashes(),
    tools: undefined,
    toolChars: 0,
    published: 0,
    queued: false,
  };
}

/**
 * How many leading messages are unchanged since the cache's last measure. The same canonical array
 * as last time: everything measured then, at no cost. Otherwise one identity comparison per
 * message when the host resends the same objects, a shallow comparison when it rebuilt them around
 * the same strings (the entry then keeps the new object: next time the identity check suffices).
 */
function unchangedPrefix(
  cache: SessionCache,
  messages: readonly GuardMessage[],
  n: number,
  form: 'canonical' | 'as-is',
): number {
  const { entries, seen } = cache;
  const limit = Math.min(n, entries.length);
  let same = form === 'canonical' && cache.source === messages ? limit : 0;
  while (same < limit) {
    const message = messages[same] as GuardMessage;
    if (seen[same] !== message) {
      const entry = entries[same] as Entry;
      if (!sameMessage(entry.message, message)) break;
      entries[same] = { ...entry, message };
      seen[same] = message;
    }
    same++;
  }
  return same;
}

/** Stands in MessageKeys for a part that is not an object (kept as it is). */
const NOT_AN_OBJECT = Symbol('not an object');
// The layout of a part's keys in MessageKeys, after its code, type and options.
const TEXT = 1; // text
const CALL = 2; // toolCallId, toolName, input
const RESULT = 3; // toolCallId, toolName, output
const IMAGE = 4; // image, mediaType
const FILE = 5; // data, mediaType, filename
const OTHER = 6; // the part itself

/** Writes the keys of one part into `k` from `at` on (see MessageKeys); answers where the next part's keys start. */
function keyPart(k: unknown[], at: number, part: unknown): number {
  if (typeof part !== 'object' || part === null) {
    k[at++] = NOT_AN_OBJECT;
    k[at++] = part;
    return at;
  }
  const fields = part as AnyPart;
  const type = fields.type;
  switch (type) {
    case 'text':
    case 'reasoning':
      k[at++] = TEXT;
      k[at++] = type;
      k[at++] = fields['providerOptions'];
      k[at++] = fields['text'];
      break;
    case 'tool-call':
      k[at++] = CALL;
      k[at++] = type;
      k[at++] = fields['providerOptions'];
      k[at++] = fields['toolCallId'];
      k[at++] = fields['toolName'];
      k[at++] = fields['input'];
      break;
    case 'tool-result':
      k[at++] = RESULT;
      k[at++] = type;
      k[at++] = fields['providerOptions'];
      k[at++] = fields['toolCallId'];
      k[at++] = fields['toolName'];
      k[at++] = fields['output'];
      break;
    case 'image':
      k[at++] = IMAGE;
      k[at++] = type;
      k[at++] = fields['providerOptions'];
      k[at++] = fields['image'];
      k[at++] = fields['mediaType'];
      break;
    case 'file':
      k[at++] = FILE;
      k[at++] = type;
      k[at++] = fields['providerOptions'];
      k[at++] = fields['data'];
      k[at++] = fields['mediaType'];
      k[at++] = fields['filename'];
      break;
    default:
      k[at++] = OTHER;
      k[at++] = type;
      k[at++] = fields['providerOptions'];
      k[at++] = fields;
  }
  return at;
}

/**
 * The content fields sameMessage compares, for a run of messages, in one flat array: for each
 * message its role, options, content and the number of its parts (-1 for a string), then for each
 * part a layout code, its type, options and the fields of its type. A history the host rebuilt
 * around the same values is compared by reading the rebuilt objects and this array from start to
 * end, not the original objects scattered over the heap, which at thousands of messages is most of
 * the cost.
 */
export class MessageKeys {
  private readonly keys: unknown[] = [];
  /** Where each message's keys start in `keys`. */
  private readonly starts: number[] = [];

  get length(): number {
    return this.starts.length;
  }

  /** The role of message `i` as it was keyed (no read of the message itself). */
  roleOf(i: number): unknown {
    const start = this.starts[i];
    return start === undefined ? undefined : this.keys[start];
  }

  /** Keeps the keys of the first `n` messages only. */
  truncate(n: number): void {
    if (n >= this.starts.length) return;
    this.keys.length = this.starts[n] as number;
    this.starts.length = n;
  }

  /**
   * Appends the keys of a message that passed the input check (an object with a role). Written by
   * index, one value at a time: a push of several values at once runs the engine's generic builtin
   * (about half a microsecond a message).
   */
  push(message: GuardMessage): void {
    const k = this.keys;
    let at = k.length;
    this.starts.push(at);
    const m = message as unknown as AnyPart;
    const content = m['content'];
    const parts = Array.isArray(content) ? (content as unknown[]) : undefined;
    // The length of an array of parts, -1 for a string: the comparison never reads the original object.
    k[at++] = m['role'];
    k[at++] = m['providerOptions'];
    k[at++] = content;
    k[at++] = parts ? parts.length : -1;
    if (!parts) return;
    for (let q = 0; q < parts.length; q++) at = keyPart(k, at, parts[q]);
  }

  /**
   * How many of `input`'s messages from `from` on (below `limit`, at most `length`) are the same
   * as the messages keyed at their positions, as sameMessage judges; a message that is the very
   * object at its position in `keyed` (the messages keyed) is not compared. Throws on entries that
   * are not objects (null) and on hostile ones (getters): callers that face the host's input catch
   * (an entry that throws is not the same).
   */
  matching(input: readonly unknown[], keyed: readonly unknown[], from: number, limit: number): number {
    const k = this.keys;
    const starts = this.starts;
    const end = Math.min(limit, starts.length);
    let i = from;
    messages: for (; i < end; i++) {
      const m = input[i] as AnyPart;
      if (m === keyed[i]) continue;
      let j = starts[i] as number;
      if (m['role'] !== k[j]) break;
      const options = m['providerOptions'];
      if (options !== k[j + 1] && !sameValue(k[j + 1], options, 3)) break;
      const content = m['content'];
      if (content === k[j + 2]) continue; // the same string, or the same array of parts
      if (!Array.isArray(content) || content.length !== k[j + 3]) break;
      j += 4;
      for (let q = 0; q < content.length; q++) {
        const part = content[q] as AnyPart;
        const code = k[j];
        if (code === NOT_AN_OBJECT) {
          if (part !== k[j + 1]) break messages;
          j += 2;
          continue;
        }
        if (part.type !== k[j + 1]) break messages;
        const partOptions = part['providerOptions'];
        if (partOptions !== k[j + 2] && !sameValue(k[j + 2], partOptions, 3)) break messages;
        switch (code) {
          case TEXT:
            if (part['text'] !== k[j + 3]) break messages;
            j += 4;
            break;
          case CALL:
            if (part['toolCallId'] !== k[j + 3] || part['toolName'] !== k[j + 4]) break messages;
            if (part['input'] !== k[j + 5] && !sameValue(k[j + 5], part['input'], 8)) break messages;
            j += 6;
            break;
          case RESULT:
            if (part['toolCallId'] !== k[j + 3] || part['toolName'] !== k[j + 4]) break messages;
            if (part['output'] !== k[j + 5] && !sameOutput(k[j + 5] as AnyPart, part['output'] as AnyPart))
              break messages;
            j += 6;
            break;
          case IMAGE:
            if (part['image'] !== k[j + 3] || part['mediaType'] !== k[j + 4]) break messages;
            j += 5;
            break;
          case FILE:
            if (part['data'] !== k[j + 3] || part['mediaType'] !== k[j + 4] || part['filename'] !== k[j + 5])
              break messages;
            j += 6;
            break;
          default:
            if (!sameValue(k[j + 3], part, 6)) break messages;
            j += 4;
        }
      }
    }
    return i;
  }
}

export class PromptMeasurer {
  private readonly sessions: BoundedMap<string, SessionCache>;
  /**
   * Measures by message object, across sessions and keys: where a message measured before is found
   * at another position (kept after a compaction, in a candidate prompt). Filled lazily: a measure
   * that only grew its cache queues the new entries, and they are inserted when a measure first
   * needs to look messages up (its prefix changed). The common call, which only adds messages,
   * neither reads nor writes this table.
   */
  private readonly byObject = new WeakMap<object, Entry>();
  private readonly unpublished: SessionCache[] = [];
  private readonly toolCache = new WeakMap<object, { key: string; chars: number }>();
  constructor(maxSessions: number) {
    this.sessions = new BoundedMap(maxSessions);
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
    return this.run(sessionId, messages, messages.length, 'as-is', tools, provider, text);
  }

  /**
   * Measures a host's messages in canonical form (+ `tools`): when the session's last measure was of
   * the same canonical array, the messages it covered are not looked at again.
   */
  measureCanonical(
    sessionId: string,
    canonical: CanonicalMessages,
    tools: readonly ToolDefinition[] | undefined,
    provider: MediaProvider,
    text: TextMeasure,
  ): MeasuredPrompt {
    return this.run(sessionId, canonical.messages, canonical.length, 'canonical', tools, provider, text);
  }

  private run(
    sessionId: string,
    messages: readonly GuardMessage[],
    n: number,
    form: 'canonical' | 'as-is',
    tools: readonly ToolDefinition[] | undefined,
    provider: MediaProvider,
    text: TextMeasure,
  ): MeasuredPrompt {
    const kind = this.kindOf(provider, text.key);
    const kept = this.sessions.peek(sessionId);
    const cache = kept && kept.kind === kind ? kept : emptyCache(kind);
    const same = unchangedPrefix(cache, messages, n, form);
    this.extend(cache, messages, same, n, provider, text);
    cache.source = form === 'canonical' ? messages : undefined;
    if (cache.published < n && !cache.queued) this.queue(cache);
    if (cache.tools !== tools) {
      cache.tools = tools;
      cache.toolChars = this.measureTools(tools, text);
    }
    this.sessions.set(sessionId, cache); // the most recently used: evicted last
    const { entries, cumChars, cumMedia, cumHash } = cache;
    const chars = n > 0 ? (cumChars[n - 1] as number) : 0;
    return {
      entries,
      cumChars,
      cumHash,
      chars: chars + cache.toolChars,
      toolChars: cache.toolChars,
      mediaTokens: n > 0 ? (cumMedia[n - 1] as number) : 0,
      prompt: { messages: n, chars, hash: n > 0 ? (cumHash[n - 1] as number) : 0 },
      unchanged: same,
    };
  }

  /**
   * The cache's entries cut to the unchanged prefix `same`, then messages `same` to `n` measured
   * onto them. Messages after a changed prefix, or in a new cache, may have been measured elsewhere:
   * looked up. Messages that only extend the last measure are new to the host.
   */
  private extend(
    cache: SessionCache,
    messages: readonly GuardMessage[],
    same: number,
    n: number,
    provider: MediaProvider,
    text: TextMeasure,
  ): void {
    const { kind, entries, seen, cumChars, cumMedia, cumHash } = cache;
    const lookUp = same < entries.length || entries.length === 0;
    if (lookUp && n > same) this.publish();
    // Cut only when something is cut: assigning an array's length, even its own, is a runtime call.
    if (entries.length !== same)
      entries.length = seen.length = cumChars.length = cumMedia.length = cumHash.length = same;
    if (cache.published > same) cache.published = same;
    let chars = same > 0 ? (cumChars[same - 1] as number) : 0;
    let media = same > 0 ? (cumMedia[same - 1] as number) : 0;
    let hash = same > 0 ? (cumHash[same - 1] as number) : PREFIX_HASH_SEED;
    for (let i = same; i < n; i++) {
      const message = messages[i] as GuardMessage;
      const known = lookUp && typeof message === 'object' && message !== null ? this.byObject.get(message) : undefined;
      const entry = known && known.kind === kind ? known : this.measureOne(message, provider, text, kind);
      chars += entry.chars;
      media += entry.mediaTokens;
      hash = combineHash(hash, entry.hash);
      entries.push(entry);
      seen.push(message);
      cumChars.push(chars);
      cumMedia.push(media);
      cumHash.push(hash);
    }
  }

  private lastKind = { provider: '', key: '', kind: '' };

  /** The kind of a measure, the same string each time (compared by identity on every call). */
  private kindOf(provider: MediaProvider, key: string): string {
    const last = this.lastKind;
    if (last.provider !== provider || last.key !== key) this.lastKind = { provider, key, kind: `${provider}:${key}` };
    return this.lastKind.kind;
  }

  /** Forgets a session's cached measures (the per-object cache forgets on its own). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  private measureOne(message: GuardMessage, provider: MediaProvider, text: TextMeasure, kind: string): Entry {
    const { chars, mediaTokens } = measureMessage(message, provider, text.length);
    return { message, kind, chars, mediaTokens, hash: hashMessage(message) };
  }

  /**
   * Queues a cache whose newest entries are not in the per-object table yet. The queue is bounded:
   * past MAX_QUEUED caches it is published at once, so caches of sessions evicted since are not
   * held for long.
   */
  private queue(cache: SessionCache): void {
    cache.queued = true;
    this.unpublished.push(cache);
    if (this.unpublished.length > MAX_QUEUED) this.publish();
  }

  /** Inserts the queued entries into the per-object table: each entry once, whenever it comes. */
  private publish(): void {
    const queued = this.unpublished;
    for (let q = 0; q < queued.length; q++) {
      const cache = queued[q] as SessionCache;
      const { entries } = cache;
      for (let i = cache.published; i < entries.length; i++) {
        const entry = entries[i] as Entry;
        const message = entry.message;
        if (typeof message === 'object' && message !== null) this.byObject.set(message, entry);
      }
      cache.published = entries.length;
      cache.queued = false;
    }
    queued.length = 0;
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

/** Caches waiting with entries to publish before the queue is published whatever comes. */
const MAX_QUEUED = 64;

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
