// The common shape every transcript format is parsed into: the model calls of a session, each with
// the messages that were sent (as GuardMessages), the tools, and the provider's real prompt size
// when the file has it. `context-guard replay` and the benchmarks (bench/accuracy.ts) both read it.
//
// A parser mimics a real host: the history is an immutable, growing list shared by reference, so
// the message objects of call k are the same objects (===) in call k+1's (new) array, unless a
// compaction recorded in the file restarted the history in between.
import type { GuardMessage, ToolDefinition } from '../../src/messages.ts';

export type TranscriptFormat = 'claude-code' | 'codex' | 'mini-swe-agent' | 'openai' | 'ai-sdk';

export const TRANSCRIPT_FORMATS: readonly TranscriptFormat[] = [
  'claude-code',
  'codex',
  'mini-swe-agent',
  'openai',
  'ai-sdk',
];

export interface ReplayCall {
  /**
   * messages sent to the model for this call (GuardMessage[]), in order. Made when read from the
   * parser's history (see {@link withPrompt}): read it once per use.
   */
  messages: GuardMessage[];
  /** how many messages `messages` holds (without making the array) */
  messageCount: number;
  tools: ToolDefinition[];
  /** provider-reported total prompt tokens of this call (cached included); undefined when the file has none */
  inputTokens?: number;
  outputTokens?: number;
  /** the assistant message this call produced (it appears in later calls' messages) */
  response?: GuardMessage;
  /**
   * why the estimate of this call should not be scored: the first call of a file, or the first call
   * after a compaction recorded in the file (the files lack the hidden system prompt and tools)
   */
  skip?: 'first' | 'after-compaction';
  /** 1-based line of the file where the call starts (JSONL formats) */
  line?: number;
}

/** A line or entry of the file that could not be read; the rest of the file still is. */
export interface ParseIssue {
  /** 1-based line number, when known */
  line?: number;
  message: string;
}

export interface Transcript {
  file: string;
  format: TranscriptFormat;
  modelId: string;
  calls: ReplayCall[];
  /** malformed lines or entries that were skipped */
  issues: ParseIssue[];
  /** compactions the host itself recorded (Claude Code's compact_boundary, Codex's `compacted`), by call index */
  hostCompactions: Array<{ beforeCall: number; preTokens?: number }>;
  /** the model's window as the file states it (Codex's `model_context_window`) */
  contextWindow?: number;
}

/**
 * `call` with its prompt: the first `end` messages of `history`, a list the parser only appends to
 * (a compaction in the file starts a new list). The array is made each time `messages` is read and
 * dropped after the call is replayed: a copy per call, all held until the file was replayed, made
 * memory quadratic in the calls (20,000 calls: 3.5 GB; 30,000: out of memory).
 */
export function withPrompt<T extends Omit<ReplayCall, 'messages' | 'messageCount'>>(
  call: T,
  history: readonly GuardMessage[],
  end = history.length,
): T & ReplayCall {
  return Object.defineProperties(call, {
    messages: { get: () => history.slice(0, end), enumerable: true, configurable: true },
    messageCount: { value: end, enumerable: true, writable: true, configurable: true },
  }) as T & ReplayCall;
}

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** The message of a JSON.parse error, shortened for one line. */
export function jsonErrorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * Splits a JSONL text into parsed lines; a line that is not valid JSON, or not an object, becomes
 * an issue naming its (1-based) line number and is skipped.
 */
export function parseJsonLines(text: string, issues: ParseIssue[]): Array<{ line: number; value: Json }> {
  const out: Array<{ line: number; value: Json }> = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    if (raw.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      issues.push({ line: i + 1, message: `not valid JSON (${jsonErrorMessage(error)})` });
      continue;
    }
    if (!isObject(value)) {
      issues.push({ line: i + 1, message: 'not a JSON object' });
      continue;
    }
    out.push({ line: i + 1, value });
  }
  return out;
}

/** Content that is a string, null, or an array of `{type:'text', text}` parts, as plain text. */
export function openAiText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('');
  }
  return '';
}
