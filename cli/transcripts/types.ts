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

/** Where each call's prompt is read from: the parser's history and how many of its messages. */
const promptSources = new WeakMap<object, { history: readonly GuardMessage[]; end: number }>();

/**
 * `call` with its prompt: the first `end` messages of `history`, a list the parser only appends to
 * (a compaction in the file starts a new list). The array is made each time `messages` is read and
 * dropped after the call is replayed: a copy per call, all held until the file was replayed, made
 * memory quadratic in the calls (20,000 calls: 3.5 GB; 30,000: out of memory). A replay reads the
 * prompts through {@link GrowingPrompt} instead, which copies each message once.
 */
export function withPrompt<T extends Omit<ReplayCall, 'messages' | 'messageCount'>>(
  call: T,
  history: readonly GuardMessage[],
  end = history.length,
): T & ReplayCall {
  promptSources.set(call, { history, end });
  return Object.defineProperties(call, {
    messages: { get: () => history.slice(0, end), enumerable: true, configurable: true },
    messageCount: { value: end, enumerable: true, writable: true, configurable: true },
  }) as T & ReplayCall;
}

/**
 * The prompts of a file's calls, in order, as a host hands them over that keeps one array and
 * appends to it (the common agent loop: `messages.push(response, ...results)`): each call's array
 * is the last one grown by what the call added, so a replay copies each message once, not the
 * whole history on every call (quadratic: 10,000 calls took 14.5 s, 30,000 calls 68 s). A new
 * history (a compaction in the file), or a call whose prompt does not extend the last one, starts
 * a new array: the arrays handed out earlier are never changed after that.
 *
 * The array handed out is valid until the next `of`: it grows in place.
 */
export class GrowingPrompt {
  private history: readonly GuardMessage[] | undefined;
  private live: GuardMessage[] = [];
  /** Messages copied into the arrays handed out so far (what a replay's cost per call follows). */
  copied = 0;

  /** The messages sent for `call`. */
  of(call: ReplayCall): GuardMessage[] {
    const source = promptSources.get(call);
    if (!source) {
      // A call made without withPrompt (a test's): its own array.
      const messages = call.messages;
      this.copied += messages.length;
      this.history = undefined;
      return messages;
    }
    const { history, end } = source;
    const live = this.live;
    if (history !== this.history || end < live.length) {
      this.history = history;
      this.live = history.slice(0, end);
      this.copied += end;
      return this.live;
    }
    this.copied += end - live.length;
    for (let i = live.length; i < end; i++) live.push(history[i] as GuardMessage);
    return live;
  }
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
