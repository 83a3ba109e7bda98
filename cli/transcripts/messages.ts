// Plain message-list JSON: an OpenAI-style chat messages array (`{role, content, tool_calls?}`,
// `{role:'tool', tool_call_id}`) or an AI SDK `ModelMessage[]`, either bare or wrapped as
// `{model?, tools?, messages}`. Every assistant message is one model call whose prompt is the
// messages before it. These formats carry no real counts, except through two optional fields a
// host may add to an assistant message: `usage` (`{prompt_tokens}` OpenAI-style, `{inputTokens}` AI
// SDK-style, or Anthropic's `{input_tokens, cache_*_input_tokens}`) or mini-swe-agent's
// `extra.response.usage`; these fields are removed before the message is measured.
import type { GuardMessage, ToolDefinition } from '../../src/messages.ts';
import { convertOpenAiMessage, TranscriptError } from './mini-swe-agent.ts';
import {
  isObject,
  type Json,
  jsonErrorMessage,
  num,
  type ParseIssue,
  type ReplayCall,
  type Transcript,
  withPrompt,
} from './types.ts';

/** Which of the two message formats a list is in: OpenAI fields win; AI SDK part types next; plain text is OpenAI. */
export function messageListFormat(messages: readonly unknown[]): 'openai' | 'ai-sdk' {
  let aiSdk = false;
  for (const message of messages) {
    if (!isObject(message)) continue;
    if ('tool_calls' in message || 'tool_call_id' in message || 'function_call' in message) return 'openai';
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (!isObject(part)) continue;
      if (part.type === 'image_url' || part.type === 'input_audio') return 'openai';
      if (['tool-call', 'tool-result', 'reasoning', 'file', 'image'].includes(String(part.type))) aiSdk = true;
    }
  }
  return aiSdk ? 'ai-sdk' : 'openai';
}

/** The real prompt size an assistant message carries (see the header), if any. */
function usageOf(message: Json): { input: number; output?: number } | undefined {
  const extra = isObject(message.extra) ? message.extra : undefined;
  const response = extra && isObject(extra.response) ? extra.response : undefined;
  const usage = isObject(message.usage)
    ? message.usage
    : response && isObject(response.usage)
      ? response.usage
      : undefined;
  if (!usage) return undefined;
  const output = usage.completion_tokens ?? usage.outputTokens ?? usage.output_tokens;
  let input: number | undefined;
  if (typeof usage.prompt_tokens === 'number') input = usage.prompt_tokens;
  else if (typeof usage.inputTokens === 'number') input = usage.inputTokens;
  else if (isObject(usage.inputTokens) && typeof usage.inputTokens.total === 'number') input = usage.inputTokens.total;
  else if (typeof usage.input_tokens === 'number') {
    input = usage.input_tokens + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens);
  }
  if (input === undefined || input <= 0) return undefined;
  return typeof output === 'number' ? { input, output } : { input };
}

function toolsOf(value: unknown): ToolDefinition[] {
  if (!Array.isArray(value)) return [];
  const tools: ToolDefinition[] = [];
  for (const tool of value) {
    if (!isObject(tool)) continue;
    // OpenAI `{type:'function', function:{name, description, parameters}}` or `{name, description, inputSchema}`
    const fn = isObject(tool.function) ? tool.function : tool;
    if (typeof fn.name !== 'string') continue;
    tools.push({
      name: fn.name,
      ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
      inputSchema: fn.parameters ?? fn.inputSchema ?? fn.input_schema ?? {},
    });
  }
  return tools;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** Parses a message list (already JSON-parsed) in the given or detected format. */
export function parseMessageList(file: string, data: unknown, force?: 'openai' | 'ai-sdk'): Transcript {
  const wrapper = isObject(data) ? data : {};
  const list = Array.isArray(data) ? data : Array.isArray(wrapper.messages) ? wrapper.messages : undefined;
  if (!list) throw new TranscriptError('expected a JSON array of messages, or an object with a `messages` array');
  const format = force ?? messageListFormat(list);
  const modelId = typeof wrapper.model === 'string' ? wrapper.model : 'unknown';
  const tools = toolsOf(wrapper.tools);
  const toolNames = new Map<string, string>();
  const issues: ParseIssue[] = [];
  const history: GuardMessage[] = [];
  const calls: Transcript['calls'] = [];
  let counted = false;
  for (const [i, raw] of list.entries()) {
    if (!isObject(raw) || !ROLES.has(String(raw.role))) {
      issues.push({ message: `messages[${i}] is not a message (no known \`role\`): skipped` });
      continue;
    }
    const usage = raw.role === 'assistant' ? usageOf(raw) : undefined;
    let message: GuardMessage | undefined;
    try {
      if (format === 'openai') {
        message = convertOpenAiMessage(raw.role === 'developer' ? { ...raw, role: 'system' } : raw, toolNames);
      } else {
        const { usage: _usage, extra: _extra, ...rest } = raw;
        message = (raw.role === 'developer' ? { ...rest, role: 'system' } : rest) as unknown as GuardMessage;
      }
    } catch (error) {
      issues.push({ message: `messages[${i}] could not be read (${jsonErrorMessage(error)}): skipped` });
      continue;
    }
    if (!message) continue;
    if (message.role === 'assistant') {
      const call: Transcript['calls'][number] = withPrompt(
        { tools, response: message } as Omit<ReplayCall, 'messages' | 'messageCount'>,
        history,
      );
      if (usage) {
        call.inputTokens = usage.input;
        if (usage.output !== undefined) call.outputTokens = usage.output;
        // the first call with a real count: its hidden part (tools, instructions) is unknown
        if (!counted) call.skip = 'first';
        counted = true;
      }
      calls.push(call);
    }
    history.push(message);
  }
  return { file, format, modelId, calls, issues, hostCompactions: [] };
}
