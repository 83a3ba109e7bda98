// Loads the real agent transcripts of `../shared/transcripts` (see its README) as model-call
// replays: for every model call, the messages that were sent (as GuardMessages), the tools, and the
// prompt size the provider reported. Benchmarks and optional tests use it; the package does not.
//
// The replay mimics a real host: the history is an immutable, growing list shared by reference,
// so the message objects of call k are the same objects (===) in call k+1's (new) array, unless a
// Claude Code compaction restarted the history in between.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type {
  AssistantMessage,
  GuardMessage,
  ToolDefinition,
  ToolMessage,
  ToolResultContentItem,
  ToolResultOutput,
  ToolResultPart,
  UserMessage,
} from '../src/messages.ts';

export interface ReplayCall {
  /** messages sent to the model for this call (GuardMessage[]), in order */
  messages: GuardMessage[];
  tools: ToolDefinition[];
  /** provider-reported total prompt tokens of this call (cached included) */
  inputTokens: number;
  outputTokens?: number;
  /** the assistant message this call produced (it appears in later calls' messages) */
  response?: GuardMessage;
  /**
   * why a benchmark should not score this call: the first call of a file, or the first call after
   * a compaction boundary (the files lack the hidden system prompt)
   */
  skip?: 'first' | 'after-compaction';
}

export interface Transcript {
  file: string;
  format: 'claude-code' | 'mini-swe-agent';
  modelId: string;
  calls: ReplayCall[];
}

/** The default folder: `../shared/transcripts`, resolved from the working directory (the repo root). */
export function defaultTranscriptDir(): string {
  return resolve(process.cwd(), '../shared/transcripts');
}

/**
 * Loads every transcript in `dir` (default: {@link defaultTranscriptDir}), sorted by file name.
 * `*.jsonl` files are Claude Code sessions, `*.traj.json` files mini-swe-agent trajectories; other
 * files are ignored, and so are files that yield no model call. Returns `undefined` when the
 * folder does not exist. Never throws on bad data: malformed lines or files are skipped.
 */
export function loadTranscripts(dir?: string): Transcript[] | undefined {
  const folder = dir === undefined ? defaultTranscriptDir() : resolve(dir);
  try {
    if (!existsSync(folder) || !statSync(folder).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  let names: string[];
  try {
    names = readdirSync(folder).sort();
  } catch {
    return undefined;
  }
  const transcripts: Transcript[] = [];
  for (const name of names) {
    const isClaude = name.endsWith('.jsonl');
    const isMsa = name.endsWith('.traj.json');
    if (!isClaude && !isMsa) continue;
    let transcript: Transcript | undefined;
    try {
      const text = readFileSync(join(folder, name), 'utf8');
      transcript = isClaude ? parseClaudeCode(name, text) : parseMiniSweAgent(name, text);
    } catch {
      transcript = undefined; // unreadable or not JSON at all: skip the file
    }
    if (transcript && transcript.calls.length > 0) transcripts.push(transcript);
  }
  return transcripts;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

// ---------------------------------------------------------------------------------------------
// Claude Code session JSONL
//
// Decisions (checked against the files; Claude Code 2.1.38/2.1.39):
// - `system` lines: the subtypes present are compact_boundary, local_command, stop_hook_summary and
//   turn_duration. Claude Code's normalizeMessagesForAPI drops every system message except
//   `local_command` ones (output of slash commands such as /mcp), which it sends as user text
//   merged into the adjacent user message. So: compact_boundary resets the history, local_command
//   becomes a user text message, every other subtype is skipped.
// - `isMeta` user lines (hook context, <system-reminder>, the local-command caveat) are sent: kept.
// - One call = the assistant lines of one requestId. While Claude Code streams a response with
//   several tool_use blocks it already runs the tools, so the tool_result lines interleave with the
//   assistant lines of the same requestId; Claude Code merges them back (one assistant message, then
//   the results) before the next request, and so does this loader.
// - Consecutive tool results of one response become ONE tool message (as an AI SDK host would
//   send them); a user text line between them starts a new message.
// - Assistant lines with `isApiErrorMessage` are local error notices that Claude Code filters out
//   before sending: dropped. Other lines of model `<synthetic>` (written by Claude Code itself,
//   e.g. "No response requested."; zero or no usage) are kept in the history, as they are sent,
//   but are not calls. The transcripts at hand contain neither. An assistant line without usage
//   (or with zero prompt tokens) that does not continue the open call is malformed: skipped.
// - Sidechain: a file is either a main session or a subagent (all lines `isSidechain: true`); lines
//   whose `isSidechain` differs from the file's first conversation line are skipped.
// - The files lack the tool schemas, so `tools` is empty (part of the constant hidden offset).
// - `outputTokens` is what the last line of the group says; Claude Code often logs the usage of
//   the stream's start there (1-10 tokens: every call of the subagent files, 38 of 157 calls of
//   fa812bfe), so do not rely on it. `inputTokens` does not have this problem.

interface OpenCall {
  key: string | undefined;
  assistant: AssistantMessage;
  /** the assistant message's content array, still growing while the group's lines come in */
  parts: unknown[];
  call: ReplayCall;
  /** messages after the assistant message (tool results, user lines), still mutable */
  tail: GuardMessage[];
}

function parseClaudeCode(file: string, text: string): Transcript {
  const calls: ReplayCall[] = [];
  const tools: ToolDefinition[] = [];
  const toolNames = new Map<string, string>();
  const seen = new Set<string>();
  let history: GuardMessage[] = [];
  let open: OpenCall | undefined;
  let pendingSkip: 'after-compaction' | undefined;
  let modelId: string | undefined;
  let sidechain: boolean | undefined;

  /** Moves the open call's response and the messages after it into the (immutable) history. */
  const flush = (): void => {
    if (!open) return;
    history.push(open.assistant, ...open.tail);
    open = undefined;
  };

  /** Appends a message after everything so far (to the open call's tail, or to the history). */
  const append = (message: GuardMessage): void => {
    if (open) open.tail.push(message);
    else history.push(message);
  };

  const appendToolResults = (parts: ToolResultPart[]): void => {
    if (parts.length === 0) return;
    const last = open?.tail[open.tail.length - 1];
    // Only messages of the open tail are still private (not yet in any call's array): merge there.
    if (last && last.role === 'tool') last.content.push(...parts);
    else append({ role: 'tool', content: parts } satisfies ToolMessage);
  };

  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let line: unknown;
    try {
      line = JSON.parse(raw);
    } catch {
      continue; // malformed line
    }
    if (!isObject(line)) continue;
    const type = line.type;
    if (type !== 'user' && type !== 'assistant' && type !== 'system') continue;
    if (typeof line.uuid === 'string') {
      if (seen.has(line.uuid)) continue; // a line written twice
      seen.add(line.uuid);
    }
    const isSidechain = line.isSidechain === true;
    if (sidechain === undefined) sidechain = isSidechain;
    else if (isSidechain !== sidechain) continue;

    try {
      if (type === 'system') {
        if (line.subtype === 'compact_boundary') {
          flush();
          history = []; // a new array: earlier calls keep theirs
          pendingSkip = 'after-compaction';
        } else if (line.subtype === 'local_command') {
          const content = typeof line.content === 'string' ? line.content : '';
          if (content !== '') append({ role: 'user', content });
        }
        continue;
      }

      const message = line.message;
      if (!isObject(message)) continue;

      if (type === 'user') {
        const { tool, user } = convertClaudeUser(message.content, toolNames);
        appendToolResults(tool);
        if (user) append(user);
        continue;
      }

      // assistant
      if (line.isApiErrorMessage === true) continue;
      const parts = convertClaudeAssistant(message.content, toolNames);
      const usage = isObject(message.usage) ? message.usage : undefined;
      const key =
        typeof line.requestId === 'string' ? line.requestId : typeof message.id === 'string' ? message.id : undefined;

      const synthetic = message.model === '<synthetic>';
      if (synthetic) {
        // written by Claude Code itself (its usage, if any, is all zeros): sent, but not a call
        if (parts.length === 0) continue;
        flush();
        history.push({ role: 'assistant', content: parts } as AssistantMessage);
        continue;
      }
      if (open && key !== undefined && key === open.key) {
        open.parts.push(...parts);
      } else if (!usage || promptTokens(usage) === 0) {
        continue; // no usage and not part of the open call: malformed line
      } else {
        flush();
        const assistant = { role: 'assistant', content: parts } as AssistantMessage;
        const call: ReplayCall = { messages: history.slice(), tools, inputTokens: 0, response: assistant };
        if (calls.length === 0) call.skip = 'first';
        else if (pendingSkip) call.skip = pendingSkip;
        pendingSkip = undefined;
        calls.push(call);
        open = { key, assistant, parts, call, tail: [] };
        if (modelId === undefined && typeof message.model === 'string' && message.model !== '<synthetic>') {
          modelId = message.model;
        }
      }
      if (usage && open && promptTokens(usage) > 0) {
        // the usage of the last line of the group wins
        open.call.inputTokens = promptTokens(usage);
        if (typeof usage.output_tokens === 'number') open.call.outputTokens = usage.output_tokens;
      }
    } catch {}
  }
  flush();
  return { file, format: 'claude-code', modelId: modelId ?? 'unknown', calls };
}

/** Anthropic's `input_tokens` excludes cached tokens: the prompt size is the sum of the three. */
function promptTokens(usage: Json): number {
  return num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens);
}

function convertClaudeAssistant(content: unknown, toolNames: Map<string, string>): unknown[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const parts: unknown[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: String(block.text ?? '') });
        break;
      case 'thinking':
        parts.push({ type: 'reasoning', text: String(block.thinking ?? '') });
        break;
      case 'redacted_thinking':
        // the AI SDK's representation of redacted thinking
        parts.push({ type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: block.data } } });
        break;
      case 'tool_use': {
        const toolCallId = String(block.id ?? '');
        const toolName = String(block.name ?? '');
        toolNames.set(toolCallId, toolName);
        parts.push({ type: 'tool-call', toolCallId, toolName, input: block.input ?? {} });
        break;
      }
      default:
        parts.push(block); // unknown block: carried through, counted by its JSON
    }
  }
  return parts;
}

function convertClaudeUser(
  content: unknown,
  toolNames: Map<string, string>,
): { tool: ToolResultPart[]; user: UserMessage | undefined } {
  if (typeof content === 'string') {
    return { tool: [], user: content === '' ? undefined : { role: 'user', content } };
  }
  if (!Array.isArray(content)) return { tool: [], user: undefined };
  const tool: ToolResultPart[] = [];
  const parts: unknown[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    switch (block.type) {
      case 'tool_result': {
        if (typeof block.tool_use_id !== 'string') break; // malformed block
        const toolCallId = block.tool_use_id;
        tool.push({
          type: 'tool-result',
          toolCallId,
          toolName: toolNames.get(toolCallId) ?? 'unknown',
          output: convertClaudeToolOutput(block.content, block.is_error === true),
        });
        break;
      }
      case 'text':
        parts.push({ type: 'text', text: String(block.text ?? '') });
        break;
      case 'image': {
        const source = isObject(block.source) ? block.source : {};
        if (source.type === 'base64') {
          parts.push({ type: 'image', image: String(source.data ?? ''), mediaType: String(source.media_type ?? '') });
        } else if (source.type === 'url') {
          parts.push({ type: 'image', image: String(source.url ?? '') });
        } else parts.push(block);
        break;
      }
      case 'document': {
        const source = isObject(block.source) ? block.source : {};
        if (source.type === 'base64' || source.type === 'text') {
          parts.push({
            type: 'file',
            data: String(source.data ?? ''),
            mediaType: String(source.media_type ?? (source.type === 'text' ? 'text/plain' : 'application/pdf')),
          });
        } else parts.push(block);
        break;
      }
      default:
        parts.push(block);
    }
  }
  const user = parts.length > 0 ? ({ role: 'user', content: parts } as UserMessage) : undefined;
  return { tool, user };
}

function convertClaudeToolOutput(content: unknown, isError: boolean): ToolResultOutput {
  if (content === undefined || content === null) return { type: isError ? 'error-text' : 'text', value: '' };
  if (typeof content === 'string') return { type: isError ? 'error-text' : 'text', value: content };
  if (!Array.isArray(content)) return { type: isError ? 'error-json' : 'json', value: content };
  const items: ToolResultContentItem[] = [];
  for (const item of content) {
    if (!isObject(item)) continue;
    if (item.type === 'text') {
      items.push({ type: 'text', text: String(item.text ?? '') });
    } else if (item.type === 'image' && isObject(item.source) && item.source.type === 'base64') {
      items.push({
        type: 'image-data',
        data: String(item.source.data ?? ''),
        mediaType: String(item.source.media_type ?? ''),
      });
    } else {
      items.push(item as ToolResultContentItem);
    }
  }
  if (isError) {
    // error-text has no media: keep the text of the items
    const value = items.map((item) => (item.type === 'text' ? String(item.text) : '')).join('\n');
    return { type: 'error-text', value };
  }
  return { type: 'content', value: items };
}

// ---------------------------------------------------------------------------------------------
// mini-swe-agent `.traj.json` (OpenAI chat messages)

/** The bash tool mini-swe-agent offers (the reported prompt counts its schema; the file lacks it). */
function bashTool(): ToolDefinition {
  return {
    name: 'bash',
    description: 'Execute a bash command in the repository and return its return code and output.',
    inputSchema: {
      type: 'object',
      properties: { command: { type: 'string', description: 'The bash command to execute.' } },
      required: ['command'],
    },
  };
}

/** Content that is a string, null, or an array of `{type:'text', text}` parts, as plain text. */
function openAiText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

function parseMiniSweAgent(file: string, text: string): Transcript {
  const data: unknown = JSON.parse(text);
  const info = isObject(data) && isObject(data.info) ? data.info : {};
  const config = isObject(info.config) ? info.config : {};
  const model = isObject(config.model) ? config.model : {};
  const modelId = typeof model.model_name === 'string' ? model.model_name : 'unknown';
  const messages = isObject(data) && Array.isArray(data.messages) ? data.messages : [];

  const tools = [bashTool()];
  const toolNames = new Map<string, string>();
  const history: GuardMessage[] = [];
  const calls: ReplayCall[] = [];

  for (const message of messages) {
    if (!isObject(message)) continue;
    let converted: GuardMessage | undefined;
    try {
      converted = convertOpenAiMessage(message, toolNames);
    } catch {
      continue;
    }
    const extra = isObject(message.extra) ? message.extra : {};
    const response = isObject(extra.response) ? extra.response : {};
    const usage = isObject(response.usage) ? response.usage : undefined;
    if (message.role === 'assistant' && usage && typeof usage.prompt_tokens === 'number') {
      const call: ReplayCall = { messages: history.slice(), tools, inputTokens: usage.prompt_tokens };
      if (typeof usage.completion_tokens === 'number') call.outputTokens = usage.completion_tokens;
      if (converted) call.response = converted;
      if (calls.length === 0) call.skip = 'first';
      calls.push(call);
    }
    if (converted) history.push(converted);
  }
  return { file, format: 'mini-swe-agent', modelId, calls };
}

function convertOpenAiMessage(message: Json, toolNames: Map<string, string>): GuardMessage | undefined {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: openAiText(message.content) };
    case 'user':
      if (Array.isArray(message.content)) {
        const parts: unknown[] = message.content
          .filter(isObject)
          .map((part) => (part.type === 'text' ? { type: 'text', text: String(part.text ?? '') } : part));
        return { role: 'user', content: parts } as UserMessage;
      }
      return { role: 'user', content: openAiText(message.content) };
    case 'assistant': {
      const parts: unknown[] = [];
      if (typeof message.reasoning_content === 'string' && message.reasoning_content !== '') {
        parts.push({ type: 'reasoning', text: message.reasoning_content });
      }
      const textContent = openAiText(message.content);
      if (textContent !== '') parts.push({ type: 'text', text: textContent });
      if (Array.isArray(message.tool_calls)) {
        for (const toolCall of message.tool_calls) {
          if (!isObject(toolCall)) continue;
          const fn = isObject(toolCall.function) ? toolCall.function : {};
          const toolCallId = String(toolCall.id ?? '');
          const toolName = String(fn.name ?? '');
          toolNames.set(toolCallId, toolName);
          let input: unknown = fn.arguments ?? {};
          if (typeof input === 'string') {
            try {
              input = JSON.parse(input);
            } catch {
              // keep the raw string: that is what was sent
            }
          }
          parts.push({ type: 'tool-call', toolCallId, toolName, input });
        }
      }
      return { role: 'assistant', content: parts.length > 0 ? parts : '' } as AssistantMessage;
    }
    case 'tool': {
      const toolCallId = String(message.tool_call_id ?? '');
      return {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId,
            toolName: toolNames.get(toolCallId) ?? 'bash',
            output: { type: 'text', value: openAiText(message.content) },
          },
        ],
      };
    }
    default:
      return undefined; // `exit` (never sent) and unknown roles
  }
}
