// A fast, non-cryptographic fingerprint of a message (FNV-1a, 32 bits), computed once per new
// message. Combined over a prompt it tells whether a later prompt starts with the same history,
// so it sees every text character; binary data is sampled (length and first characters) because
// hashing megabytes of base64 would cost more than the estimate itself.
import type { GuardMessage } from '../messages.ts';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const DATA_SAMPLE = 64;

function hashString(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

/** Deepest nesting hashed; deeper values count by their depth only (no provider sends them anyway). */
const MAX_DEPTH = 64;

/**
 * `ancestors` holds the objects on the path from the root: a value that contains itself (a cyclic
 * tool input) hashes the back-reference as a marker instead of recursing forever.
 */
function hashValue(h: number, value: unknown, key: string | undefined, ancestors: object[] = []): number {
  if (typeof value === 'string') {
    const isData = key === 'data' || key === 'image';
    return isData && value.length > DATA_SAMPLE
      ? hashString(hashString(h, String(value.length)), value.slice(0, DATA_SAMPLE))
      : hashString(h, value);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return hashString(h, String(value));
  if (value === null || value === undefined) return hashString(h, String(value));
  if (value instanceof Uint8Array)
    return hashString(h, `bytes:${value.byteLength}:${value.subarray(0, DATA_SAMPLE).join(',')}`);
  if (value instanceof ArrayBuffer) return hashValue(h, new Uint8Array(value), key);
  if (value instanceof URL) return hashString(h, value.href);
  if (typeof value !== 'object') return h;
  if (ancestors.includes(value)) return hashString(h, `<cycle:${ancestors.length - ancestors.indexOf(value)}>`);
  if (ancestors.length >= MAX_DEPTH) return hashString(h, '<deep>');
  ancestors.push(value);
  if (Array.isArray(value)) {
    h = hashString(h, '[');
    for (const item of value) h = hashValue(h, item, undefined, ancestors);
    h = hashString(h, ']');
  } else {
    h = hashString(h, '{');
    for (const k of Object.keys(value)) {
      h = hashString(h, k);
      h = hashValue(h, (value as Record<string, unknown>)[k], k, ancestors);
    }
    h = hashString(h, '}');
  }
  ancestors.pop();
  return h;
}

export function hashMessage(message: GuardMessage): number {
  return hashValue(FNV_OFFSET, message, undefined) >>> 0;
}

/** FNV-1a of a text (32 bits). */
export function hashText(text: string): number {
  return hashString(FNV_OFFSET, text) >>> 0;
}
