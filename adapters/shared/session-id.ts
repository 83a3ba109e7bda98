// Which session a call belongs to, resolved the same way by every adapter (resolveSessionId): the
// adapter's option, else the id the host gives the call, else one derived from the conversation.
// The derived id comes from the conversation's stable start (its system messages and first user
// message), which every later call of the same conversation repeats. Two conversations through one
// wrapped model then never share calibration or summaries, while a stateless host that resends its
// history keeps finding the same session.

/** FNV-1a over UTF-16 code units, two seeds for a 64-bit key: collisions are not a practical risk. */
function fnv(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Binary data as its size and a hash of its first bytes: a key, not the bytes. */
function binaryKey(bytes: Uint8Array): string {
  return `bytes:${bytes.byteLength}:${fnv(String.fromCharCode(...bytes.subarray(0, 4096)), 0x811c9dc5)}`;
}

/**
 * A copy of `value` with binary data and URLs replaced by their keys, before JSON.stringify sees it:
 * it would call a Buffer's toJSON, which spells out every byte of an image read from disk.
 */
function keyed(value: unknown, ancestors: object[]): unknown {
  if (value instanceof Uint8Array) return binaryKey(value);
  if (value instanceof ArrayBuffer) return binaryKey(new Uint8Array(value));
  if (value instanceof URL) return value.href;
  if (typeof value !== 'object' || value === null) return value;
  if (ancestors.includes(value) || ancestors.length > 32) return '[…]';
  ancestors.push(value);
  const copy = Array.isArray(value)
    ? value.map((v) => keyed(v, ancestors))
    : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, keyed(v, ancestors)]));
  ancestors.pop();
  return copy;
}

function stableJson(value: unknown): string {
  try {
    return JSON.stringify(keyed(value, [])) ?? '';
  } catch {
    return String(value);
  }
}

/** `auto:` and a hex key of the prompt's system messages and first user message. */
export function deriveSessionId(prompt: readonly unknown[]): string {
  const start: unknown[] = [];
  for (const message of Array.isArray(prompt) ? prompt : []) {
    const role = (message as { role?: unknown })?.role;
    if (role === 'system') start.push(message);
    else if (role === 'user') {
      start.push((message as { content?: unknown }).content);
      break;
    }
  }
  const text = stableJson(start);
  return `auto:${fnv(text, 0x811c9dc5).toString(16).padStart(8, '0')}${fnv(text, 0x9747b28c).toString(16).padStart(8, '0')}`;
}

/**
 * An id a host gives the call (LangGraph's `thread_id`, the AI SDK's `providerOptions.contextGuard.sessionId`)
 * as a session id: a non-empty string as it is, a finite number (LangGraph accepts numeric thread
 * ids) as its decimal string; anything else names no session.
 */
export function hostSessionId(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** An adapter's `sessionId` option: a fixed id, or a function of what the adapter knows about the call. */
export type SessionIdChoice<Context> = string | ((context: Context) => string | undefined);

export interface SessionSources<Context> {
  /** The adapter's `sessionId` option; it wins over everything else (a number counts as its string, as host ids do). */
  option?: SessionIdChoice<Context> | undefined;
  /** What the option's function is given. */
  context?: Context;
  /** The host's id of the conversation (see {@link hostSessionId}); used when the option names none. */
  hostId?: unknown;
  /** The id derived from the conversation, when neither names one (undefined when it cannot be derived). */
  derive?: () => string | undefined;
  /**
   * Hears of a session function that threw: the call goes on with the defaults (no throw at call
   * time), and the adapter reports it as an error event.
   */
  onError?: (error: unknown) => void;
}

/**
 * The session of a call, the same way in every adapter: the `sessionId` option (a fixed id, or what
 * its function returns), else the host's id, else the id derived from the conversation. Empty
 * strings name nothing; undefined only when no source names a session.
 */
export function resolveSessionId<Context>(sources: SessionSources<Context>): string | undefined {
  const { option } = sources;
  let chosen: string | undefined;
  if (typeof option === 'function') {
    try {
      chosen = hostSessionId(option(sources.context as Context));
    } catch (error) {
      sources.onError?.(error);
    }
  } else chosen = hostSessionId(option);
  return chosen ?? hostSessionId(sources.hostId) ?? sources.derive?.();
}
