// Claude Code session JSONL (see ../shared/transcripts/README.md for the format).
import type {
  AssistantMessage,
  GuardMessage,
  ToolDefinition,
  ToolMessage,
  ToolResultContentItem,
  ToolResultOutput,
  ToolResultPart,
  UserMessage,
} from '../../src/messages.ts';
import {
  isObject,
  type Json,
  jsonErrorMessage,
  num,
  type ParseIssue,
  parseJsonLines,
  type ReplayCall,
  type Transcript,
  withPrompt,
} from './types.ts';

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

export function parseClaudeCode(file: string, text: string): Transcript {
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

  const issues: ParseIssue[] = [];
  const hostCompactions: Transcript['hostCompactions'] = [];
  for (const { line: lineNo, value: line } of parseJsonLines(text, issues)) {
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
          const meta = isObject(line.compactMetadata) ? line.compactMetadata : {};
          hostCompactions.push({
            beforeCall: calls.length,
            ...(typeof meta.preTokens === 'number' ? { preTokens: meta.preTokens } : {}),
          });
        } else if (line.subtype === 'local_command') {
          const content = typeof line.content === 'string' ? line.content : '';
          if (content !== '') append({ role: 'user', content });
        }
        continue;
      }

      const message = line.message;
      if (!isObject(message)) {
        issues.push({ line: lineNo, message: `a \`${type}\` line without a \`message\` object` });
        continue;
      }

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
        // no usage and not part of the open call: malformed line
        issues.push({ line: lineNo, message: 'an assistant line without usage that continues no call' });
        continue;
      } else {
        flush();
        const assistant = { role: 'assistant', content: parts } as AssistantMessage;
        const call: ReplayCall = withPrompt(
          { tools, inputTokens: 0, response: assistant, line: lineNo } as Omit<ReplayCall, 'messages' | 'messageCount'>,
          history,
        );
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
    } catch (error) {
      issues.push({ line: lineNo, message: `could not be read (${jsonErrorMessage(error)})` });
    }
  }
  flush();
  return { file, format: 'claude-code', modelId: modelId ?? 'unknown', calls, issues, hostCompactions };
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
