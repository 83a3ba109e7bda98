// Codex CLI rollout JSONL: one `{timestamp, type, payload}` object a line (see
// ../shared/transcripts/README.md). `response_item` lines are the model-visible history in order;
// `event_msg` lines with `payload.type === 'token_count'` close a model call and carry its real
// prompt size (`info.last_token_usage.input_tokens`, cached tokens included). Each count is
// emitted twice and the first of a turn has `info: null`: a new call is a change of
// `info.total_token_usage.total_tokens`.
//
// Decisions:
// - The items the model produced in one response (reasoning, message, function_call,
//   custom_tool_call) become ONE assistant message; consecutive tool outputs become one tool
//   message; `message` items of role user become user messages, developer/system ones system
//   messages. `ghost_snapshot` items were never sent; the other `event_msg` lines are UI events.
// - A call's prompt is the history before the items of its own response.
// - `reasoning.encrypted_content` cannot be measured as text: only the summary is kept (the real
//   count calibrates the rest).
// - `compacted`: the history is replaced by `payload.replacement_history` (newer versions) or by a
//   user message with the summary `payload.message`; the next call is not scored.
// - The files lack the base instructions and tool schemas: the first call is not scored.
import type { AssistantMessage, GuardMessage, ToolMessage, ToolResultPart, UserMessage } from '../../src/messages.ts';
import {
  isObject,
  type Json,
  num,
  openAiText,
  type ParseIssue,
  parseJsonLines,
  type ReplayCall,
  type Transcript,
  withPrompt,
} from './types.ts';

const OUTPUT_ITEMS = new Set(['reasoning', 'function_call', 'custom_tool_call', 'local_shell_call', 'web_search_call']);

export function parseCodex(file: string, text: string): Transcript {
  const issues: ParseIssue[] = [];
  const calls: Transcript['calls'] = [];
  const hostCompactions: Transcript['hostCompactions'] = [];
  const toolNames = new Map<string, string>();
  let history: GuardMessage[] = [];
  /** the assistant message of the response being recorded (still growing), and where it starts */
  let response: { message: AssistantMessage; parts: unknown[]; index: number; line: number } | undefined;
  let lastTotal: number | undefined;
  let pendingSkip: 'after-compaction' | undefined;
  let modelId: string | undefined;
  let contextWindow: number | undefined;
  /** history length when the last call was taken: messages from there on are in no call yet */
  let lastCallEnd = 0;

  const isOutput = (item: Json): boolean =>
    OUTPUT_ITEMS.has(String(item.type)) || (item.type === 'message' && item.role === 'assistant');

  const addOutput = (item: Json, line: number): void => {
    if (!response) {
      const parts: unknown[] = [];
      const message = { role: 'assistant', content: parts } as AssistantMessage;
      response = { message, parts, index: history.length, line };
      history.push(message);
    }
    const { parts } = response;
    switch (item.type) {
      case 'reasoning': {
        const summary = Array.isArray(item.summary) ? item.summary : [];
        const text = summary.map((s) => (isObject(s) && typeof s.text === 'string' ? s.text : '')).join('\n');
        if (text !== '') parts.push({ type: 'reasoning', text });
        break;
      }
      case 'message':
        parts.push({ type: 'text', text: codexText(item.content) });
        break;
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        const toolCallId = String(item.call_id ?? item.id ?? '');
        const toolName = String(item.name ?? (item.type === 'local_shell_call' ? 'local_shell' : ''));
        toolNames.set(toolCallId, toolName);
        let input: unknown =
          item.type === 'custom_tool_call' ? (item.input ?? '') : (item.arguments ?? item.action ?? {});
        if (item.type === 'function_call' && typeof input === 'string') {
          try {
            input = JSON.parse(input);
          } catch {
            // keep the raw string: that is what was sent
          }
        }
        parts.push({ type: 'tool-call', toolCallId, toolName, input });
        break;
      }
      default:
        parts.push({ type: 'text', text: JSON.stringify(item) }); // e.g. web_search_call: counted by its JSON
    }
  };

  const addInput = (item: Json): void => {
    if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      const toolCallId = String(item.call_id ?? '');
      const output = item.output;
      const value = typeof output === 'string' ? output : isObject(output) ? openAiText(output.content) : '';
      const part: ToolResultPart = {
        type: 'tool-result',
        toolCallId,
        toolName: toolNames.get(toolCallId) ?? 'unknown',
        output: { type: 'text', value },
      };
      const last = history[history.length - 1];
      // merge into the tool message only while no call has sent it yet (it is after the last response)
      if (last && last.role === 'tool' && history.length > lastCallEnd) {
        last.content.push(part);
      } else history.push({ role: 'tool', content: [part] } satisfies ToolMessage);
      response = undefined;
      return;
    }
    if (item.type === 'message') {
      const text = codexText(item.content);
      if (item.role === 'developer' || item.role === 'system') history.push({ role: 'system', content: text });
      else history.push({ role: 'user', content: text } satisfies UserMessage);
      response = undefined;
    }
  };

  for (const { line, value } of parseJsonLines(text, issues)) {
    const payload = isObject(value.payload) ? value.payload : undefined;
    if (!payload) {
      issues.push({ line, message: 'a line without a `payload` object' });
      continue;
    }
    switch (value.type) {
      case 'session_meta':
      case 'turn_context':
        if (typeof payload.model === 'string' && payload.model !== '') modelId = payload.model;
        break;
      case 'compacted': {
        const replacement = Array.isArray(payload.replacement_history) ? payload.replacement_history : undefined;
        hostCompactions.push({ beforeCall: calls.length });
        history = [];
        response = undefined;
        lastCallEnd = 0;
        if (replacement) {
          for (const item of replacement) {
            if (!isObject(item)) continue;
            if (isOutput(item)) addOutput(item, line);
            else addInput(item);
          }
          response = undefined;
        } else if (typeof payload.message === 'string') {
          history.push({ role: 'user', content: payload.message });
        }
        pendingSkip = 'after-compaction';
        break;
      }
      case 'response_item':
        if (payload.type === 'ghost_snapshot') break;
        if (typeof payload.type !== 'string') {
          issues.push({ line, message: 'a `response_item` without a `payload.type`' });
        } else if (isOutput(payload)) addOutput(payload, line);
        else addInput(payload);
        break;
      case 'event_msg': {
        if (payload.type !== 'token_count' || !isObject(payload.info)) break;
        const info = payload.info;
        if (typeof info.model_context_window === 'number') contextWindow = info.model_context_window;
        const total = isObject(info.total_token_usage) ? num(info.total_token_usage.total_tokens) : undefined;
        const last = isObject(info.last_token_usage) ? info.last_token_usage : undefined;
        if (!last || total === undefined || total === lastTotal) break;
        lastTotal = total;
        const end = response ? response.index : history.length;
        const call: Transcript['calls'][number] = withPrompt(
          {
            tools: [],
            inputTokens: num(last.input_tokens),
            ...(typeof last.output_tokens === 'number' ? { outputTokens: last.output_tokens } : {}),
            ...(response ? { response: response.message, line: response.line } : { line }),
          } as Omit<ReplayCall, 'messages' | 'messageCount'>,
          history,
          end,
        );
        if (calls.length === 0) call.skip = 'first';
        else if (pendingSkip) call.skip = pendingSkip;
        pendingSkip = undefined;
        calls.push(call);
        response = undefined;
        lastCallEnd = history.length;
        break;
      }
      default:
        break;
    }
  }
  const transcript: Transcript = {
    file,
    format: 'codex',
    modelId: modelId ?? 'unknown',
    calls,
    issues,
    hostCompactions,
  };
  if (contextWindow !== undefined) transcript.contextWindow = contextWindow;
  return transcript;
}

function codexText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('');
}
