// mini-swe-agent `.traj.json` (OpenAI chat messages; see ../shared/transcripts/README.md), and the
// OpenAI chat message conversion the plain OpenAI-style messages format shares.
import type { AssistantMessage, GuardMessage, ToolDefinition, UserMessage } from '../../src/messages.ts';
import {
  isObject,
  type Json,
  jsonErrorMessage,
  openAiText,
  type ParseIssue,
  type ReplayCall,
  type Transcript,
  withPrompt,
} from './types.ts';

/**
 * JSON.parse with an error that names the line and column (for a whole-file JSON format, the
 * position of the first error; nothing after it can be read).
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = jsonErrorMessage(error);
    const position = /position (\d+)/.exec(message);
    const line = /line (\d+)/.exec(message)?.[1] ?? (position ? lineOf(text, Number(position[1])) : undefined);
    throw new TranscriptError(`not valid JSON${line !== undefined ? ` at line ${line}` : ''} (${message})`);
  }
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** A file that cannot be replayed at all (not JSON, no messages, unknown format). */
export class TranscriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TranscriptError';
  }
}

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

export function parseMiniSweAgent(file: string, text: string): Transcript {
  const data: unknown = parseJson(text);
  const info = isObject(data) && isObject(data.info) ? data.info : {};
  const config = isObject(info.config) ? info.config : {};
  const model = isObject(config.model) ? config.model : {};
  const modelId = typeof model.model_name === 'string' ? model.model_name : 'unknown';
  const messages = isObject(data) && Array.isArray(data.messages) ? data.messages : [];

  const tools = [bashTool()];
  const toolNames = new Map<string, string>();
  const history: GuardMessage[] = [];
  const calls: ReplayCall[] = [];
  const issues: ParseIssue[] = [];

  for (const [i, message] of messages.entries()) {
    if (!isObject(message)) {
      issues.push({ message: `messages[${i}] is not an object: skipped` });
      continue;
    }
    let converted: GuardMessage | undefined;
    try {
      converted = convertOpenAiMessage(message, toolNames);
    } catch (error) {
      issues.push({ message: `messages[${i}] could not be read (${jsonErrorMessage(error)}): skipped` });
      continue;
    }
    const extra = isObject(message.extra) ? message.extra : {};
    const response = isObject(extra.response) ? extra.response : {};
    const usage = isObject(response.usage) ? response.usage : undefined;
    if (message.role === 'assistant' && usage && typeof usage.prompt_tokens === 'number') {
      const call: ReplayCall = withPrompt(
        { tools, inputTokens: usage.prompt_tokens } as Omit<ReplayCall, 'messages' | 'messageCount'>,
        history,
      );
      if (typeof usage.completion_tokens === 'number') call.outputTokens = usage.completion_tokens;
      if (converted) call.response = converted;
      if (calls.length === 0) call.skip = 'first';
      calls.push(call);
    }
    if (converted) history.push(converted);
  }
  return { file, format: 'mini-swe-agent', modelId, calls, issues, hostCompactions: [] };
}

export function convertOpenAiMessage(message: Json, toolNames: Map<string, string>): GuardMessage | undefined {
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
