// The summary of last resort. When the summarizer fails, times out or returns nothing usable, the
// old messages must still be replaced by something (the bloated conversation is never passed
// through) and no history may be lost to the failure. This digest needs no model: one line per
// message or tool step, cut to its first characters. It is deterministic (same input, same bytes),
// so a stateless host that replays the history gets a byte-stable prefix and provider prompt caches
// keep working.
import type { AssistantMessage, GuardMessage, ToolResultPart } from '../messages.ts';
import { MAX_LABEL_CHARS, asText, clipHead, formatCount, hasText, mediaLabel, oneLine, safeJson, stripInlineBinary, toolOutputText, userContentText } from './text.ts';

/** Characters kept of each message (or tool call, or tool result) by default. */
export const DEFAULT_MECHANICAL_CHARS_PER_MESSAGE = 200;

/** How every mechanical digest starts, so callers can tell it from a model-written summary. */
export const MECHANICAL_SUMMARY_PREFIX = '[Mechanical digest:';

export interface MechanicalSummaryOptions {
  /** Characters kept of each message, tool call and tool result; default 200. */
  charsPerMessage?: number;
  /** The summary of the history before these messages; kept whole at the top. */
  previousSummary?: string;
  /**
   * Upper bound of the digest's length. When exceeded, the most recent lines that fit are kept and
   * one line counts the earlier messages left out. The previous summary is never cut (it is the only
   * record of older history), so a previous summary longer than this bound is the one case where the
   * result exceeds it.
   */
  maxChars?: number;
}

/** One line of text: collapsed whitespace, inline binary labelled, cut to `max` characters. */
function digest(text: string, max: number): string {
  const flat = stripInlineBinary(text).replace(/\s+/g, ' ').trim();
  return flat.length > 0 ? clipHead(flat, max) : '(empty)';
}

function toolResultLine(part: ToolResultPart, max: number): string {
  const { text, isError } = toolOutputText(part.output);
  return `- tool ${oneLine(part.toolName, MAX_LABEL_CHARS)} ${isError ? 'returned an error' : 'returned'}: ${digest(text, max)}`;
}

function assistantLines(content: AssistantMessage['content'], max: number): string[] {
  if (!Array.isArray(content)) return [`- assistant: ${digest(asText(content), max)}`];
  const lines: string[] = [];
  const text: string[] = [];
  // Text and file parts of one message make one line; reasoning is left out (internal, often
  // redacted); each tool call and provider-run tool result is a step of its own.
  const flush = () => {
    if (text.length > 0) lines.push(`- assistant: ${digest(text.join(' '), max)}`);
    text.length = 0;
  };
  for (const part of content) {
    if (!part || typeof part !== 'object') continue;
    switch (part.type) {
      case 'text':
        if (hasText(part.text)) text.push(part.text);
        break;
      case 'file':
        text.push(mediaLabel('file', part));
        break;
      case 'reasoning':
        break;
      case 'tool-call':
        flush();
        lines.push(`- assistant called ${oneLine(part.toolName, MAX_LABEL_CHARS)}(${digest(safeJson(part.input), max)})`);
        break;
      case 'tool-result':
        flush();
        lines.push(toolResultLine(part, max));
        break;
      default:
        text.push(`[${oneLine((part as { type: unknown }).type, MAX_LABEL_CHARS)}]`);
    }
  }
  flush();
  return lines;
}

function messageLines(message: GuardMessage, max: number): string[] {
  if (!message || typeof message !== 'object') return [];
  switch (message.role) {
    case 'system':
      return [`- system: ${digest(asText(message.content), max)}`];
    case 'user':
      return [`- user: ${digest(userContentText(message.content), max)}`];
    case 'assistant':
      return assistantLines(message.content, max);
    case 'tool':
      if (!Array.isArray(message.content)) return [`- tool: ${digest(safeJson(message.content), max)}`];
      return message.content.map((part) =>
        part?.type === 'tool-result' ? toolResultLine(part, max) : `- tool: [${oneLine((part as { type?: unknown })?.type, MAX_LABEL_CHARS)}]`,
      );
    default:
      return [`- ${oneLine((message as { role?: unknown }).role, MAX_LABEL_CHARS)}: ${digest(safeJson((message as { content?: unknown }).content), max)}`];
  }
}

function omittedLine(count: number): string {
  return `- (${formatCount(count)} earlier ${count === 1 ? 'message' : 'messages'} omitted)`;
}

/**
 * A model-free digest of `messages`: a header, the previous summary (if any, whole), then one line
 * per message or tool step by role, e.g. `- user: ...`, `- assistant called read_file({"path":"a.ts"})`,
 * `- tool read_file returned: ...`, `- tool bash returned an error: ...`.
 */
export function mechanicalSummary(messages: GuardMessage[], options: MechanicalSummaryOptions = {}): string {
  const requested = options.charsPerMessage;
  const max = requested !== undefined && Number.isFinite(requested) && requested > 0 ? Math.floor(requested) : DEFAULT_MECHANICAL_CHARS_PER_MESSAGE;
  const head = [
    `${MECHANICAL_SUMMARY_PREFIX} the summarizer was unavailable, so the earlier messages are listed by role, each cut to its first ${formatCount(max)} characters.]`,
  ];
  if (hasText(options.previousSummary)) {
    head.push('', 'Previous summary:', options.previousSummary.trim(), '', 'Messages since then:');
  } else {
    head.push('', 'Messages:');
  }

  const groups = messages.map((m) => messageLines(m, max));
  const all = [...head, ...groups.flat()].join('\n');
  const limit = options.maxChars;
  if (limit === undefined || !(all.length > limit)) return all;

  // Keep whole messages from the end while they fit, reserving room for the omitted-count line at
  // its longest (every message omitted), so the result is never longer than the limit.
  const prefix = head.join('\n');
  let used = prefix.length + 1 + omittedLine(messages.length).length;
  let first = groups.length;
  while (first > 0) {
    const group = groups[first - 1] ?? [];
    const cost = group.reduce((n, line) => n + 1 + line.length, 0);
    if (used + cost > limit) break;
    used += cost;
    first--;
  }
  const kept = groups.slice(first).flat();
  return [prefix, omittedLine(first), ...kept].join('\n');
}
