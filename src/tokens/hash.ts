// A fast, non-cryptographic fingerprint of a message (32 bits), computed once per new message.
// Combined over a prompt it tells whether a later prompt starts with the same history, so it sees
// every text character; binary data is sampled (length and first characters) because hashing
// megabytes of base64 would cost more than the estimate itself. A message is hashed field by
// field, the fields that carry its content (the ones the guard compares messages by, see
// MessageKeys in prompt-measure.ts) in a fixed order, each behind a tag no character can stand
// for; only values of unknown shape (tool inputs, unknown parts) are walked key by key. Short
// strings (ids, names) are hashed character by character (FNV-1a); long ones (the text of a file
// read, a tool output) through their UTF-8 bytes, four bytes at a time in four independent lanes.
// A new message of a few thousand characters costs about a microsecond.
import type { GuardMessage } from '../messages.ts';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const DATA_SAMPLE = 64;

/** Strings at least this long are hashed through their UTF-8 bytes. */
const LONG_STRING = 48;
/** Characters encoded at once: the scratch buffer stays bounded (3 bytes at most per character). */
const CHUNK = 16_384;

const encoder = new TextEncoder();
let bytes = new Uint8Array(4 * 1024);
let words = new Int32Array(bytes.buffer);

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * One chunk of a long string (at most CHUNK characters, well-formed UTF-16), mixed into `h`. Each
 * lane's step is a bijection of its state for a given word, so any single changed word changes the
 * result; the lanes are finalized apart and combined with different rotations. The words are read
 * in the platform's byte order: little-endian on every engine that runs this.
 */
function hashChunk(h: number, s: string): number {
  const need = s.length * 3 + 4;
  if (bytes.length < need) {
    bytes = new Uint8Array(need + (need >> 1));
    words = new Int32Array(bytes.buffer, 0, bytes.length >> 2);
  }
  const b = bytes;
  const w = words;
  const written = encoder.encodeInto(s, b).written;
  b[written] = 0;
  b[written + 1] = 0;
  b[written + 2] = 0;
  const n = (written + 3) >> 2;
  let l0 = h | 0;
  let l1 = (h ^ 0x9e3779b9) | 0;
  let l2 = (h ^ 0x85ebca6b) | 0;
  let l3 = (h ^ 0xc2b2ae35) | 0;
  let i = 0;
  for (const end = n - 3; i < end; i += 4) {
    l0 = Math.imul(l0 ^ (w[i] as number), FNV_PRIME);
    l0 ^= l0 >>> 15;
    l1 = Math.imul(l1 ^ (w[i + 1] as number), FNV_PRIME);
    l1 ^= l1 >>> 15;
    l2 = Math.imul(l2 ^ (w[i + 2] as number), FNV_PRIME);
    l2 ^= l2 >>> 15;
    l3 = Math.imul(l3 ^ (w[i + 3] as number), FNV_PRIME);
    l3 ^= l3 >>> 15;
  }
  for (; i < n; i++) {
    l0 = Math.imul(l0 ^ (w[i] as number), FNV_PRIME);
    l0 ^= l0 >>> 15;
  }
  l0 = fmix(l0 ^ written);
  l1 = fmix(l1);
  l2 = fmix(l2);
  l3 = fmix(l3);
  return l0 ^ ((l1 << 8) | (l1 >>> 24)) ^ ((l2 << 16) | (l2 >>> 16)) ^ ((l3 << 24) | (l3 >>> 8));
}

const isWellFormed = (s: string): boolean =>
  (s as string & { isWellFormed?: () => boolean }).isWellFormed?.() ?? !/[\uD800-\uDFFF]/.test(s);

/** FNV-1a over the string's UTF-16 units. */
function hashChars(h: number, s: string): number {
  h |= 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

function hashString(h: number, s: string): number {
  // UTF-8 has no lone surrogates: a string with one (rare) is hashed by its UTF-16 units instead.
  if (s.length < LONG_STRING || !isWellFormed(s)) return hashChars(h, s);
  if (s.length <= CHUNK) return hashChunk(h, s);
  for (let from = 0; from < s.length; ) {
    let to = Math.min(s.length, from + CHUNK);
    // Never between the two halves of a pair: each half alone would encode as the same replacement
    // character, and the pair's character would go unseen.
    const last = s.charCodeAt(to - 1);
    if (to < s.length && last >= 0xd800 && last <= 0xdbff) to--;
    h = hashChunk(h, s.slice(from, to));
    from = to;
  }
  return h;
}

/** Deepest nesting hashed; deeper values count by their depth only (no provider sends them anyway). */
const MAX_DEPTH = 64;

/** One FNV-1a step: what hashChars does with a one-character string. */
const mix = (h: number, code: number): number => Math.imul(h ^ code, FNV_PRIME);

// Tags of a walked value, above the UTF-16 range: each value is framed by its type and an end, so
// that no two values hash as the same stream (strings split differently, a key and a value, `null`
// and "null", `[]` and "[]").
const V_STRING = 0x1_0100;
const V_PRIMITIVE = 0x1_0101;
const V_END = 0x1_0102;
const V_ARRAY = 0x1_0103;
const V_OBJECT = 0x1_0104;
const V_KEY = 0x1_0105;
const V_SAMPLED = 0x1_0106;
const V_OTHER = 0x1_0107;

/** A string framed by a tag and an end. */
const framed = (h: number, tag: number, s: string): number => mix(hashString(mix(h, tag), s), V_END);

/**
 * What a value is: `media-data`, the data of an image or file (a base64 string, bytes, a URL), of
 * which only the length and first characters are hashed; any other `value` is hashed whole.
 */
type ValueKind = 'media-data' | 'value';

/**
 * A value of unknown shape, walked key by key; media data sampled (see ValueKind).
 * `ancestors` holds the objects on the path from the root: a value that contains itself (a cyclic
 * tool input) hashes the back-reference as a marker instead of recursing forever.
 */
function hashValue(h: number, value: unknown, kind: ValueKind, ancestors: object[]): number {
  if (typeof value === 'string') {
    return kind === 'media-data' && value.length > DATA_SAMPLE
      ? framed(framed(h, V_SAMPLED, String(value.length)), V_STRING, value.slice(0, DATA_SAMPLE))
      : framed(h, V_STRING, value);
  }
  if (typeof value !== 'object' || value === null) {
    // Functions and symbols are left out of JSON, and so out of the hash. The type is hashed with
    // the value: 1, 1n and true are told apart.
    return typeof value === 'function' || typeof value === 'symbol'
      ? h
      : framed(h, V_PRIMITIVE, `${typeof value}:${String(value)}`);
  }
  const isArray = Array.isArray(value);
  // Plain objects and arrays (nearly every value) are none of the binary or URL types.
  if (!isArray && Object.getPrototypeOf(value) !== Object.prototype) {
    if (value instanceof Uint8Array)
      return framed(h, V_OTHER, `bytes:${value.byteLength}:${value.subarray(0, DATA_SAMPLE).join(',')}`);
    if (value instanceof ArrayBuffer) return hashValue(h, new Uint8Array(value), kind, ancestors);
    if (value instanceof URL) return framed(h, V_OTHER, `url:${value.href}`);
  }
  if (ancestors.includes(value)) return framed(h, V_OTHER, `<cycle:${ancestors.length - ancestors.indexOf(value)}>`);
  if (ancestors.length >= MAX_DEPTH) return framed(h, V_OTHER, '<deep>');
  ancestors.push(value);
  if (isArray) {
    h = mix(h, V_ARRAY);
    // By index: the same items as an array's iterator gives (holes too), with no iterator results.
    for (let i = 0; i < value.length; i++) h = hashValue(h, value[i], 'value', ancestors);
  } else {
    h = mix(h, V_OBJECT);
    // The data of an item that names its media type (an image in a tool's `content` output).
    const withMedia = typeof (value as Record<string, unknown>)['mediaType'] === 'string';
    // The own enumerable keys in Object.keys order, without building its array (one per object).
    for (const k in value) {
      if (!Object.hasOwn(value, k)) continue;
      h = framed(h, V_KEY, k);
      const kind = withMedia && (k === 'data' || k === 'image') ? 'media-data' : 'value';
      h = hashValue(h, (value as Record<string, unknown>)[k], kind, ancestors);
    }
  }
  ancestors.pop();
  return mix(h, V_END);
}

/** The path of objects of the message being hashed, reused from one message to the next. */
let path: object[] = [];
let hashing = false;

// Tags mixed in before each field: above the UTF-16 range, so that no character hashed stands for
// one, and a text moved from one field to another changes the hash.
const MESSAGE = 0x1_0000;
const ROLE = 0x1_0001;
const OPTIONS = 0x1_0002;
const CONTENT = 0x1_0003;
const PARTS = 0x1_0004;
const PARTS_END = 0x1_0005;
const PART = 0x1_0006;
const TEXT = 0x1_0007;
const CALL_ID = 0x1_0008;
const TOOL_NAME = 0x1_0009;
const INPUT = 0x1_000a;
const OUTPUT = 0x1_000b;
const OUTPUT_TYPE = 0x1_000c;
const OUTPUT_VALUE = 0x1_000d;
const OUTPUT_REASON = 0x1_000e;
const DATA = 0x1_000f;
const MEDIA_TYPE = 0x1_0010;
const FILENAME = 0x1_0011;
const OTHER = 0x1_0012;
/** Mixed in after a field's tag when its value is not a string (then walked as a value). */
const VALUE = 0x1_0013;

type Fields = Record<string, unknown>;

/** One field: its tag, then its text, or its value walked (media data sampled: length and head). */
function field(h: number, tag: number, value: unknown, kind: ValueKind = 'value'): number {
  if (typeof value === 'string' && !(kind === 'media-data' && value.length > DATA_SAMPLE))
    return hashString(mix(h, tag), value);
  return hashValue(mix(mix(h, tag), VALUE), value, kind, path);
}

/** Options are hashed when set: a part without them and one with them undefined are the same. */
const withOptions = (h: number, options: unknown): number => (options === undefined ? h : field(h, OPTIONS, options));

function hashPart(h: number, part: unknown): number {
  if (typeof part !== 'object' || part === null) return field(h, OTHER, part);
  const p = part as Fields;
  const type = p['type'];
  switch (type) {
    case 'text':
    case 'reasoning':
      return field(withOptions(field(h, PART, type), p['providerOptions']), TEXT, p['text']);
    case 'tool-call':
      h = withOptions(field(h, PART, type), p['providerOptions']);
      h = field(field(h, CALL_ID, p['toolCallId']), TOOL_NAME, p['toolName']);
      return field(h, INPUT, p['input']);
    case 'tool-result': {
      h = withOptions(field(h, PART, type), p['providerOptions']);
      h = field(field(h, CALL_ID, p['toolCallId']), TOOL_NAME, p['toolName']);
      const output = p['output'];
      if (typeof output !== 'object' || output === null || Array.isArray(output)) return field(h, OUTPUT, output);
      const o = output as Fields;
      h = field(field(h, OUTPUT_TYPE, o['type']), OUTPUT_VALUE, o['value']);
      if (o['reason'] !== undefined) h = field(h, OUTPUT_REASON, o['reason']);
      return withOptions(h, o['providerOptions']);
    }
    case 'image':
      h = withOptions(field(h, PART, type), p['providerOptions']);
      return field(field(h, DATA, p['image'], 'media-data'), MEDIA_TYPE, p['mediaType']);
    case 'file':
      h = withOptions(field(h, PART, type), p['providerOptions']);
      h = field(field(h, DATA, p['data'], 'media-data'), MEDIA_TYPE, p['mediaType']);
      return field(h, FILENAME, p['filename']);
    default:
      // A part of unknown shape: every key of it.
      return field(h, OTHER, part);
  }
}

function hashFields(message: GuardMessage): number {
  if (typeof message !== 'object' || message === null) return field(FNV_OFFSET, OTHER, message);
  const m = message as unknown as Fields;
  let h = withOptions(field(mix(FNV_OFFSET, MESSAGE), ROLE, m['role']), m['providerOptions']);
  const content = m['content'];
  if (!Array.isArray(content)) return field(h, CONTENT, content);
  h = mix(h, PARTS);
  for (let i = 0; i < content.length; i++) h = hashPart(h, content[i]);
  return mix(h, PARTS_END);
}

export function hashMessage(message: GuardMessage): number {
  if (hashing) {
    // A getter that hashes a message while one is hashed (never in practice): a path of its own.
    const outer = path;
    path = [];
    try {
      return hashFields(message) >>> 0;
    } finally {
      path = outer;
    }
  }
  hashing = true;
  try {
    // A getter that threw may have left the last message's path behind (a length assigned costs a
    // runtime call: only when there is one).
    if (path.length > 0) path.length = 0;
    return hashFields(message) >>> 0;
  } finally {
    hashing = false;
  }
}

/**
 * FNV-1a of a text (32 bits), character by character: these hashes are stored (the guard's own
 * summary messages, see placement.ts) and are compared with those of earlier versions.
 */
export function hashText(text: string): number {
  return hashChars(FNV_OFFSET, text) >>> 0;
}
