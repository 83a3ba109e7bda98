// Conversion between the AI SDK's language-model prompt (V4 for ai 7, V3 for ai 6) and the guard's
// GuardMessage model. Most of the prompt already has the guard's shape (text, reasoning, tool calls,
// most tool results), so those messages and parts are handed to the guard as they are, with no copy.
// Only media are rebuilt, so that the estimator prices them as images and files rather than by the
// length of their base64. On the way back, every message or part the guard left alone is restored
// to the very object the SDK sent (an origins map, per call), so untouched history stays
// byte-identical for provider prompt caches; what the guard wrote or edited is converted by shape.
// An edited part keeps none of the provider options that point at the original it was made from
// (stored item ids, signatures, encrypted originals): a provider that finds one sends or checks the
// original instead, and the edit would be undone on the wire (see "Provider references" below).
// The V3 (ai 6) types come from @ai-sdk/provider 4 too, which still ships them, so the published
// declarations name only the peer dependency.
import type {
  LanguageModelV3Prompt,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
  LanguageModelV4ProviderTool,
  SharedV4FileData,
} from '@ai-sdk/provider';
import {
  oneLine,
  safeJson,
  toolOutputText,
  type DataContent,
  type GuardMessage,
  type ToolDefinition,
  type ToolResultOutput,
} from '../../src/index.ts';
import { memoizedToolConverter } from '../shared/tool-memo.ts';

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

/** A V4 or V3 file part of media data, the data converted by `toData` (each version wants its own form). */
function fileOf(toData: (data: never) => unknown) {
  return (data: unknown, mediaType: string, filename: string | undefined, providerOptions: unknown) =>
    ({
      type: 'file',
      data: toData(data as never),
      mediaType,
      ...optional('filename', filename),
      ...optional('providerOptions', providerOptions),
    }) as never;
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
  const value = mapSame(output['value'] as Part[], (item) =>
    item && typeof item === 'object' ? dialect.toItem(item) : item,
  );
  return value === output['value'] ? part : { ...part, output: { ...output, value } };
}

function fromGuard(messages: readonly GuardMessage[], converted: GuardPrompt, dialect: Dialect): Message[] {
  const { origins } = converted;
  // Built on the first message the guard rewrote: most calls rewrite none.
  let inputs: InputParts | undefined;
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
    if (!Array.isArray(m.content))
      return { ...m, content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : [] };
    inputs ??= indexInputs(converted);
    return rebuiltMessage(m, m.content as Part[], inputs, dialect);
  });
}

/**
 * A message the guard rewrote: the SDK's own object for each part it left alone (or copied
 * unchanged), the part by shape, without its references to the original, for each part it edited
 * or wrote.
 */
function rebuiltMessage(m: Message, parts: Part[], inputs: InputParts, dialect: Dialect): Message {
  const edited = new Set<Part>();
  const taken = new Set<Part>();
  let content = mapSame(parts, (part) => {
    if (!part || typeof part !== 'object') return part;
    const sdk = inputs.sdkPartOf(part, m.role, taken);
    if (sdk) return sdk;
    const out = fromGuardPart(withObjectInput(withoutReferences(part, isReference), inputs), dialect);
    edited.add(out);
    return out;
  });
  if (edited.size === 0) return content === m.content ? m : { ...m, content };
  if (m.role === 'assistant') content = unbindResponse(content, edited);
  const providerOptions = withoutOptions(m.providerOptions, isReference);
  const copy: Message = { ...m, content };
  if (providerOptions === undefined) delete copy.providerOptions;
  else copy.providerOptions = providerOptions;
  return copy;
}

function fromGuardPart(part: Part, dialect: Dialect): Part {
  if (!part || typeof part !== 'object') return part;
  switch (part.type) {
    case 'image':
      return dialect.fromMedia(
        part['image'] as DataContent,
        (part['mediaType'] as string | undefined) ?? 'image',
        undefined,
        part['providerOptions'],
      );
    case 'file':
      return dialect.fromMedia(
        part['data'] as DataContent,
        part['mediaType'] as string,
        part['filename'],
        part['providerOptions'],
      );
    case 'tool-result': {
      // Outputs the guard wrote are text; a content output it kept may still hold the guard's media items.
      const output = part['output'] as Part | undefined;
      if (output?.type !== 'content' || !Array.isArray(output['value'])) return part;
      const value = mapSame(output['value'] as Part[], (item) =>
        item && typeof item === 'object' ? dialect.fromItem(item) : item,
      );
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
// Provider references to a stored or signed original
// ---------------------------------------------------------------------------------------------

// Provider options that point at the original a part was made from. A provider that finds one on
// an edited part sends or checks the original instead of the edit: OpenAI Responses (and Azure, or
// any provider name the OpenAI package runs under) sends a part with an `itemId` as an
// `item_reference` to the stored item when `store` is on, and replays `reasoningEncryptedContent` /
// `encryptedContent` (the original reasoning or compaction, encrypted); Anthropic and Bedrock sign a
// thinking block's text (`signature`; `redactedData` is the encrypted original) and point
// `citations` into the original text; Google signs the part a `thoughtSignature` is on. Anthropic
// marks its own compaction block with `type: 'compaction'` (and signs it): once cut, it is ordinary
// text. Everything else (cache control, image detail, phase) describes the part, not an original,
// and is kept.
const REFERENCE_KEYS = new Set([
  'itemId',
  'reasoningEncryptedContent',
  'encryptedContent',
  'signature',
  'redactedData',
  'citations',
  'thoughtSignature',
]);

type KeyFilter = (key: string, value: unknown) => boolean;

const isReference: KeyFilter = (key, value) => REFERENCE_KEYS.has(key) || (key === 'type' && value === 'compaction');

// OpenAI binds the output items of one response together: a stored message or function call must
// come with the reasoning item before it, and a reasoning item with the item after it ("Item
// 'msg_…' of type 'message' was provided without its required 'reasoning' item"). Once one part of
// an assistant message is sent by content, its other reasoning, text and tool-call parts are too.
// (A compaction item, a custom part, stands on its own and keeps its reference.)
const isItemReference: KeyFilter = (key) => key === 'itemId' || key === 'reasoningEncryptedContent';
const RESPONSE_ITEMS = new Set(['reasoning', 'text', 'tool-call']);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Provider options without the keys `drop` names; the same object when there are none; undefined when nothing is left.
 */
function withoutOptions(options: unknown, drop: KeyFilter): unknown {
  if (!isRecord(options)) return options;
  let out: Record<string, unknown> | undefined;
  for (const [provider, value] of Object.entries(options)) {
    if (!isRecord(value) || !Object.entries(value).some(([k, v]) => drop(k, v))) continue;
    const kept = Object.entries(value).filter(([k, v]) => !drop(k, v));
    out ??= { ...options };
    if (kept.length > 0) out[provider] = Object.fromEntries(kept);
    else delete out[provider];
  }
  if (!out) return options;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * A part without the references `drop` names, in its providerOptions and (as some hosts pass them) providerMetadata.
 */
function withoutReferences(part: Part, drop: KeyFilter): Part {
  let out: Part | undefined;
  for (const field of ['providerOptions', 'providerMetadata']) {
    if (!(field in part)) continue;
    const options = withoutOptions(part[field], drop);
    if (options === part[field]) continue;
    out ??= { ...part };
    if (options === undefined) delete out[field];
    else out[field] = options;
  }
  return out ?? part;
}

/**
 * An assistant message the guard edited, as one provider response no longer is: the other parts
 * lose their OpenAI items, and a provider-executed tool call whose call or result was edited
 * becomes text with its result (the provider would send the stored call and result, or reject a
 * result it cannot read).
 */
function unbindResponse(content: readonly Part[], edited: ReadonlySet<Part>): Part[] {
  const unpaired = new Set<unknown>();
  for (const part of edited) {
    if (part.type === 'tool-result' || (part.type === 'tool-call' && part['providerExecuted'] === true))
      unpaired.add(part['toolCallId']);
  }
  return content.map((part) => {
    if (!part || typeof part !== 'object') return part;
    if ((part.type === 'tool-call' || part.type === 'tool-result') && unpaired.has(part['toolCallId']))
      return providerToolText(part);
    return edited.has(part) || !RESPONSE_ITEMS.has(part.type as string)
      ? part
      : withoutReferences(part, isItemReference);
  });
}

/**
 * A tool call whose input the guard cut to a string (a clipped JSON text) while the original input
 * was an object, with that string as an object again: providers take a function call's arguments
 * only as an object (Google rejects anything else; Anthropic wraps it in `rawInvalidInput`).
 */
function withObjectInput(part: Part, inputs: InputParts): Part {
  if (part.type !== 'tool-call' || isRecord(part['input'])) return part;
  const original = inputs.originalOf(part);
  return original && isRecord(original['input']) ? { ...part, input: { input: part['input'] } } : part;
}

/** A provider-executed tool call or result as the text the model reads. */
function providerToolText(part: Part): Part {
  const name = oneLine(part['toolName'], 100);
  const id = oneLine(part['toolCallId'], 100);
  if (part.type === 'tool-call') {
    return {
      type: 'text',
      text: `[Provider tool ${name} (${id}) was called with input ${oneLine(safeJson(part['input']), 2_000)}]`,
    };
  }
  const { text, isError } = toolOutputText(part['output'] as ToolResultOutput | undefined);
  return { type: 'text', text: `[${isError ? 'Error' : 'Result'} of provider tool ${name} (${id}):]\n${text}` };
}

/** The parts of the guard's input, to tell the parts it left alone (or copied unchanged) from the ones it edited. */
interface InputParts {
  /**
   * The SDK part a part of a `role` message stands for when the guard did not change it; undefined
   * when it edited or wrote it. `taken` holds the input parts already matched in the same message:
   * two SDK parts can look the same to the guard (a file and a reasoning file with the same data).
   */
  sdkPartOf(part: Part, role: string, taken: Set<Part>): Part | undefined;
  /**
   * An input part of the same type and key (tool call id, text, data) as `part`, which the guard may have edited it
   * from.
   */
  originalOf(part: Part): Part | undefined;
}

/** What tells a part from most others cheaply: its text, tool call id or data, else its type. */
function keyOf(part: Part): unknown {
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return part['text'];
    case 'tool-call':
    case 'tool-result':
      return part['toolCallId'];
    case 'image':
      return part['image'];
    case 'file':
      return part['data'];
    default:
      return part.type;
  }
}

/** Same own fields, with the same values (a shallow copy the guard made and did not change). */
function shallowEqual(a: Part, b: Part): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

function indexInputs({ messages, origins }: GuardPrompt): InputParts {
  const inputs = new Set<object>();
  const byKey = new Map<unknown, Array<{ part: Part; role: unknown }>>();
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content as Part[]) {
      if (!part || typeof part !== 'object') continue;
      inputs.add(part);
      const key = keyOf(part);
      const entry = { part, role: message.role };
      const same = byKey.get(key);
      if (same) same.push(entry);
      else byKey.set(key, [entry]);
    }
  }
  const sdkOf = (part: Part) => (origins.get(part) as Part | undefined) ?? part;
  return {
    sdkPartOf(part, role, taken) {
      if (inputs.has(part)) return sdkOf(part);
      const input = byKey
        .get(keyOf(part))
        ?.find((c) => c.role === role && !taken.has(c.part) && shallowEqual(c.part, part))?.part;
      if (!input) return undefined;
      taken.add(input);
      return sdkOf(input);
    },
    originalOf(part) {
      return byKey.get(keyOf(part))?.find((c) => c.part.type === part.type)?.part;
    },
  };
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

/**
 * A V4 file part or output item as the guard reads it: text for an inline text document, `media`
 * of the guard's data for data it can price, else the part itself (a variant this code does not know).
 */
function fromV4File(
  part: Part,
  media: (data: string | Uint8Array, mediaType: unknown, providerOptions: Record<string, unknown>) => Part,
): Part {
  const data = part['data'] as SharedV4FileData;
  const providerOptions = optional('providerOptions', part['providerOptions']);
  // An inline text document is read by the model as text, so the guard measures it as text.
  if (data?.type === 'text') return { type: 'text', text: data.text, ...providerOptions };
  const guardData = fromV4Data(data);
  return guardData === undefined ? part : media(guardData, part['mediaType'], providerOptions);
}

const v4: Dialect = {
  toPart(part) {
    if (part.type !== 'file' && part.type !== 'reasoning-file') return part;
    return fromV4File(part, (data, mediaType, providerOptions) =>
      isImage(mediaType)
        ? { type: 'image', image: data, mediaType, ...providerOptions }
        : { type: 'file', data, mediaType, ...optional('filename', part['filename']), ...providerOptions },
    );
  },
  toItem(item) {
    if (item.type !== 'file') return item;
    return fromV4File(item, (data, mediaType, providerOptions) =>
      isImage(mediaType)
        ? { type: 'image-data', data, mediaType: imageMediaType(mediaType), ...providerOptions }
        : { type: 'file-data', data, mediaType, ...optional('filename', item['filename']), ...providerOptions },
    );
  },
  fromMedia: fileOf(toV4Data),
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
    return {
      type: 'image',
      image: part['data'],
      mediaType: part['mediaType'],
      ...optional('providerOptions', part['providerOptions']),
    };
  },
  // `image-data` and `file-data` are what the estimator reads; the references become their data.
  toItem(item) {
    const providerOptions = optional('providerOptions', item['providerOptions']);
    switch (item.type) {
      case 'image-url':
        return { type: 'image-data', data: item['url'], mediaType: 'image/*', ...providerOptions };
      case 'file-url':
        return {
          type: 'file-data',
          data: item['url'],
          mediaType: item['mediaType'] ?? 'application/octet-stream',
          ...providerOptions,
        };
      case 'image-file-id':
        return { type: 'image-data', data: referenceString(item['fileId']), mediaType: 'image/*', ...providerOptions };
      case 'file-id':
        return {
          type: 'file-data',
          data: referenceString(item['fileId']),
          mediaType: 'application/octet-stream',
          ...providerOptions,
        };
      default:
        return item;
    }
  },
  fromMedia: fileOf(toBytes),
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
    return {
      type: image ? 'image-data' : 'file-data',
      data,
      mediaType: item['mediaType'],
      ...optional('filename', item['filename']),
      ...providerOptions,
    };
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

function toGuardTool(tool: SdkTool): ToolDefinition {
  return tool.type === 'provider'
    ? // The provider defines the tool's schema and prompt; what we send, and can count, is its args.
      { name: tool.name, inputSchema: tool.args }
    : { name: tool.name, ...optional('description', tool.description), inputSchema: tool.inputSchema };
}

const convertTools = memoizedToolConverter(toGuardTool);

/** The guard's tool definitions for `params.tools` (V4 or V3): the same array for the same input array. */
export function toGuardTools(tools: readonly SdkTool[] | undefined): ToolDefinition[] | undefined {
  return convertTools(tools);
}
