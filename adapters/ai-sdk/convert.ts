// Conversion between the AI SDK's language-model prompt (V4 for ai 7, V3 for ai 6) and the guard's
// GuardMessage model. Most of the prompt already has the guard's shape (text, reasoning, tool calls,
// most tool results), so those messages and parts are handed to the guard as they are, with no copy.
// Only media are rebuilt, so that the estimator prices them as images and files rather than by the
// length of their base64. On the way back, every message or part the guard left alone is restored
// to the very object the SDK sent (an origins map, per call), so untouched history stays
// byte-identical for provider prompt caches; what the guard wrote or edited is converted by shape.
// The V3 (ai 6) types come from @ai-sdk/provider 4 too, which still ships them, so the published
// declarations name only the peer dependency.
import type {
  LanguageModelV3Prompt,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
  LanguageModelV4ProviderTool,
  SharedV4FileData,
} from '@ai-sdk/provider';
import type { DataContent, GuardMessage, ToolDefinition } from '../../src/messages.ts';

/** The guard's view of one SDK prompt, and what `fromGuardMessages` needs to map it back. */
export interface GuardPrompt {
  messages: GuardMessage[];
  /** Rebuilt guard message or part → the SDK object it stands for (objects passed as they are are not listed). */
  origins: WeakMap<object, object>;
}

// Parts and content items are handled as plain records: the SDK unions are wider than the guard's
// (custom parts, approval responses) and anything unknown must pass through untouched.
type Part = Record<string, unknown> & { type?: unknown };
type Message = { role: string; content: unknown; providerOptions?: unknown };

/** How one specification version spells media; everything else is shared. */
interface Dialect {
  /** The guard's part for an SDK content part; the same object when the guard can read it as it is. */
  toPart(part: Part): Part;
  /** The guard's item for an item of a `content` tool output; the same object when readable as it is. */
  toItem(item: Part): Part;
  /** The SDK file part for a guard image or file. */
  fromMedia(data: DataContent, mediaType: string, filename: unknown, providerOptions: unknown): Part;
  /** The SDK item for a guard content item; the same object when it is already valid. */
  fromItem(item: Part): Part;
}

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/** `items.map(fn)`, or `items` itself when `fn` returned every element unchanged. */
function mapSame<T>(items: readonly T[], fn: (item: T) => T): readonly T[] {
  let out: T[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const next = fn(items[i] as T);
    if (next !== items[i]) (out ??= items.slice())[i] = next;
  }
  return out ?? items;
}

/** Providers accept a top-level type (`image`) or a wildcard (`image/*`) as well as `image/png`. */
function isImage(mediaType: unknown): mediaType is string {
  return typeof mediaType === 'string' && /^image(\/|$)/i.test(mediaType);
}

/** The estimator tells images from files by an `image/` prefix. */
function imageMediaType(mediaType: string): string {
  return mediaType.includes('/') ? mediaType : 'image/*';
}

/** `{ key: value }` when the value is set, so rebuilt parts carry no `undefined` fields. */
function optional(key: string, value: unknown): Record<string, unknown> {
  return value === undefined ? {} : { [key]: value };
}

// A provider file id (V4 `{ type: 'reference' }`, V3 `file-id`) is data the guard cannot read. As a
// string with a URL scheme the estimator prices it as a referenced file (never by its length), and
// the prefix lets the way back restore the id when the guard rebuilt the part around it.
const REFERENCE_PREFIX = 'provider-reference:';

function referenceString(reference: unknown): string {
  return REFERENCE_PREFIX + JSON.stringify(reference);
}

function parseReference(data: unknown): unknown {
  if (typeof data !== 'string' || !data.startsWith(REFERENCE_PREFIX)) return undefined;
  try {
    return JSON.parse(data.slice(REFERENCE_PREFIX.length));
  } catch {
    return undefined;
  }
}

/** Base64 never contains ':', so a string with a scheme is a URL. */
function isUrlString(data: unknown): data is string {
  return typeof data === 'string' && /^[a-z][a-z0-9+.-]*:/i.test(data) && URL.canParse(data);
}

function toBytes(data: DataContent): Uint8Array | string | URL {
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}

// ---------------------------------------------------------------------------------------------
// The shared walk
// ---------------------------------------------------------------------------------------------

function toGuard(prompt: readonly Message[], dialect: Dialect): GuardPrompt {
  const origins = new WeakMap<object, object>();
  const messages = prompt.map((message) => {
    if (!Array.isArray(message.content)) return message; // system: a string, as in GuardMessage
    const content = mapSame(message.content as Part[], (part) => {
      const guardPart = toGuardPart(part, dialect);
      if (guardPart !== part) origins.set(guardPart, part);
      return guardPart;
    });
    if (content === message.content) return message;
    const copy = { ...message, content };
    origins.set(copy, message);
    return copy;
  });
  return { messages: messages as GuardMessage[], origins };
}

function toGuardPart(part: Part, dialect: Dialect): Part {
  if (part?.type !== 'tool-result') return part && typeof part === 'object' ? dialect.toPart(part) : part;
  const output = part['output'] as Part | undefined;
  if (output?.type !== 'content' || !Array.isArray(output['value'])) return part;
  const value = mapSame(output['value'] as Part[], (item) => (item && typeof item === 'object' ? dialect.toItem(item) : item));
  return value === output['value'] ? part : { ...part, output: { ...output, value } };
}

function fromGuard(messages: readonly GuardMessage[], { origins }: GuardPrompt, dialect: Dialect): Message[] {
  return messages.map((message) => {
    if (!message || typeof message !== 'object') return message;
    const original = origins.get(message) as Message | undefined;
    if (original) return original;
    const m = message as Message;
    if (m.role === 'system') {
      // The guard keeps system messages as they are; a non-string content would be a host's own.
      return typeof m.content === 'string' ? m : { ...m, content: textOf(m.content) };
    }
    // V4 and V3 user and assistant content is always an array of parts (summaries are strings).
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? (m.content as Part[]) : [];
    const content = mapSame(parts, (part) => (origins.get(part) as Part | undefined) ?? fromGuardPart(part, dialect));
    return content === m.content ? m : { ...m, content };
  });
}

function fromGuardPart(part: Part, dialect: Dialect): Part {
  if (!part || typeof part !== 'object') return part;
  switch (part.type) {
    case 'image':
      return dialect.fromMedia(part['image'] as DataContent, (part['mediaType'] as string | undefined) ?? 'image', undefined, part['providerOptions']);
    case 'file':
      return dialect.fromMedia(part['data'] as DataContent, part['mediaType'] as string, part['filename'], part['providerOptions']);
    case 'tool-result': {
      // Outputs the guard wrote are text; a content output it kept may still hold the guard's media items.
      const output = part['output'] as Part | undefined;
      if (output?.type !== 'content' || !Array.isArray(output['value'])) return part;
      const value = mapSame(output['value'] as Part[], (item) => (item && typeof item === 'object' ? dialect.fromItem(item) : item));
      return value === output['value'] ? part : { ...part, output: { ...output, value } };
    }
    default:
      return part;
  }
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return String(content ?? '');
  return content.map((p: Part) => (typeof p?.['text'] === 'string' ? p['text'] : '')).join('\n');
}

// ---------------------------------------------------------------------------------------------
// V4 (ai 7): file data is a tagged union
// ---------------------------------------------------------------------------------------------

/** The guard's data for V4 file data; undefined for inline text and variants this code does not know. */
function fromV4Data(data: SharedV4FileData): string | Uint8Array | undefined {
  switch (data?.type) {
    case 'data':
      return data.data;
    case 'url':
      // A string compares by value, so the measure cache still hits when the SDK rebuilds URL objects.
      return data.url.href;
    case 'reference':
      return referenceString(data.reference);
    default:
      return undefined;
  }
}

function toV4Data(data: DataContent): SharedV4FileData {
  const reference = parseReference(data);
  if (reference !== undefined) return { type: 'reference', reference: reference as Record<string, string> };
  if (data instanceof URL) return { type: 'url', url: data };
  if (isUrlString(data)) return { type: 'url', url: new URL(data) };
  return { type: 'data', data: toBytes(data) as string | Uint8Array };
}

const v4: Dialect = {
  toPart(part) {
    if (part.type !== 'file' && part.type !== 'reasoning-file') return part;
    const data = part['data'] as SharedV4FileData;
    const providerOptions = optional('providerOptions', part['providerOptions']);
    // An inline text document is read by the model as text, so the guard measures it as text.
    if (data?.type === 'text') return { type: 'text', text: data.text, ...providerOptions };
    const guardData = fromV4Data(data);
    if (guardData === undefined) return part;
    const mediaType = part['mediaType'];
    if (isImage(mediaType)) return { type: 'image', image: guardData, mediaType, ...providerOptions };
    return { type: 'file', data: guardData, mediaType, ...optional('filename', part['filename']), ...providerOptions };
  },
  toItem(item) {
    if (item.type !== 'file') return item;
    const data = item['data'] as SharedV4FileData;
    const providerOptions = optional('providerOptions', item['providerOptions']);
    if (data?.type === 'text') return { type: 'text', text: data.text, ...providerOptions };
    const guardData = fromV4Data(data);
    if (guardData === undefined) return item;
    const mediaType = item['mediaType'];
    return isImage(mediaType)
      ? { type: 'image-data', data: guardData, mediaType: imageMediaType(mediaType), ...providerOptions }
      : { type: 'file-data', data: guardData, mediaType, ...optional('filename', item['filename']), ...providerOptions };
  },
  fromMedia(data, mediaType, filename, providerOptions) {
    return { type: 'file', data: toV4Data(data), mediaType, ...optional('filename', filename), ...optional('providerOptions', providerOptions) };
  },
  fromItem(item) {
    if (item.type !== 'image-data' && item.type !== 'file-data' && item.type !== 'media') return item;
    return {
      type: 'file',
      data: toV4Data(item['data'] as DataContent),
      mediaType: item['mediaType'],
      ...optional('filename', item['filename']),
      ...optional('providerOptions', item['providerOptions']),
    };
  },
};

/** The guard's messages for an ai 7 (V4) prompt. */
export function toGuardMessages(prompt: LanguageModelV4Prompt): GuardPrompt {
  return toGuard(prompt, v4);
}

/**
 * The V4 prompt for the guard's messages: the SDK's own objects for everything the guard left
 * alone, valid V4 messages for what it wrote or edited.
 */
export function fromGuardMessages(messages: readonly GuardMessage[], converted: GuardPrompt): LanguageModelV4Prompt {
  return fromGuard(messages, converted, v4) as LanguageModelV4Prompt;
}

// ---------------------------------------------------------------------------------------------
// V3 (ai 6): file parts hold DataContent directly; tool outputs have url and file-id items
// ---------------------------------------------------------------------------------------------

const v3: Dialect = {
  // A V3 file part is already a guard file part; only images are told apart, to be priced as images.
  toPart(part) {
    if (part.type !== 'file' || !isImage(part['mediaType'])) return part;
    return { type: 'image', image: part['data'], mediaType: part['mediaType'], ...optional('providerOptions', part['providerOptions']) };
  },
  // `image-data` and `file-data` are what the estimator reads; the references become their data.
  toItem(item) {
    const providerOptions = optional('providerOptions', item['providerOptions']);
    switch (item.type) {
      case 'image-url':
        return { type: 'image-data', data: item['url'], mediaType: 'image/*', ...providerOptions };
      case 'file-url':
        return { type: 'file-data', data: item['url'], mediaType: item['mediaType'] ?? 'application/octet-stream', ...providerOptions };
      case 'image-file-id':
        return { type: 'image-data', data: referenceString(item['fileId']), mediaType: 'image/*', ...providerOptions };
      case 'file-id':
        return { type: 'file-data', data: referenceString(item['fileId']), mediaType: 'application/octet-stream', ...providerOptions };
      default:
        return item;
    }
  },
  fromMedia(data, mediaType, filename, providerOptions) {
    return { type: 'file', data: toBytes(data), mediaType, ...optional('filename', filename), ...optional('providerOptions', providerOptions) };
  },
  fromItem(item) {
    if (item.type !== 'image-data' && item.type !== 'file-data' && item.type !== 'media') return item;
    const image = item.type === 'image-data' || (item.type === 'media' && isImage(item['mediaType']));
    const data = item['data'];
    const providerOptions = optional('providerOptions', item['providerOptions']);
    const fileId = parseReference(data);
    if (fileId !== undefined) return { type: image ? 'image-file-id' : 'file-id', fileId, ...providerOptions };
    if (isUrlString(data)) {
      if (image) return { type: 'image-url', url: data, ...providerOptions };
      return { type: 'file-url', url: data, ...optional('mediaType', item['mediaType']), ...providerOptions };
    }
    if (item.type !== 'media') return item;
    return { type: image ? 'image-data' : 'file-data', data, mediaType: item['mediaType'], ...optional('filename', item['filename']), ...providerOptions };
  },
};

/** The guard's messages for an ai 6 (V3) prompt. */
export function toGuardMessagesV3(prompt: LanguageModelV3Prompt): GuardPrompt {
  return toGuard(prompt, v3);
}

/** The V3 prompt for the guard's messages; see {@link fromGuardMessages}. */
export function fromGuardMessagesV3(messages: readonly GuardMessage[], converted: GuardPrompt): LanguageModelV3Prompt {
  return fromGuard(messages, converted, v3) as LanguageModelV3Prompt;
}

// ---------------------------------------------------------------------------------------------
// Tool definitions
// ---------------------------------------------------------------------------------------------

/** V4 and V3 tools have the same shape. */
type SdkTool = LanguageModelV4FunctionTool | LanguageModelV4ProviderTool;

// The guard caches tool measures by identity (the array, then each definition), so the same SDK
// array or tool always maps to the same objects.
const toolLists = new WeakMap<readonly SdkTool[], ToolDefinition[]>();
const toolDefinitions = new WeakMap<SdkTool, ToolDefinition>();

function toGuardTool(tool: SdkTool): ToolDefinition {
  let definition = toolDefinitions.get(tool);
  if (!definition) {
    definition =
      tool.type === 'provider'
        ? // The provider defines the tool's schema and prompt; what we send, and can count, is its args.
          { name: tool.name, inputSchema: tool.args }
        : { name: tool.name, ...optional('description', tool.description), inputSchema: tool.inputSchema };
    toolDefinitions.set(tool, definition);
  }
  return definition;
}

/** The guard's tool definitions for `params.tools` (V4 or V3): the same array for the same input array. */
export function toGuardTools(tools: readonly SdkTool[] | undefined): ToolDefinition[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  let definitions = toolLists.get(tools);
  if (!definitions) {
    definitions = tools.map(toGuardTool);
    toolLists.set(tools, definitions);
  }
  return definitions;
}
