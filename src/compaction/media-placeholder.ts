// Images and files cannot be cut down like text: when the prompt cannot fit otherwise, one is
// replaced by a short text that says what it was (kind, media type, size, name), so the model
// knows it existed and can ask for it again. The placeholder is a pure function of the part, so a
// stateless host replaying its history gets the same bytes on every call.
import type { FilePart, ImagePart, TextPart } from '../messages.ts';
import { readImageDimensions } from '../tokens/media.ts';
import { formatCount, oneLine } from './text.ts';

/** Where a media edit applies: the host's message index and the part's index in its content. */
export function mediaKey(hostIndex: number, partIndex: number): string {
  return `${hostIndex}:${partIndex}`;
}

/** Bytes of inline data, or undefined for a reference (URL). */
function byteSize(data: unknown): number | undefined {
  if (data instanceof Uint8Array) return data.byteLength;
  if (data instanceof ArrayBuffer) return data.byteLength;
  if (typeof data !== 'string') return undefined;
  if (/^https?:\/\//i.test(data.slice(0, 8))) return undefined;
  const comma = data.startsWith('data:') ? data.indexOf(',', 0) : -1;
  const base64 = comma >= 0 ? data.length - comma - 1 : data.length;
  return Math.floor((base64 * 3) / 4);
}

function sizeLabel(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${formatCount(bytes)} bytes`;
}

function urlOf(data: unknown): string | undefined {
  if (data instanceof URL) return data.protocol === 'data:' ? undefined : data.href;
  return typeof data === 'string' && /^https?:\/\//i.test(data.slice(0, 8)) ? data : undefined;
}

/** The text that stands for an image or file part left out to fit the context window. */
export function mediaPlaceholder(part: ImagePart | FilePart): TextPart {
  const image = part.type === 'image';
  const data: unknown = image ? part.image : part.data;
  const fields: string[] = [];
  const name = !image && typeof part.filename === 'string' ? part.filename : undefined;
  if (name) fields.push(oneLine(name, 120));
  if (typeof part.mediaType === 'string' && part.mediaType) fields.push(oneLine(part.mediaType, 80));
  if (image) {
    const dims = readImageDimensions(data as never);
    if (dims) fields.push(`${dims.width}×${dims.height}`);
  }
  const bytes = byteSize(data);
  if (bytes !== undefined) fields.push(sizeLabel(bytes));
  const url = urlOf(data);
  if (url) fields.push(oneLine(url, 200));
  const what = image ? 'An image' : 'A file';
  return {
    type: 'text',
    text: `[${what} was left out to fit the context window${fields.length > 0 ? `: ${fields.join(', ')}` : ''}.]`,
  };
}
