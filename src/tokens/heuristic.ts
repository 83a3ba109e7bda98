// The chars/4 heuristic: what one message or tool list costs before calibration. Text is measured
// in characters (system text, message text, reasoning, tool-call names, ids and JSON inputs, tool
// results, tool definitions); images and files are counted in provider tokens from what providers
// charge, never from the length of their base64. Both are pure functions of the content, so the
// estimator can cache them per message. A `TextLength` other than the character count (exact BPE
// counting, see exact.ts) plugs in here, expressed in the same unit: 4 per token.
import type { GuardMessage, ToolDefinition, ToolResultOutput } from '../messages.ts';
import { fileTokens, imagePartTokens, imageTokens, readImageDimensions, type MediaProvider } from './media.ts';

/** Characters per token of the plain heuristic. */
export const CHARS_PER_TOKEN = 4;

/**
 * Role markers and separators providers wrap around every message (OpenAI documents 3-4 tokens a
 * message); counted as characters so calibration scales them with the rest.
 */
export const MESSAGE_OVERHEAD_CHARS = 12;

/** Heuristic characters of a text: its length, or 4 × its exact token count. */
export type TextLength = (text: string) => number;

export const charLength: TextLength = (text) => text.length;

export interface Measure {
  /** Characters the chars/4 heuristic applies to. */
  chars: number;
  /** Provider tokens of images and files. */
  mediaTokens: number;
}

function jsonLength(value: unknown, len: TextLength): number {
  if (typeof value === 'string') return len(value);
  if (value === undefined) return 0;
  try {
    return len(JSON.stringify(value) ?? '');
  } catch {
    // Circular or exotic values (a BigInt) cannot be sent as JSON either: counted by what they
    // print as, or as a placeholder when even that fails (an object without a prototype).
    try {
      return len(String(value));
    } catch {
      return UNPRINTABLE_CHARS;
    }
  }
}

/** What a value that prints as nothing at all counts: about a short JSON value's worth. */
const UNPRINTABLE_CHARS = 16;

function addOutput(m: Measure, output: ToolResultOutput | undefined, provider: MediaProvider, len: TextLength): void {
  if (!output || typeof output !== 'object') return;
  switch (output.type) {
    case 'text':
    case 'error-text':
      m.chars += typeof output.value === 'string' ? len(output.value) : jsonLength(output.value, len);
      return;
    case 'json':
    case 'error-json':
      m.chars += jsonLength(output.value, len);
      return;
    case 'execution-denied':
      m.chars += (output.reason?.length ?? 0) + 20;
      return;
    case 'content':
      if (!Array.isArray(output.value)) return;
      for (const item of output.value) {
        if (item.type === 'text' && typeof item.text === 'string') m.chars += len(item.text);
        else if (item.type === 'media' || item.type === 'image-data' || item.type === 'file-data') {
          const data = item['data'];
          const mediaType = typeof item['mediaType'] === 'string' ? item['mediaType'] : 'application/octet-stream';
          if (mediaType.startsWith('image/')) {
            m.mediaTokens += imageTokens(typeof data === 'string' ? readImageDimensions(data) : undefined, provider);
          } else {
            m.mediaTokens += fileTokens(
              { type: 'file', data: typeof data === 'string' ? data : '', mediaType },
              provider,
            );
          }
        } else m.chars += jsonLength(item, len);
      }
      return;
    default:
      m.chars += jsonLength((output as { value?: unknown }).value, len);
  }
}

/** Heuristic measure of one message. Never throws on malformed content: it counts what it can. */
export function measureMessage(message: GuardMessage, provider: MediaProvider, len: TextLength = charLength): Measure {
  const m: Measure = { chars: MESSAGE_OVERHEAD_CHARS, mediaTokens: 0 };
  const content = (message as { content?: unknown }).content;
  if (typeof content === 'string') {
    m.chars += len(content);
    return m;
  }
  if (!Array.isArray(content)) return m;
  for (const part of content as Array<Record<string, unknown> & { type?: unknown }>) {
    if (!part || typeof part !== 'object') continue;
    switch (part.type) {
      case 'text':
      case 'reasoning':
        m.chars += typeof part['text'] === 'string' ? len(part['text']) : 0;
        break;
      case 'image':
        m.mediaTokens += imagePartTokens(part as never, provider);
        break;
      case 'file':
        m.mediaTokens += fileTokens(part as never, provider);
        break;
      case 'tool-call':
        m.chars +=
          String(part['toolName'] ?? '').length +
          String(part['toolCallId'] ?? '').length +
          jsonLength(part['input'], len);
        break;
      case 'tool-result':
        m.chars += String(part['toolName'] ?? '').length + String(part['toolCallId'] ?? '').length;
        addOutput(m, part['output'] as ToolResultOutput | undefined, provider, len);
        break;
      default:
        // Unknown part types pass through to the provider; count their JSON so nothing is free.
        m.chars += jsonLength(part, len);
    }
  }
  return m;
}

/** Characters of the tool definitions: name, description and JSON schema of each. */
export function measureTool(tool: ToolDefinition, len: TextLength = charLength): number {
  if (!tool || typeof tool !== 'object') return 0;
  return (
    String(tool.name ?? '').length +
    (typeof tool.description === 'string' ? len(tool.description) : 0) +
    jsonLength(tool.inputSchema ?? (tool as { parameters?: unknown }).parameters, len)
  );
}
