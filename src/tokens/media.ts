// Token cost of images and files. Providers bill media by what the model sees (pixels, tiles,
// pages), never by the size of the upload, so counting a 2 MB base64 PNG as 700k characters of
// text would be off by three orders of magnitude. We read just enough of the data to learn what
// providers bill for (image dimensions, PDF page count) and apply each provider's documented
// formula. All functions are pure, never throw on malformed input, and never decode more than a
// bounded prefix (and, for PDFs, suffix) of the data, so they stay cheap on multi-megabyte payloads.
import type { DataContent, FilePart, ImagePart, ProviderOptions } from '../messages.ts';

export interface ImageDimensions {
  width: number;
  height: number;
}

/** OpenAI's `detail` setting; other providers ignore it. */
export type ImageDetail = 'low' | 'high' | 'auto';

/** Whose media billing rules apply; `generic` takes the most expensive of the known ones. */
export type MediaProvider = 'openai' | 'anthropic' | 'google' | 'generic';

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

/**
 * Most bytes of an inline image we decode to find its dimensions. PNG, GIF and WebP need fewer
 * than 32 bytes, but a JPEG's SOF marker comes after its APP segments (EXIF, XMP, ICC profile),
 * which can be tens of KiB; 64 KiB covers camera and phone JPEGs in practice. A JPEG whose SOF
 * lies beyond it is counted as an image of unknown size.
 */
export const MAX_HEADER_BYTES = 64 * 1024;

/** First, cheap read: enough for every format's header unless a JPEG carries large metadata. */
const SNIFF_BYTES = 4 * 1024;

// OpenAI, GPT-4o family ("Calculating costs", https://platform.openai.com/docs/guides/images-vision):
// fit in 2048x2048, scale the shortest side down to 768, then 170 tokens per 512px tile + 85 base;
// `detail: "low"` is a flat 85.
export const OPENAI_IMAGE_BASE_TOKENS = 85;
export const OPENAI_IMAGE_TILE_TOKENS = 170;
export const OPENAI_LOW_DETAIL_TOKENS = 85;

// Anthropic ("Calculate image costs", https://docs.anthropic.com/en/docs/build-with-claude/vision):
// tokens = width * height / 750; images whose long edge exceeds 1568 px or that would cost more
// than about 1,600 tokens (~1.15-1.2 megapixels, e.g. 1092x1092) are first scaled down.
export const ANTHROPIC_PIXELS_PER_TOKEN = 750;
export const ANTHROPIC_MAX_LONG_EDGE = 1568;
/** 1,600 tokens' worth of pixels: the documented cap, rounded up so we never undercount. */
export const ANTHROPIC_MAX_PIXELS = 1600 * ANTHROPIC_PIXELS_PER_TOKEN;

// Google (https://ai.google.dev/gemini-api/docs/tokens): an image with both sides <= 384 px costs
// 258 tokens; larger images are cropped and scaled into 768x768 tiles of 258 tokens each. Vertex AI's
// image requirements add that larger images are scaled down to fit 3072x3072 first, which bounds an
// image at 16 tiles.
export const GEMINI_IMAGE_TOKENS = 258;
export const GEMINI_SMALL_IMAGE_MAX_SIDE = 384;
export const GEMINI_TILE_SIZE = 768;
export const GEMINI_MAX_SIDE = 3072;

/**
 * Per provider, the costs of media whose size cannot be read exactly, overcounting rather than
 * undercounting:
 * - `unknownImage`: an image of unknown size (a URL, an unknown format, a truncated header), the
 *   cost of the largest image the provider bills in full: OpenAI high/auto detail tops out at
 *   2048x768 = 8 tiles = 1,445; Anthropic at ~1,600 (the resize cap); Gemini 3 bills images at its
 *   default `media_resolution` (high) of 1,120, which also exceeds a ~1.15 MP image under the
 *   Gemini 2 tile rule (4 tiles = 1,032).
 * - `pdfPage`: a PDF page. Anthropic sends every page as extracted text plus a page image and
 *   documents 1,500-3,000 tokens a page; we take the top of the range. OpenAI also sends text plus a
 *   page image (a letter page at high detail is 765-1,105 tokens, plus up to ~1,000 of text). Gemini
 *   documents 258 tokens a page, and 560 at Gemini 3's default PDF `media_resolution` (medium).
 */
const MEDIA_COSTS: Readonly<Record<MediaProvider, { unknownImage: number; pdfPage: number }>> = {
  openai: { unknownImage: 1445, pdfPage: 2000 },
  anthropic: { unknownImage: 1600, pdfPage: 3000 },
  google: { unknownImage: 1120, pdfPage: 560 },
  generic: { unknownImage: 1600, pdfPage: 3000 },
};

const costsOf = (cost: 'unknownImage' | 'pdfPage'): Readonly<Record<MediaProvider, number>> =>
  Object.fromEntries(Object.entries(MEDIA_COSTS).map(([provider, costs]) => [provider, costs[cost]])) as Record<
    MediaProvider,
    number
  >;

/** What an image costs when its size cannot be read, per provider (see MEDIA_COSTS). */
export const UNKNOWN_IMAGE_TOKENS = costsOf('unknownImage');

/** Cost of an image of unknown size for an unknown provider: the largest of the above. */
export const DEFAULT_IMAGE_TOKENS = 1600;

/** Tokens per PDF page, per provider (see MEDIA_COSTS). */
export const PDF_PAGE_TOKENS = costsOf('pdfPage');

/**
 * Bytes per page assumed when a PDF's page count is not visible in the bytes we scan (the page tree
 * is in a compressed object stream, or in the middle of a large file). Text-only pages run 5-20 KB,
 * pages with figures or scans 100 KB and up; 50 KB errs towards more pages for typical mixed
 * documents.
 */
export const PDF_BYTES_PER_PAGE = 50_000;

/** Bytes scanned at each end of a PDF for its page count. */
export const PDF_SCAN_BYTES = 64 * 1024;

/**
 * Upper bound on a page count read from a PDF: no provider accepts more (Gemini's documented limit
 * is 1,000 pages; Anthropic's and OpenAI's are lower), so a larger number is a parse error.
 */
export const MAX_PDF_PAGES = 1000;

/** UTF-8 bytes per token for text-like files, matching the chars/4 text heuristic. */
export const TEXT_BYTES_PER_TOKEN = 4;

/**
 * Cost of a file we cannot measure: a non-image, non-PDF, non-text type (audio, archives, office
 * documents) or a file referenced by URL. Its byte size says nothing about what a provider bills,
 * so we charge one dense PDF page's worth (~12 KB of text).
 */
export const DEFAULT_FILE_TOKENS = 3000;

// ---------------------------------------------------------------------------------------------
// Reading inline data without decoding all of it
// ---------------------------------------------------------------------------------------------

/** Inline data, located but not decoded. */
type InlineSource =
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'base64'; text: string; start: number }
  | { kind: 'percent'; text: string; start: number };

// Base64 alphabet lookup (standard and URL-safe): 0-63 digit, -2 whitespace, -1 anything else.
const B64 = /* @__PURE__ */ (() => {
  const table = new Int8Array(128).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  table[0x2d] = 62; // '-'
  table[0x5f] = 63; // '_'
  for (const c of [0x09, 0x0a, 0x0d, 0x20]) table[c] = -2;
  return table;
})();

const URL_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** Finds the inline bytes of `data`, or undefined when it is a reference (http(s), file, ...). */
function resolveInline(data: DataContent): InlineSource | undefined {
  if (typeof data !== 'string') {
    if (data instanceof Uint8Array) return { kind: 'bytes', bytes: data };
    // Other views and buffers from another realm (where instanceof fails) are bytes too.
    if (ArrayBuffer.isView(data)) {
      const view: ArrayBufferView = data;
      return { kind: 'bytes', bytes: new Uint8Array(view.buffer, view.byteOffset, view.byteLength) };
    }
    const tag = Object.prototype.toString.call(data);
    if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') {
      return { kind: 'bytes', bytes: new Uint8Array(data as ArrayBuffer) };
    }
    // A URL object is a reference, unless it wraps a data: URL.
    if (typeof URL !== 'undefined' && data instanceof URL && data.protocol === 'data:')
      return resolveDataUrl(data.href);
    return undefined;
  }
  if (data.length >= 5 && data.slice(0, 5).toLowerCase() === 'data:') return resolveDataUrl(data);
  // Base64 never contains ':', so anything with a scheme is a reference.
  if (URL_SCHEME.test(data.slice(0, 64))) return undefined;
  return { kind: 'base64', text: data, start: 0 };
}

function resolveDataUrl(url: string): InlineSource | undefined {
  // The header (`data:image/png;base64`) is short; bound the search so a malformed 10 MB string
  // without a comma is not scanned end to end.
  const limit = Math.min(url.length, 1024);
  let comma = -1;
  for (let i = 5; i < limit; i++) {
    if (url.charCodeAt(i) === 0x2c) {
      comma = i;
      break;
    }
  }
  if (comma < 0) return undefined;
  const params = url.slice(5, comma).toLowerCase().split(';');
  return params.includes('base64')
    ? { kind: 'base64', text: url, start: comma + 1 }
    : { kind: 'percent', text: url, start: comma + 1 };
}

/** Decodes at most `maxBytes` bytes of base64 starting at `start`, stopping at padding or junk. */
function decodeBase64(text: string, start: number, maxBytes: number): Uint8Array {
  const out = new Uint8Array(maxBytes);
  // The loop in a function of its own: V8 compiles a long payload's loop while it runs (on-stack
  // replacement), and code after it in the same function, not yet run then, deoptimized on every
  // payload after (the compiled loop is kept and entered again).
  return out.subarray(0, decodeBase64Into(out, text, start));
}

/** decodeBase64's loop: the bytes decoded into `out`, and how many. */
function decodeBase64Into(out: Uint8Array, text: string, start: number): number {
  const maxBytes = out.length;
  // Allow for line breaks (MIME wraps at 76) without letting a whitespace-only string run long.
  const end = Math.min(text.length, start + Math.ceil(maxBytes / 3) * 8 + 64);
  let acc = 0;
  let bits = 0;
  let n = 0;
  for (let i = start; i < end && n < maxBytes; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? (B64[c] ?? -1) : -1;
    if (v === -2) continue;
    if (v < 0) break; // '=' padding or not base64: keep what we have
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (acc >> bits) & 0xff;
      acc &= (1 << bits) - 1;
    }
  }
  return n;
}

/** Decodes at most `maxBytes` bytes of a percent-encoded data: URL payload. */
function decodePercent(text: string, start: number, maxBytes: number): Uint8Array {
  const out = new Uint8Array(maxBytes);
  let n = 0;
  for (let i = start; i < text.length && n < maxBytes; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25 && i + 2 < text.length) {
      const byte = Number.parseInt(text.slice(i + 1, i + 3), 16);
      if (!Number.isNaN(byte)) {
        out[n++] = byte;
        i += 2;
        continue;
      }
    }
    out[n++] = c & 0xff;
  }
  return out.subarray(0, n);
}

function readPrefix(src: InlineSource, maxBytes: number): Uint8Array {
  switch (src.kind) {
    case 'bytes':
      return src.bytes.subarray(0, maxBytes);
    case 'base64':
      return decodeBase64(src.text, src.start, maxBytes);
    case 'percent':
      return decodePercent(src.text, src.start, maxBytes);
  }
}

function readSuffix(src: InlineSource, maxBytes: number): Uint8Array {
  switch (src.kind) {
    case 'bytes':
      return src.bytes.subarray(Math.max(0, src.bytes.length - maxBytes));
    case 'base64': {
      // Start on a 4-character boundary of the payload so the quanta line up. That holds exactly
      // for unwrapped base64 (the usual case); wrapped input may decode to garbage here, which only
      // means the page tree is not found.
      const body = src.text.length - src.start;
      const chars = Math.ceil(maxBytes / 3) * 4;
      const skip = Math.max(0, Math.floor((body - chars) / 4) * 4);
      return decodeBase64(src.text, src.start + skip, maxBytes);
    }
    case 'percent':
      return decodePercent(src.text, Math.max(src.start, src.text.length - maxBytes), maxBytes);
  }
}

/** Byte length of inline data, computed from the encoded length without decoding. */
function inlineByteLength(src: InlineSource): number {
  switch (src.kind) {
    case 'bytes':
      return src.bytes.length;
    case 'base64': {
      let end = src.text.length;
      // Trailing padding and line breaks carry no data.
      while (
        end > src.start &&
        (src.text.charCodeAt(end - 1) === 0x3d || (B64[src.text.charCodeAt(end - 1)] ?? 0) === -2)
      )
        end--;
      return Math.floor(((end - src.start) * 3) / 4);
    }
    case 'percent':
      // Escapes make this an overcount of at most 3x; percent-encoded payloads are rare and small.
      return src.text.length - src.start;
  }
}

// ---------------------------------------------------------------------------------------------
// Image headers
// ---------------------------------------------------------------------------------------------

/** A parse that ran off the end of the bytes it was given: worth retrying with more. */
const TRUNCATED = 'truncated';
type HeaderResult = ImageDimensions | typeof TRUNCATED | undefined;

function u16be(b: Uint8Array, i: number): number {
  return ((b[i] ?? 0) << 8) | (b[i + 1] ?? 0);
}

function u16le(b: Uint8Array, i: number): number {
  return (b[i] ?? 0) | ((b[i + 1] ?? 0) << 8);
}

function u24le(b: Uint8Array, i: number): number {
  return (b[i] ?? 0) | ((b[i + 1] ?? 0) << 8) | ((b[i + 2] ?? 0) << 16);
}

function u32be(b: Uint8Array, i: number): number {
  return (((b[i] ?? 0) << 24) | ((b[i + 1] ?? 0) << 16) | ((b[i + 2] ?? 0) << 8) | (b[i + 3] ?? 0)) >>> 0;
}

function u32le(b: Uint8Array, i: number): number {
  return (u24le(b, i) | ((b[i + 3] ?? 0) << 24)) >>> 0;
}

function ascii(b: Uint8Array, i: number, s: string): boolean {
  if (i + s.length > b.length) return false;
  for (let k = 0; k < s.length; k++) if (b[i + k] !== s.charCodeAt(k)) return false;
  return true;
}

function dims(width: number, height: number): ImageDimensions | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function parsePng(b: Uint8Array): HeaderResult {
  // IHDR is the first chunk, except in Apple's CgBI variant, which puts a CgBI chunk before it.
  let i = 8;
  for (let chunk = 0; chunk < 4; chunk++) {
    if (i + 8 > b.length) return TRUNCATED;
    const length = u32be(b, i);
    if (ascii(b, i + 4, 'IHDR')) {
      if (i + 16 > b.length) return TRUNCATED;
      return dims(u32be(b, i + 8), u32be(b, i + 12));
    }
    i += 12 + length; // length, type, data, CRC
  }
  return undefined;
}

function parseGif(b: Uint8Array): HeaderResult {
  if (b.length < 10) return TRUNCATED;
  // Logical screen size: frames cannot be larger, and it is what providers decode to.
  return dims(u16le(b, 6), u16le(b, 8));
}

function parseWebp(b: Uint8Array): HeaderResult {
  if (b.length < 30) return TRUNCATED;
  if (ascii(b, 12, 'VP8 ')) {
    // Lossy: 3-byte frame tag, start code 9d 01 2a, then 14-bit width and height.
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
    return dims(u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff);
  }
  if (ascii(b, 12, 'VP8L')) {
    // Lossless: signature 0x2f, then width-1 and height-1 packed in 14 bits each.
    if (b[20] !== 0x2f) return undefined;
    const bits = u32le(b, 21);
    return dims((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (ascii(b, 12, 'VP8X')) {
    // Extended (alpha, animation, metadata): 24-bit canvas width-1 and height-1.
    return dims(u24le(b, 24) + 1, u24le(b, 27) + 1);
  }
  return undefined;
}

/** SOFn markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function parseJpeg(b: Uint8Array): HeaderResult {
  // Walk the marker segments after SOI. EXIF orientation is ignored on purpose: every provider
  // formula is symmetric in width and height, so a rotated image costs the same.
  let i = 2;
  for (;;) {
    if (i >= b.length) return TRUNCATED;
    if (b[i] !== 0xff) return undefined; // not at a marker: corrupt
    while (i < b.length && b[i] === 0xff) i++; // fill bytes
    if (i >= b.length) return TRUNCATED;
    const marker = b[i++] ?? 0;
    if (marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no payload
    if (marker === 0x00 || marker === 0xd9 || marker === 0xda) return undefined; // SOF must precede SOS/EOI
    if (i + 2 > b.length) return TRUNCATED;
    const length = u16be(b, i); // includes its own two bytes
    if (length < 2) return undefined;
    if (isStartOfFrame(marker)) {
      // length(2) precision(1) height(2) width(2). A zero height (defined later by DNL) is unknown.
      if (i + 7 > b.length) return TRUNCATED;
      return dims(u16be(b, i + 5), u16be(b, i + 3));
    }
    i += length;
  }
}

function parseImageHeader(b: Uint8Array): HeaderResult {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return parseJpeg(b);
  if (b.length >= 8 && PNG_SIGNATURE.every((v, k) => b[k] === v)) return parsePng(b);
  if (ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a')) return parseGif(b);
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP')) return parseWebp(b);
  return undefined;
}

/**
 * Width and height of an inline PNG, JPEG, GIF or WebP image, read from its header. Returns
 * undefined for references (http(s) URLs, URL objects), other formats, and malformed data. Decodes
 * at most {@link MAX_HEADER_BYTES} bytes, whatever the size of the input; never throws.
 */
export function readImageDimensions(data: DataContent): ImageDimensions | undefined {
  try {
    const src = resolveInline(data);
    if (!src) return undefined;
    // Most headers fit in the first few KiB; only a JPEG with large metadata needs the full read.
    const head = readPrefix(src, SNIFF_BYTES);
    const first = parseImageHeader(head);
    if (first !== TRUNCATED) return first;
    if (head.length < SNIFF_BYTES) return undefined; // that was all the data there is
    const second = parseImageHeader(readPrefix(src, MAX_HEADER_BYTES));
    return second === TRUNCATED ? undefined : second;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Providers and image formulas
// ---------------------------------------------------------------------------------------------

const ANTHROPIC_NAME = /^(claude|anthropic)/;
const GOOGLE_NAME = /^(gemini|google)/;
const OPENAI_NAME = /^(gpt-|gpt\d|chatgpt|openai|o[1-9](-|$))/;

/**
 * The provider whose media billing applies to a model id. Tolerates gateway and cloud prefixes
 * (`openai/gpt-4o`, `anthropic.claude-3-5-sonnet-v2:0`, `us.anthropic.claude-...`, `models/gemini-2.0-flash`,
 * `ft:gpt-4o-mini:org`) by testing each segment of the id.
 */
export function mediaProviderForModel(modelId: string | undefined): MediaProvider {
  if (typeof modelId !== 'string') return 'generic';
  for (const segment of modelId.toLowerCase().split(/[/.:@\s]/)) {
    if (ANTHROPIC_NAME.test(segment)) return 'anthropic';
    if (GOOGLE_NAME.test(segment)) return 'google';
    if (OPENAI_NAME.test(segment)) return 'openai';
  }
  return 'generic';
}

function openaiImageTokens(d: ImageDimensions, detail: ImageDetail): number {
  if (detail === 'low') return OPENAI_LOW_DETAIL_TOKENS;
  // 'auto' lets OpenAI choose; we assume high, the more expensive choice.
  let { width: w, height: h } = d;
  // Images are only ever scaled down, never up (a 512x512 image is one tile, 255 tokens).
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w = Math.max(1, Math.round(w * fit));
  h = Math.max(1, Math.round(h * fit));
  const shrink = Math.min(1, 768 / Math.min(w, h));
  w = Math.max(1, Math.round(w * shrink));
  h = Math.max(1, Math.round(h * shrink));
  const tiles = Math.ceil(w / 512) * Math.ceil(h / 512);
  return OPENAI_IMAGE_BASE_TOKENS + OPENAI_IMAGE_TILE_TOKENS * tiles;
}

function anthropicImageTokens(d: ImageDimensions): number {
  const { width, height } = d;
  const scale = Math.min(
    1,
    ANTHROPIC_MAX_LONG_EDGE / Math.max(width, height),
    Math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)),
  );
  // Floor after scaling: the resized image must fit the limits.
  const w = scale < 1 ? Math.max(1, Math.floor(width * scale)) : width;
  const h = scale < 1 ? Math.max(1, Math.floor(height * scale)) : height;
  return Math.ceil((w * h) / ANTHROPIC_PIXELS_PER_TOKEN);
}

function geminiImageTokens(d: ImageDimensions): number {
  let { width: w, height: h } = d;
  if (w <= GEMINI_SMALL_IMAGE_MAX_SIDE && h <= GEMINI_SMALL_IMAGE_MAX_SIDE) return GEMINI_IMAGE_TOKENS;
  const fit = Math.min(1, GEMINI_MAX_SIDE / Math.max(w, h));
  w = Math.max(1, Math.round(w * fit));
  h = Math.max(1, Math.round(h * fit));
  return GEMINI_IMAGE_TOKENS * Math.ceil(w / GEMINI_TILE_SIZE) * Math.ceil(h / GEMINI_TILE_SIZE);
}

function isUsable(d: ImageDimensions | undefined): d is ImageDimensions {
  return d !== undefined && Number.isFinite(d.width) && Number.isFinite(d.height) && d.width > 0 && d.height > 0;
}

/**
 * Tokens an image costs with `provider`. `detail` is OpenAI's setting (default 'auto', counted as
 * high). Unknown dimensions cost {@link UNKNOWN_IMAGE_TOKENS} (85 for OpenAI at low detail).
 * `generic` is the larger of the OpenAI and Anthropic costs: we prefer overcounting.
 */
export function imageTokens(
  dims: ImageDimensions | undefined,
  provider: MediaProvider,
  detail: ImageDetail = 'auto',
): number {
  if (!isUsable(dims)) {
    if (provider === 'openai' && detail === 'low') return OPENAI_LOW_DETAIL_TOKENS;
    return UNKNOWN_IMAGE_TOKENS[provider] ?? DEFAULT_IMAGE_TOKENS;
  }
  switch (provider) {
    case 'openai':
      return openaiImageTokens(dims, detail);
    case 'anthropic':
      return anthropicImageTokens(dims);
    case 'google':
      return geminiImageTokens(dims);
    default:
      return Math.max(openaiImageTokens(dims, detail), anthropicImageTokens(dims));
  }
}

/** OpenAI's per-part detail setting (`providerOptions.openai.imageDetail`), if valid. */
function imageDetailOf(options: ProviderOptions | undefined): ImageDetail | undefined {
  const detail = options?.['openai']?.['imageDetail'];
  return detail === 'low' || detail === 'high' || detail === 'auto' ? detail : undefined;
}

/** Tokens an image part costs with `provider`, honouring `providerOptions.openai.imageDetail`. */
export function imagePartTokens(part: ImagePart, provider: MediaProvider): number {
  return imageTokens(readImageDimensions(part.image), provider, imageDetailOf(part.providerOptions));
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/** Bytes as one char each, for ASCII regexes. `apply` on chunks is ~6x faster than spreading. */
function latin1(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 0x2000) {
    s += String.fromCharCode.apply(null, b.subarray(i, i + 0x2000) as unknown as number[]);
  }
  return s;
}

const LINEARIZED_PAGES = /\/Linearized\b[^>]*?\/N\s+(\d+)/;
const PAGES_TYPE = /\/Type\s*\/Pages\b/;
const COUNT = /\/Count\s+(\d+)/;
const PAGE_TYPE = /\/Type\s*\/Page(?![A-Za-z])/g;

/** The largest `/Count` of an uncompressed `/Type /Pages` object: the page tree root's. */
function pageTreeCount(text: string): number {
  let max = 0;
  // Splitting at `endobj` gives one object per piece, so a `/Count` is only paired with the
  // `/Type /Pages` of its own object (outlines have a `/Count` too). Linear, unlike a lazy regex
  // from each `obj` to the next `endobj`, which is quadratic on a PDF full of unterminated objects.
  for (const body of text.split('endobj')) {
    if (!PAGES_TYPE.test(body)) continue;
    const count = Number(COUNT.exec(body)?.[1] ?? 0);
    if (count > max) max = count;
  }
  return max;
}

/**
 * Estimated page count of an inline PDF, or undefined for a reference. Reads only the first and last
 * {@link PDF_SCAN_BYTES} bytes: a linearized PDF states its page count in its first object, and the
 * page tree root often sits at either end of the file. When neither is visible (compressed object
 * streams, a root in the middle), falls back to the size at {@link PDF_BYTES_PER_PAGE}. At least 1,
 * at most {@link MAX_PDF_PAGES}.
 */
export function estimatePdfPages(data: DataContent): number | undefined {
  try {
    const src = resolveInline(data);
    if (!src) return undefined;
    const size = inlineByteLength(src);
    const head = latin1(readPrefix(src, PDF_SCAN_BYTES));
    const whole = size <= PDF_SCAN_BYTES;
    const tail = whole ? '' : latin1(readSuffix(src, PDF_SCAN_BYTES));
    let pages = Number(LINEARIZED_PAGES.exec(head.slice(0, 2048))?.[1] ?? 0);
    if (!pages) pages = Math.max(pageTreeCount(head), pageTreeCount(tail));
    // A small file is scanned whole, so its page objects can be counted directly.
    if (!pages && whole) pages = head.match(PAGE_TYPE)?.length ?? 0;
    if (!pages) pages = Math.ceil(size / PDF_BYTES_PER_PAGE);
    return Math.min(MAX_PDF_PAGES, Math.max(1, pages));
  } catch {
    return undefined;
  }
}

/** `text/*` and structured-text application types, which providers read as text. */
function isTextLike(mediaType: string): boolean {
  return (
    mediaType.startsWith('text/') ||
    /^application\/(json|ld\+json|x-ndjson|xml|csv|x-csv|yaml|x-yaml|toml|javascript|x-javascript|typescript|x-sh|sql|graphql|markdown|x-markdown)$/.test(
      mediaType,
    ) ||
    mediaType.endsWith('+json') ||
    mediaType.endsWith('+xml')
  );
}

/**
 * Tokens a file part costs with `provider`: images as {@link imageTokens}; PDFs as
 * {@link PDF_PAGE_TOKENS} per estimated page; inline text-like files as their byte length /
 * {@link TEXT_BYTES_PER_TOKEN} (computed from the base64 length, not decoded); anything else, and
 * PDFs or text files referenced by URL, as {@link DEFAULT_FILE_TOKENS}.
 */
export function fileTokens(part: FilePart, provider: MediaProvider): number {
  try {
    const mediaType = String(part.mediaType ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (mediaType.startsWith('image/')) {
      return imageTokens(readImageDimensions(part.data), provider, imageDetailOf(part.providerOptions));
    }
    if (mediaType === 'application/pdf') {
      const pages = estimatePdfPages(part.data);
      return pages === undefined ? DEFAULT_FILE_TOKENS : pages * (PDF_PAGE_TOKENS[provider] ?? PDF_PAGE_TOKENS.generic);
    }
    if (isTextLike(mediaType)) {
      const src = resolveInline(part.data);
      return src ? Math.ceil(inlineByteLength(src) / TEXT_BYTES_PER_TOKEN) : DEFAULT_FILE_TOKENS;
    }
    return DEFAULT_FILE_TOKENS;
  } catch {
    return DEFAULT_FILE_TOKENS;
  }
}
