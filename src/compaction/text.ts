// Message-to-text helpers shared by the summarizer transcript and the mechanical digest: both turn
// messages into plain text that must stay small and readable, so they clip long values, label media
// instead of copying its bytes, and never throw on odd input (a summary must always be produced).
import type { DataContent, ToolResultContentItem, ToolResultOutput, UserMessage } from '../messages.ts';

/** `12345` -> `"12,345"`. Written by hand because `toLocaleString` depends on the host's locale. */
export function formatCount(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** The first `n` UTF-16 units of `text`, one fewer if the cut would split a surrogate pair. */
export function safeHead(text: string, n: number): string {
  if (n <= 0) return '';
  if (n >= text.length) return text;
  return isHighSurrogate(text.charCodeAt(n - 1)) ? text.slice(0, n - 1) : text.slice(0, n);
}

/** The last `n` UTF-16 units of `text`, one fewer if the cut would split a surrogate pair. */
export function safeTail(text: string, n: number): string {
  if (n <= 0) return '';
  if (n >= text.length) return text;
  const start = text.length - n;
  return isHighSurrogate(text.charCodeAt(start - 1)) ? text.slice(start + 1) : text.slice(start);
}

/**
 * Keeps at most `maxChars` characters of `text`: its head and tail (the start of a tool result says
 * what it is, the end usually holds the outcome: exit codes, totals, the last error), with a marker
 * in between that says exactly how many characters were dropped.
 */
export function clipMiddle(text: string, maxChars: number, note?: string): string {
  // Written as a negated `>` so that NaN and Infinity mean "no limit" rather than "keep nothing".
  if (!(text.length > maxChars)) return text;
  const keep = Math.max(0, Math.floor(maxChars));
  const head = safeHead(text, Math.ceil(keep / 2));
  const tail = safeTail(text, keep - Math.ceil(keep / 2));
  const omitted = text.length - head.length - tail.length;
  return `${head}\n[... ${formatCount(omitted)} characters omitted${note ? `; ${note}` : ''} ...]\n${tail}`;
}

/** Keeps the first `maxChars` characters of `text`, with an ellipsis when something was cut. */
export function clipHead(text: string, maxChars: number): string {
  if (!(text.length > maxChars)) return text;
  return `${safeHead(text, Math.max(0, Math.floor(maxChars)))}…`;
}

/** Runs of base64 this long are binary payloads, not prose: no word or hash is that long. */
const BASE64_RUN = 512;
// The lookbehind makes every match start at the beginning of a run, so the scan stays linear even
// on megabytes of text made of shorter runs.
const BASE64_RUN_RE = new RegExp(`(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{${BASE64_RUN},}={0,2}`, 'g');
const DATA_URL_RE = /data:([\w.+-]+\/[\w.+-]+)?(?:;[\w.+-]+=[\w.+-]+)*;base64,[A-Za-z0-9+/=]*/g;

/**
 * Replaces inline binary (data: URLs, long base64 runs, e.g. a screenshot inside a JSON tool result)
 * with a short label: it means nothing to a summarizer and would crowd out the real content.
 */
export function stripInlineBinary(text: string): string {
  if (text.length < 64) return text;
  return (
    text
      .replace(
        DATA_URL_RE,
        (m: string, mediaType: string | undefined) =>
          `[data: ${mediaType ?? 'unknown type'}, ${formatCount(m.length)} characters]`,
      )
      // Encoded bytes mix lower case, upper case and digits; a run of one repeated letter, hex digits
      // or a long identifier is text.
      .replace(BASE64_RUN_RE, (m: string) =>
        /[a-z]/.test(m) && /[A-Z]/.test(m) && /\d/.test(m) ? `[base64 data: ${formatCount(m.length)} characters]` : m,
      )
  );
}

/**
 * JSON text of a tool input or output value. Never throws: circular or exotic values fall back to
 * `String(value)`, bigints print as numbers, and binary buffers become a size label.
 */
export function safeJson(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'undefined';
  try {
    const json = JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'bigint') return v.toString();
      if (v instanceof Uint8Array) return `[binary: ${formatCount(v.byteLength)} bytes]`;
      if (v instanceof ArrayBuffer) return `[binary: ${formatCount(v.byteLength)} bytes]`;
      return v;
    });
    return json ?? String(value);
  } catch {
    try {
      return String(value);
    } catch {
      return '[unserializable value]';
    }
  }
}

function urlOf(data: unknown): string | undefined {
  if (data instanceof URL) return data.protocol === 'data:' ? undefined : data.href;
  if (typeof data === 'string' && /^https?:\/\//i.test(data)) return data;
  return undefined;
}

function dataUrlMediaType(data: unknown): string | undefined {
  const s = data instanceof URL ? data.href : data;
  if (typeof s !== 'string') return undefined;
  return /^data:([\w.+-]+\/[\w.+-]+)[;,]/i.exec(s)?.[1];
}

/**
 * `[image: image/png]`, `[file: report.pdf application/pdf]`: what the media was, never its bytes.
 * A remote URL is kept (it is a reference the model may need again); inline data never is.
 */
export function mediaLabel(
  kind: 'image' | 'file',
  media: { data?: DataContent | unknown; mediaType?: unknown; filename?: unknown },
): string {
  const mediaType =
    typeof media.mediaType === 'string' && media.mediaType ? media.mediaType : dataUrlMediaType(media.data);
  const fields = [typeof media.filename === 'string' ? media.filename : undefined, mediaType, urlOf(media.data)];
  const text = fields.filter((f): f is string => typeof f === 'string' && f.length > 0).map((f) => clipHead(f, 200));
  return text.length > 0 ? `[${kind}: ${text.join(' ')}]` : `[${kind}]`;
}

/** Tool names and call ids are model-written; keep them on one line and of bounded length. */
export function oneLine(text: unknown, maxChars: number): string {
  const s = typeof text === 'string' ? text : safeJson(text);
  return clipHead(s.replace(/\s+/g, ' ').trim(), maxChars);
}

/** Tool names and call ids longer than this are not names; cut them so labels stay one short line. */
export const MAX_LABEL_CHARS = 100;

export function hasText(s: string | undefined): s is string {
  return typeof s === 'string' && s.trim().length > 0;
}

export function asText(value: unknown): string {
  return typeof value === 'string' ? value : safeJson(value);
}

const CONTENT_MEDIA_TYPES = new Set([
  'media',
  'image-data',
  'image-url',
  'image-file-id',
  'file-data',
  'file-url',
  'file-id',
]);

function contentItemText(item: ToolResultContentItem): string {
  if (!item || typeof item !== 'object') return asText(item);
  // A tool's own value: its type may be anything, even an object without a string form.
  const type = safeJson(item.type);
  const fields = item as Record<string, unknown>;
  if (type === 'text' && typeof fields.text === 'string') return fields.text;
  if (CONTENT_MEDIA_TYPES.has(type)) {
    const mediaType = fields.mediaType;
    const isImage = type.startsWith('image') || (typeof mediaType === 'string' && mediaType.startsWith('image/'));
    return mediaLabel(isImage ? 'image' : 'file', {
      data: fields.url ?? fields.data,
      mediaType,
      filename: fields.filename,
    });
  }
  return `[${oneLine(type, MAX_LABEL_CHARS)}]`;
}

/** The body of a tool output and whether it reports an error. */
export function toolOutputText(output: ToolResultOutput | undefined): { text: string; isError: boolean } {
  if (!output || typeof output !== 'object') return { text: asText(output), isError: false };
  switch (output.type) {
    case 'text':
      return { text: asText(output.value), isError: false };
    case 'json':
      return { text: safeJson(output.value), isError: false };
    case 'error-text':
      return { text: asText(output.value), isError: true };
    case 'error-json':
      return { text: safeJson(output.value), isError: true };
    case 'execution-denied':
      return {
        text: hasText(output.reason) ? `execution denied: ${output.reason}` : 'execution denied',
        isError: true,
      };
    case 'content':
      return {
        text: Array.isArray(output.value) ? output.value.map(contentItemText).join('\n') : safeJson(output.value),
        isError: false,
      };
    default:
      return { text: safeJson(output), isError: false };
  }
}

/** A user message's content as text, with media as labels. */
export function userContentText(content: UserMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return safeJson(content);
  return content
    .map((part) => {
      if (!part || typeof part !== 'object') return asText(part);
      if (part.type === 'text') return part.text;
      if (part.type === 'image') return mediaLabel('image', { data: part.image, mediaType: part.mediaType });
      if (part.type === 'file') return mediaLabel('file', part);
      return `[${oneLine((part as { type: unknown }).type, MAX_LABEL_CHARS)}]`;
    })
    .join('\n');
}
