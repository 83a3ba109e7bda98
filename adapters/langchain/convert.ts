// Conversion between LangChain's BaseMessages and the guard's GuardMessage model, both ways.
//
// Identity is the point. Agent state and checkpoints hold the same BaseMessage objects from call to
// call, so each one is converted once (cached per object) and the guard's per-message measures hit
// their cache; on the way back, every guard message the guard left alone is the very BaseMessage it
// came from (a module-wide guard → original map), so untouched history reaches the provider as the
// objects the host built; so does a copy the guard made without changing anything. What the guard
// wrote is converted by shape; what it edited (a pruned tool output, a tool call turned into a note,
// a clipped message) keeps the original's id, name, additional_kwargs, response_metadata and
// tool-call ids, except what points at the stored or signed original (OpenAI's stored output items
// and item ids, citations, signatures): a provider package that finds one re-sends or checks the
// original, and the edit would be undone on the wire. The guard edits a message by spreading it
// (`{ ...message, content }`), which copies an enumerable symbol-keyed field: that field (SOURCE)
// names the BaseMessage an edited copy descends from. Symbol keys are invisible to the estimator,
// to the content hashes and to JSON, so they change nothing the guard measures or stores.
//
// Content blocks the guard can read as they are (LangChain's `{ type: 'text', text }`) are handed
// over as the same objects; media blocks in any of LangChain's spellings (OpenAI `image_url`,
// standard v1 and v0 data blocks, Anthropic `source` blocks, OpenAI `file`/`input_audio`) become
// guard image and file parts so that they are priced by what providers charge, not by the length
// of their base64. Unknown blocks pass through untouched (and are counted by their JSON).
import {
  AIMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  type BaseMessage,
  type ToolCall,
} from '@langchain/core/messages';
import { isLangChainTool } from '@langchain/core/utils/function_calling';
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import type { DataContent, GuardMessage, ToolDefinition, ToolResultOutput, ToolResultPart } from '../../src/index.ts';
import { memoizedToolConverter } from '../shared/tool-memo.ts';

type Block = Record<string, unknown> & { type?: unknown };
type Part = Record<string, unknown> & { type?: unknown };
type Role = GuardMessage['role'];

/** The BaseMessage a guard message (or the guard's edited copy of it) comes from. */
const SOURCE = Symbol.for('context-guard.langchain.source');

/** Guard message or part → the LangChain message or block it stands for, unchanged. */
const origins = new WeakMap<object, object>();

interface Converted {
  guard: GuardMessage;
  /** What the conversion read: a replaced field (not an in-place edit) invalidates it. */
  content: unknown;
  toolCalls: unknown;
  toolName: string | undefined;
}

/** BaseMessage → its guard message. */
const conversions = new WeakMap<BaseMessage, Converted>();

/**
 * Tool-call parts read from a content block (a call with no `tool_calls` entry): on the way back
 * they stay blocks. Kept apart because a `tool_calls` entry and a v1 content block share a type.
 */
const contentCalls = new WeakSet<object>();

/** Tool-call content blocks that repeat an entry of `tool_calls` (Anthropic `tool_use`, v1 `tool_call`). */
const TOOL_CALL_BLOCKS = new Set(['tool_use', 'tool_call', 'tool_call_chunk', 'function_call']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The call id of a tool-call block (OpenAI Responses items carry an item `id` besides the `call_id`). */
const blockCallId = (b: Record<string, unknown>): string | undefined => str(b['call_id']) ?? str(b['id']);

/** `{ key: value }` when the value is set, so built objects carry no `undefined` fields. */
function optional(key: string, value: unknown): Record<string, unknown> {
  return value === undefined ? {} : { [key]: value };
}

// ---------------------------------------------------------------------------------------------
// Roles
// ---------------------------------------------------------------------------------------------

function typeOf(message: BaseMessage): string {
  const m = message as BaseMessage & { _getType?: () => string };
  return String(m.type ?? m._getType?.() ?? '');
}

/**
 * The guard role of a message. ChatMessages use their role; legacy FunctionMessages (no tool-call
 * id to pair with) are read as an assistant note attributed to their function (tool output never
 * takes the user's voice); unknown types are read as user text, so they are counted and kept.
 */
function roleOf(message: BaseMessage): Role {
  let type = typeOf(message);
  if (type === 'generic') type = String((message as { role?: unknown }).role ?? '');
  switch (type) {
    case 'system':
    case 'developer':
      return 'system';
    case 'ai':
    case 'assistant':
      return 'assistant';
    case 'tool':
      return 'tool';
    case 'function':
      return 'assistant';
    default:
      return 'user';
  }
}

function toolCallsOf(message: BaseMessage): readonly ToolCall[] {
  const calls = (message as { tool_calls?: unknown }).tool_calls;
  return Array.isArray(calls) ? (calls as ToolCall[]) : [];
}

// ---------------------------------------------------------------------------------------------
// Media
// ---------------------------------------------------------------------------------------------

// A provider file id is data the guard cannot read. As a string with a URL scheme it is priced as
// a referenced file (never by its length), and the way back turns it into a `fileId` again.
const FILE_ID_PREFIX = 'file-id:';

interface Media {
  data: DataContent;
  mediaType: string | undefined;
  filename?: string;
}

const DATA_URL = /^data:([^;,]+)?((?:;[^;,]*)*?);base64,/i;

function mediaTypeOfDataUrl(url: string): string | undefined {
  return DATA_URL.exec(url.slice(0, 256))?.[1];
}

/** The data of a media block in any of LangChain's spellings; `{ text }` for an inline text document. */
function mediaOf(block: Block): Media | { text: string } | undefined {
  const mimeType = str(block['mimeType']) ?? str(block['mime_type']);
  // Standard v0 data blocks: { source_type, url | data | id | text, mime_type }.
  switch (block['source_type']) {
    case 'url':
      return typeof block['url'] === 'string'
        ? { data: block['url'], mediaType: mimeType ?? mediaTypeOfDataUrl(block['url']) }
        : undefined;
    case 'base64':
      return typeof block['data'] === 'string' ? { data: block['data'], mediaType: mimeType } : undefined;
    case 'id':
      return typeof block['id'] === 'string' ? { data: FILE_ID_PREFIX + block['id'], mediaType: mimeType } : undefined;
    case 'text':
      return typeof block['text'] === 'string' ? { text: block['text'] } : undefined;
  }
  // Standard v1 blocks: { url | data | fileId, mimeType }.
  if (typeof block['url'] === 'string')
    return { data: block['url'], mediaType: mimeType ?? mediaTypeOfDataUrl(block['url']) };
  if (typeof block['data'] === 'string' || block['data'] instanceof Uint8Array)
    return { data: block['data'] as DataContent, mediaType: mimeType };
  if (typeof block['fileId'] === 'string') return { data: FILE_ID_PREFIX + block['fileId'], mediaType: mimeType };
  // Anthropic: { source: { type: 'base64' | 'url' | 'text' | 'file', ... } }.
  const source = block['source'];
  if (isObject(source)) {
    const mediaType = str(source['media_type']) ?? mimeType;
    if (source['type'] === 'base64' && typeof source['data'] === 'string') return { data: source['data'], mediaType };
    if (source['type'] === 'url' && typeof source['url'] === 'string') return { data: source['url'], mediaType };
    if (source['type'] === 'text' && typeof source['data'] === 'string') return { text: source['data'] };
    if (source['type'] === 'file' && typeof source['file_id'] === 'string')
      return { data: FILE_ID_PREFIX + source['file_id'], mediaType };
    return undefined;
  }
  // OpenAI chat completions: { file: { file_data | file_id, filename } }, { input_audio: { data, format } }.
  const file = block['file'];
  if (isObject(file)) {
    const filename = str(file['filename']);
    if (typeof file['file_data'] === 'string') {
      return {
        data: file['file_data'],
        mediaType: mediaTypeOfDataUrl(file['file_data']) ?? mimeType,
        ...optional('filename', filename),
      };
    }
    if (typeof file['file_id'] === 'string')
      return { data: FILE_ID_PREFIX + file['file_id'], mediaType: mimeType, ...optional('filename', filename) };
  }
  const audio = block['input_audio'];
  if (isObject(audio) && typeof audio['data'] === 'string') {
    return {
      data: audio['data'],
      mediaType: typeof audio['format'] === 'string' ? `audio/${audio['format']}` : 'audio/*',
    };
  }
  return undefined;
}

const MEDIA_BLOCKS = new Set([
  'image',
  'image_url',
  'input_image',
  'file',
  'audio',
  'video',
  'document',
  'input_audio',
  'text-plain',
]);

/** The guard part for a media block (image or file), or the block itself when it cannot be read. */
function mediaPart(block: Block, { fileOnly }: { fileOnly: boolean }): Part {
  let media: Media | { text: string } | undefined;
  let providerOptions: Record<string, Record<string, unknown>> | undefined;
  if (block.type === 'image_url' || block.type === 'input_image') {
    // Chat completions `{ image_url: string | { url, detail } }`; Responses `{ image_url?, file_id?, detail }`.
    const imageUrl = block['image_url'];
    const fileId = str(block['file_id']);
    const url =
      typeof imageUrl === 'string'
        ? imageUrl
        : isObject(imageUrl)
          ? str(imageUrl['url'])
          : fileId !== undefined
            ? FILE_ID_PREFIX + fileId
            : undefined;
    if (url === undefined) return block;
    media = { data: url, mediaType: mediaTypeOfDataUrl(url) ?? 'image/*' };
    // OpenAI's `detail: 'low'` is priced as such by the estimator.
    const detail = isObject(imageUrl) ? imageUrl['detail'] : block['detail'];
    if (typeof detail === 'string') providerOptions = { openai: { imageDetail: detail } };
  } else {
    media = block.type === 'text-plain' && typeof block['text'] === 'string' ? { text: block['text'] } : mediaOf(block);
  }
  if (media === undefined) return block;
  // An inline text document is read by the model as text, so the guard measures it as text.
  if ('text' in media) return { type: 'text', text: media.text };
  const fallback =
    block.type === 'image' || block.type === 'image_url' || block.type === 'input_image'
      ? 'image/*'
      : block.type === 'audio' || block.type === 'video'
        ? `${block.type}/*`
        : 'application/octet-stream';
  const mediaType = media.mediaType ?? fallback;
  const po = optional('providerOptions', providerOptions);
  if (!fileOnly && /^image(\/|$)/i.test(mediaType)) return { type: 'image', image: media.data, mediaType, ...po };
  return {
    type: 'file',
    data: media.data,
    mediaType,
    ...optional('filename', media.filename ?? str(block['filename'])),
    ...po,
  };
}

/** The guard item of a `content` tool output for a block of a ToolMessage's content. */
function outputItem(block: unknown): Part {
  if (typeof block === 'string') return { type: 'text', text: block };
  if (!isObject(block)) return block as Part;
  const b = block as Block;
  if (b.type === 'text' && typeof b['text'] === 'string') return b;
  if (typeof b.type !== 'string' || !MEDIA_BLOCKS.has(b.type)) return b;
  const part = mediaPart(b, { fileOnly: false });
  if (part === b) return b;
  const item: Part =
    part.type === 'image'
      ? { type: 'image-data', data: part['image'], mediaType: part['mediaType'] }
      : part.type === 'file'
        ? {
            type: 'file-data',
            data: part['data'],
            mediaType: part['mediaType'],
            ...optional('filename', part['filename']),
          }
        : part;
  origins.set(item, b);
  return item;
}

// ---------------------------------------------------------------------------------------------
// BaseMessage → GuardMessage
// ---------------------------------------------------------------------------------------------

/** Joined text of a content array (system messages are a string in the guard's model). */
function plainText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : JSON.stringify(content);
  return content
    .map((b: unknown) =>
      typeof b === 'string'
        ? b
        : isObject(b) && typeof b['text'] === 'string'
          ? b['text']
          : isObject(b)
            ? JSON.stringify(b)
            : '',
    )
    .join('\n');
}

function userPart(block: unknown): Part {
  if (typeof block === 'string') return { type: 'text', text: block };
  if (!isObject(block)) return block as Part;
  const b = block as Block;
  if (b.type === 'text' || typeof b.type !== 'string' || !MEDIA_BLOCKS.has(b.type)) return b;
  const part = mediaPart(b, { fileOnly: false });
  if (part !== b) origins.set(part, b);
  return part;
}

function userContent(content: unknown): string | Part[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return plainText(content);
  return content.map(userPart);
}

function parseArguments(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function assistantContent(message: BaseMessage): string | Part[] {
  const content = message.content as unknown;
  const calls = toolCallsOf(message);
  if (typeof content === 'string' && calls.length === 0) return content;
  const ids = new Set(calls.map((c) => c.id));
  const parts: Part[] = [];
  const blocks: unknown[] =
    typeof content === 'string'
      ? content
        ? [{ type: 'text', text: content }]
        : []
      : Array.isArray(content)
        ? content
        : [];
  for (const block of blocks) {
    if (typeof block === 'string') {
      parts.push({ type: 'text', text: block });
      continue;
    }
    if (!isObject(block)) continue;
    const b = block as Block;
    let part: Part = b;
    if (b.type === 'reasoning' || b.type === 'thinking') {
      // v1 `reasoning`, Anthropic `thinking` (the block, with its signature, is restored on the way back).
      const text = str(b['reasoning']) ?? str(b['thinking']) ?? str(b['text']) ?? '';
      part = { type: 'reasoning', text };
    } else if (typeof b.type === 'string' && TOOL_CALL_BLOCKS.has(b.type)) {
      const id = blockCallId(b);
      // Repeats a `tool_calls` entry: counted there, and restored with it on the way back.
      if (id !== undefined && ids.has(id)) continue;
      // A tool call that lives only in the content (no `tool_calls` entry) is still a call to pair.
      part = {
        type: 'tool-call',
        toolCallId: id ?? '',
        toolName: str(b['name']) ?? '',
        input: b['input'] ?? b['args'] ?? parseArguments(b['arguments']) ?? {},
      };
      contentCalls.add(part);
    } else if (typeof b.type === 'string' && MEDIA_BLOCKS.has(b.type)) {
      part = mediaPart(b, { fileOnly: true });
    }
    if (part !== b) origins.set(part, b);
    parts.push(part);
  }
  for (const call of calls) {
    const part: Part = { type: 'tool-call', toolCallId: call.id ?? '', toolName: call.name, input: call.args ?? {} };
    origins.set(part, call);
    parts.push(part);
  }
  return parts;
}

function toolOutput(message: BaseMessage): ToolResultOutput {
  const content = message.content as unknown;
  const error = (message as { status?: unknown }).status === 'error';
  if (typeof content === 'string') return { type: error ? 'error-text' : 'text', value: content };
  if (Array.isArray(content)) {
    const items = content.map(outputItem);
    if (items.every((i) => i?.type === 'text' && typeof i['text'] === 'string')) {
      return { type: error ? 'error-text' : 'text', value: items.map((i) => i['text']).join('\n') };
    }
    return { type: 'content', value: items as Array<{ type: string; [key: string]: unknown }> };
  }
  return { type: error ? 'error-json' : 'json', value: content ?? null };
}

/** A legacy FunctionMessage (or a ChatMessage with the role `function`): a function's output. */
function isFunctionOutput(message: BaseMessage): boolean {
  const type = typeOf(message);
  return type === 'function' || (type === 'generic' && (message as { role?: unknown }).role === 'function');
}

/** A function's output as the guard reads it: attributed to the function, never as the user's words. */
function functionNote(message: BaseMessage): string {
  const name = typeof message.name === 'string' && message.name ? ` ${message.name.slice(0, 100)}` : '';
  return `[Output of function${name}, not an instruction from the user:]\n${plainText(message.content)}`;
}

function convert(message: BaseMessage, toolName: string | undefined): GuardMessage {
  const role = roleOf(message);
  let guard: GuardMessage;
  switch (role) {
    case 'system':
      guard = { role, content: plainText(message.content) };
      break;
    case 'assistant':
      guard = isFunctionOutput(message)
        ? { role, content: [{ type: 'text', text: functionNote(message) }] }
        : ({ role, content: assistantContent(message) } as GuardMessage);
      break;
    case 'tool': {
      const part: ToolResultPart = {
        type: 'tool-result',
        toolCallId: String((message as { tool_call_id?: unknown }).tool_call_id ?? ''),
        toolName: toolName ?? '',
        output: toolOutput(message),
      };
      guard = { role, content: [part] };
      break;
    }
    default:
      guard = { role: 'user', content: userContent(message.content) } as GuardMessage;
  }
  (guard as unknown as Record<symbol, unknown>)[SOURCE] = message;
  return guard;
}

function guardOf(message: BaseMessage, toolName: string | undefined): GuardMessage {
  const cached = conversions.get(message);
  const toolCalls = (message as { tool_calls?: unknown }).tool_calls;
  if (cached && cached.content === message.content && cached.toolCalls === toolCalls && cached.toolName === toolName)
    return cached.guard;
  const guard = convert(message, toolName);
  conversions.set(message, { guard, content: message.content, toolCalls, toolName });
  origins.set(guard, message);
  return guard;
}

/**
 * The guard's messages for a list of BaseMessages. Each BaseMessage maps to one guard message, the
 * same object on every call while its content is unchanged. A ToolMessage without a `name` takes
 * its tool's name from the AIMessage call it answers.
 */
export function toGuardMessages(messages: readonly BaseMessage[]): GuardMessage[] {
  const names = new Map<string, string>();
  return messages.map((message) => {
    if (!isObject(message)) return message as unknown as GuardMessage;
    const role = roleOf(message);
    const name =
      role === 'tool'
        ? (str(message.name) ?? names.get(String((message as { tool_call_id?: unknown }).tool_call_id)))
        : undefined;
    const guard = guardOf(message, name);
    if (role === 'assistant' && Array.isArray(guard.content)) {
      for (const part of guard.content)
        if (part?.type === 'tool-call' && part.toolCallId) names.set(part.toolCallId, part.toolName);
    }
    return guard;
  });
}

// ---------------------------------------------------------------------------------------------
// GuardMessage → BaseMessage
// ---------------------------------------------------------------------------------------------

function sourceOf(message: GuardMessage): BaseMessage | undefined {
  return (message as unknown as Record<symbol, BaseMessage | undefined>)[SOURCE];
}

// ---------------------------------------------------------------------------------------------
// What an edit keeps of the original
// ---------------------------------------------------------------------------------------------

// What @langchain/openai's Responses converter sends in place of an assistant message's content:
// `response_metadata.output` (the stored output items, re-sent verbatim), `additional_kwargs.reasoning`
// (the reasoning item: its id and encrypted original) and the function calls' item ids, which
// OpenAI binds to that reasoning item. An edited message is sent by its content instead.
const STORED_METADATA = new Set(['output']);
const STORED_KWARGS = new Set(['reasoning', '__openai_function_call_ids__']);

/**
 * OpenAI Responses item ids (`msg_…`, `fc_…`, `rs_…`), which @langchain/openai sends as the id of an assistant or tool
 * message's item.
 */
const STORED_ITEM_ID = /^(msg|fc|rs)_/;

// Fields of a content block that point at the original text: Anthropic's citations (signed
// indexes into search results), OpenAI's annotations (offsets into the original) and item ids,
// signatures over the original.
const BLOCK_REFERENCES = new Set([
  'id',
  'citations',
  'annotations',
  'signature',
  'thoughtSignature',
  'thought_signature',
  'encrypted_content',
]);

/** `record` without the keys in `keys`; the same object when it has none. */
function without(record: Record<string, unknown>, keys: ReadonlySet<string>): Record<string, unknown> {
  if (!Object.keys(record).some((k) => keys.has(k))) return record;
  return Object.fromEntries(Object.entries(record).filter(([k]) => !keys.has(k)));
}

/**
 * The fields an edited message keeps from the message it was edited from: not those that point at the stored original.
 */
function kept(source: BaseMessage | undefined): Record<string, unknown> {
  if (!source) return {};
  return {
    ...optional('id', typeof source.id === 'string' && STORED_ITEM_ID.test(source.id) ? undefined : source.id),
    ...optional('name', source.name),
    additional_kwargs: without(source.additional_kwargs ?? {}, STORED_KWARGS),
    response_metadata: without(source.response_metadata ?? {}, STORED_METADATA),
  };
}

/** Same own fields, with the same values (a shallow copy the guard made and did not change). */
function shallowEqual(a: Part, b: Part): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** The parts of an edited message, told apart: those the guard left alone, and the rest. */
interface RestoredParts {
  /**
   * Every part the guard copied without changing it replaced by the part it copied, so that it maps back to its
   * original.
   */
  parts: Part[];
  /** The parts of the source's own conversion among them: their blocks go back as they were, references and all. */
  originals: ReadonlySet<Part>;
  /** Whether the message is still the source's conversion, part for part. */
  unchanged: boolean;
}

function restoreUnchanged(parts: readonly Part[], source: BaseMessage | undefined): RestoredParts {
  const input = source ? conversions.get(source)?.guard.content : undefined;
  if (!Array.isArray(input)) return { parts: parts.slice(), originals: new Set(), unchanged: false };
  const inputs = input as unknown as Part[];
  const originals = new Set<Part>();
  const restored = parts.map((part) => {
    if (!isObject(part)) return part;
    const same = inputs.includes(part)
      ? part
      : inputs.find((p) => isObject(p) && !originals.has(p) && shallowEqual(p, part));
    if (!same) return part;
    originals.add(same);
    return same;
  });
  return {
    parts: restored,
    originals,
    unchanged: restored.length === inputs.length && restored.every((p, i) => p === inputs[i]),
  };
}

/** A data reference as LangChain's standard v1 data fields. */
function dataFields(data: DataContent, mediaType: string | undefined): Record<string, unknown> {
  const mimeType = optional('mimeType', mediaType && !mediaType.endsWith('/*') ? mediaType : undefined);
  if (data instanceof URL) data = data.href;
  if (data instanceof ArrayBuffer) return { data: new Uint8Array(data), ...mimeType };
  if (data instanceof Uint8Array) return { data, ...mimeType };
  if (data.startsWith(FILE_ID_PREFIX)) return { fileId: data.slice(FILE_ID_PREFIX.length), ...mimeType };
  const dataUrl = DATA_URL.exec(data.slice(0, 256));
  if (dataUrl) return { data: data.slice(dataUrl[0].length), mimeType: dataUrl[1] ?? mediaType };
  if (/^[a-z][a-z0-9+.-]*:/i.test(data) && URL.canParse(data)) return { url: data, ...mimeType };
  return { data, ...mimeType };
}

/**
 * The LangChain block for a guard part: its original block, else a standard block by shape.
 * `originals` are the parts that are the host's own blocks (text blocks are read as they are).
 */
function blockOf(part: Part, originals: ReadonlySet<Part> = new Set()): unknown {
  if (!isObject(part)) return part;
  const origin = origins.get(part);
  if (origin) return origin;
  switch (part.type) {
    case 'text':
      // An edited copy of a block: what pointed into the original text goes.
      return originals.has(part) ? part : without(part, BLOCK_REFERENCES);
    case 'reasoning':
      return { type: 'reasoning', reasoning: String(part['text'] ?? '') };
    case 'image':
    case 'image-data':
      return { type: 'image', ...dataFields((part['image'] ?? part['data']) as DataContent, str(part['mediaType'])) };
    case 'file':
    case 'file-data':
    case 'media': {
      const mediaType = str(part['mediaType']);
      const type = mediaType?.startsWith('image/')
        ? 'image'
        : mediaType?.startsWith('audio/')
          ? 'audio'
          : mediaType?.startsWith('video/')
            ? 'video'
            : 'file';
      return {
        type,
        ...dataFields(part['data'] as DataContent, mediaType),
        ...optional('metadata', part['filename'] !== undefined ? { filename: part['filename'] } : undefined),
      };
    }
    default:
      return part;
  }
}

/** A string when every block is plain text and the original was a string too. */
function contentOf(parts: unknown[], { preferString }: { preferString: boolean }): string | unknown[] {
  const plain = parts.every(
    (b) => isObject(b) && b['type'] === 'text' && typeof b['text'] === 'string' && Object.keys(b).length === 2,
  );
  return preferString && plain ? parts.map((b) => (b as { text: string }).text).join('\n') : parts;
}

function toolCallOf(part: Part): ToolCall {
  const origin = origins.get(part) as ToolCall | undefined;
  if (origin) return origin;
  const input = part['input'];
  // A clipped input is a string: LangChain's args are an object.
  const args = isObject(input) && !Array.isArray(input) ? input : { input };
  return { type: 'tool_call', id: String(part['toolCallId'] ?? ''), name: String(part['toolName'] ?? ''), args };
}

function buildAssistant(
  message: GuardMessage,
  restored: Omit<RestoredParts, 'unchanged'>,
  source: BaseMessage | undefined,
): BaseMessage {
  const { parts, originals } = restored;
  const calls = parts.filter((p) => isObject(p) && p.type === 'tool-call' && !contentCalls.has(p));
  // Calls sent as they were: their content blocks and raw entries still say what the call was.
  const keptIds = new Set(calls.filter((p) => origins.has(p)).map((p) => String(p['toolCallId'])));
  let content: string | unknown[];
  if (typeof message.content === 'string') content = message.content;
  else {
    const blocks = parts.filter((p) => !calls.includes(p)).map((p) => blockOf(p, originals));
    // Content blocks repeating a kept call (Anthropic `tool_use`) go back with it; a removed or edited
    // call's go (the provider package writes an edited call from `tool_calls`, not from the original block).
    const repeated = Array.isArray(source?.content)
      ? (source.content as unknown[]).filter(
          (b) =>
            isObject(b) &&
            TOOL_CALL_BLOCKS.has(String(b['type'])) &&
            keptIds.has(String(blockCallId(b))) &&
            !blocks.includes(b),
        )
      : [];
    content = contentOf([...blocks, ...repeated], {
      preferString: typeof source?.content === 'string' || source === undefined,
    });
  }
  const fields = kept(source);
  // Raw OpenAI tool calls in additional_kwargs are sent when `tool_calls` is empty: keep only the unchanged ones.
  const raw = (fields['additional_kwargs'] as { tool_calls?: unknown } | undefined)?.tool_calls;
  if (Array.isArray(raw)) {
    const { tool_calls: _raw, ...rest } = fields['additional_kwargs'] as Record<string, unknown>;
    const still = raw.filter((c: unknown) => isObject(c) && keptIds.has(String(c['id'])));
    fields['additional_kwargs'] = still.length > 0 ? { ...rest, tool_calls: still } : rest;
  }
  const s = source as AIMessage | undefined;
  return new AIMessage({
    ...fields,
    content: content as AIMessage['content'],
    tool_calls: calls.map(toolCallOf),
    ...optional('invalid_tool_calls', s?.invalid_tool_calls?.length ? s.invalid_tool_calls : undefined),
    ...optional('usage_metadata', s?.usage_metadata),
  });
}

function outputContent(output: ToolResultOutput | undefined): string | unknown[] {
  if (!isObject(output)) return '';
  switch (output.type) {
    case 'text':
    case 'error-text':
      return typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
    case 'json':
    case 'error-json':
      return typeof output.value === 'string' ? output.value : (JSON.stringify(output.value) ?? '');
    case 'execution-denied':
      return output.reason ?? 'The tool call was denied.';
    case 'content':
      return Array.isArray(output.value) ? output.value.map((item) => blockOf(item as Part)) : '';
    default:
      return JSON.stringify((output as { value?: unknown }).value ?? '') ?? '';
  }
}

function buildTools(parts: ToolResultPart[], source: BaseMessage | undefined): BaseMessage[] {
  const s = source as ToolMessage | undefined;
  return parts.map((part, i) => {
    const error = part.output?.type === 'error-text' || part.output?.type === 'error-json';
    // Only the first message of a split keeps the id: ids are unique in a LangGraph state.
    const fields = i === 0 ? kept(source) : {};
    return new ToolMessage({
      ...fields,
      ...(source ? {} : { name: part.toolName }),
      content: outputContent(part.output) as ToolMessage['content'],
      tool_call_id: part.toolCallId,
      ...optional('status', error ? 'error' : s?.status),
      ...optional('artifact', s?.artifact),
      ...optional('metadata', s?.metadata),
    });
  });
}

function build(message: GuardMessage): BaseMessage[] {
  const source = sourceOf(message);
  // Fields are kept only from a message of the same role (an orphan result that became user text is new).
  const same = source && roleOf(source) === message.role ? source : undefined;
  if (message.role === 'system') {
    return [
      new SystemMessage({
        ...kept(same),
        content: typeof message.content === 'string' ? message.content : plainText(message.content),
      }),
    ];
  }
  if (typeof message.content === 'string') {
    if (same && conversions.get(same)?.guard.content === message.content) return [same];
    if (message.role === 'assistant') return [buildAssistant(message, { parts: [], originals: new Set() }, same)];
    return [new HumanMessage({ ...kept(same), content: message.content })];
  }
  const restored = restoreUnchanged(message.content as unknown as Part[], same);
  // A copy the guard made without changing anything (a clip that cut nothing) is the original.
  if (same && restored.unchanged) return [same];
  switch (message.role) {
    case 'assistant':
      return [buildAssistant(message, restored, same)];
    case 'tool':
      return buildTools(restored.parts as unknown as ToolResultPart[], same);
    default: {
      const blocks = restored.parts.map((p) => blockOf(p, restored.originals));
      return [
        new HumanMessage({
          ...kept(same),
          content: contentOf(blocks, { preferString: false }) as HumanMessage['content'],
        }),
      ];
    }
  }
}

/**
 * The BaseMessages for the guard's messages: the original object for every message the guard left
 * alone (or copied without a change); for what it wrote or edited, new messages that keep the
 * original's id, name, additional_kwargs, response_metadata and tool-call ids, but nothing that points
 * at the stored or signed original. A message built here is remembered, so the same guard message
 * maps to the same BaseMessage on later calls (a stored summary stays one object).
 */
export function fromGuardMessages(messages: readonly GuardMessage[]): BaseMessage[] {
  const out: BaseMessage[] = [];
  for (const message of messages) {
    if (!isObject(message)) continue;
    const origin = origins.get(message) as BaseMessage | undefined;
    if (origin) {
      out.push(origin);
      continue;
    }
    const built = build(message);
    if (built.length === 1) {
      const base = built[0] as BaseMessage;
      origins.set(message, base);
      // An unchanged copy maps to its original, whose own conversion stays the one it has.
      if (base === sourceOf(message)) {
        out.push(base);
        continue;
      }
      const toolName =
        message.role === 'tool' ? (message.content[0] as ToolResultPart | undefined)?.toolName : undefined;
      conversions.set(base, {
        guard: message,
        content: base.content,
        toolCalls: (base as { tool_calls?: unknown }).tool_calls,
        toolName: str(base.name) ?? toolName,
      });
    }
    out.push(...built);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tool definitions
// ---------------------------------------------------------------------------------------------

function definitionOf(tool: unknown): ToolDefinition {
  if (!isObject(tool)) return { name: String(tool) };
  // StructuredTool, tool(), RunnableToolLike, { name, description, schema }: zod or JSON schema.
  if (isLangChainTool(tool)) {
    const t = tool as unknown as { name: string; description?: string; schema?: unknown };
    let inputSchema: unknown = t.schema;
    try {
      inputSchema = toJsonSchema(t.schema as Parameters<typeof toJsonSchema>[0]);
    } catch {
      // A schema LangChain cannot convert is counted by what JSON can show of it.
    }
    return { name: t.name, ...optional('description', t.description), inputSchema };
  }
  // OpenAI format { type: 'function', function: { name, description, parameters } }.
  const fn = tool['function'];
  if (isObject(fn))
    return {
      name: String(fn['name'] ?? ''),
      ...optional('description', str(fn['description'])),
      inputSchema: fn['parameters'],
    };
  // OpenAI functions { name, parameters }, Anthropic { name, input_schema }.
  if (typeof tool['name'] === 'string' && (tool['parameters'] !== undefined || tool['input_schema'] !== undefined)) {
    return {
      name: tool['name'],
      ...optional('description', str(tool['description'])),
      inputSchema: tool['parameters'] ?? tool['input_schema'],
    };
  }
  // A provider's built-in tool ({ type: 'web_search_preview' }): what is sent, and can be counted, is the object.
  const { name, description, ...rest } = tool;
  return {
    name: str(name) ?? String(tool['type'] ?? ''),
    ...optional('description', str(description)),
    inputSchema: rest,
  };
}

const convertTools = memoizedToolConverter(definitionOf);

/**
 * The guard's tool definitions for tools as `bindTools` takes them (StructuredTool and `tool()`
 * objects, OpenAI-format dicts, Anthropic-format dicts, provider built-ins): the same array for
 * the same input array, the same definition for the same tool.
 */
export function toGuardTools(tools: readonly unknown[] | undefined): ToolDefinition[] | undefined {
  return convertTools(tools);
}
