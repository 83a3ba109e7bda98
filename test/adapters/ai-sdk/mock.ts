// Scripted mock models for the AI SDK end-to-end tests: the same script drives ai 7's
// MockLanguageModelV4 and ai 6's MockLanguageModelV3 (their generate results, stream parts and
// usage objects have the same shape). The mock plays a provider:
//   - it counts every prompt it receives with one fixed rule (JSON characters / 4 × a ratio) and
//     reports usage by the SAME rule, so the guard's calibration sees a consistent provider and the
//     tests can check "no prompt exceeds the window" with the provider's own numbers;
//   - it answers the default summarizer's calls (system prompt "You write the working memory ...")
//     apart from the agent's calls, so the tests can count summarizer runs;
//   - everything else is decided by a per-test `reply` script (tool calls, text, or a throw).

import { APICallError } from '@ai-sdk/provider';

/** The rule the mock "provider" counts tokens by. Default ratio 1.3: a tokenizer denser than chars/4. */
export function tokensOf(value: unknown, ratio = 1.3): number {
  return Math.ceil(((JSON.stringify(value ?? null) ?? '').length / 4) * ratio);
}

/** Any call options (V4 or V3): only the fields the tests read. */
export interface CallOptions {
  prompt: Array<{ role: string; content: unknown; providerOptions?: unknown }>;
  tools?: unknown[];
  providerOptions?: Record<string, unknown>;
  abortSignal?: AbortSignal;
  [key: string]: unknown;
}

/** The default summarizer (adapters/ai-sdk/summarizer.ts) sends the summary instructions as the system prompt. */
export function isSummarizerCall(options: CallOptions): boolean {
  const first = options.prompt[0];
  return first?.role === 'system' && typeof first.content === 'string' && first.content.includes('working memory');
}

/** What the provider counts for a call: the prompt and the tool definitions. */
export function promptTokens(options: CallOptions, ratio = 1.3): number {
  return (
    tokensOf(options.prompt, ratio) + (options.tools && options.tools.length > 0 ? tokensOf(options.tools, ratio) : 0)
  );
}

export function usage(input: number, output: number) {
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

/** One scripted answer: tool calls (the SDK executes them and loops) or a final text. */
export interface Turn {
  /** Reasoning before the answer (the SDK sends it back in the next prompt as a reasoning part). */
  reasoning?: string;
  text?: string;
  toolCalls?: Array<{ toolName: string; input: unknown; toolCallId?: string }>;
}

export interface Received {
  kind: 'generate' | 'stream';
  summarizer: boolean;
  options: CallOptions;
  /** The prompt's size by the provider's rule. */
  tokens: number;
}

export interface ScriptOptions {
  /** Token rule ratio of this "provider" (a function: per call, e.g. per conversation). */
  ratio?: number | ((options: CallOptions) => number);
  /**
   * Tokens the provider counts on every agent call beyond the prompt it receives (a system prompt or
   * tool schemas kept elsewhere, its own formatting): in `tokens` and in the usage it reports.
   */
  hidden?: number;
  /** The agent's answer for a call; may throw (a provider error). `index` counts agent calls from 0. */
  reply: (options: CallOptions, index: number) => Turn | Promise<Turn>;
  /** The default summarizer's answer. */
  summary?: (options: CallOptions) => string;
  /** A stream whose parts are produced by the test instead of the script (errors, aborts, pacing). */
  stream?: (parts: object[], options: CallOptions) => ReadableStream<object> | undefined;
}

/** MockLanguageModelV4 or MockLanguageModelV3 (their constructor settings differ only in types). */
type MockClass<M> = new (...args: never[]) => M;
type Settings = {
  modelId: string;
  doGenerate: (options: CallOptions) => Promise<unknown>;
  doStream: (options: CallOptions) => Promise<unknown>;
};

let ids = 0;

/** The generate result for a turn (V4 and V3 share it). */
function resultOf(turn: Turn, input: number, ratio: number) {
  const content = [
    ...(turn.reasoning !== undefined ? [{ type: 'reasoning', text: turn.reasoning }] : []),
    ...(turn.text !== undefined ? [{ type: 'text', text: turn.text }] : []),
    ...(turn.toolCalls ?? []).map((c) => ({
      type: 'tool-call',
      toolCallId: c.toolCallId ?? `call-${++ids}`,
      toolName: c.toolName,
      input: JSON.stringify(c.input),
    })),
  ];
  const calls = (turn.toolCalls ?? []).length > 0;
  return {
    content,
    finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: calls ? 'tool_calls' : 'stop' },
    usage: usage(input, tokensOf(content, ratio)),
    warnings: [],
  };
}

/** The stream parts for the same result. */
function partsOf(result: ReturnType<typeof resultOf>): object[] {
  const parts: object[] = [{ type: 'stream-start', warnings: [] }];
  for (const c of result.content) {
    if (c.type === 'text' || c.type === 'reasoning') {
      const id = `t${++ids}`;
      const text = (c as { text: string }).text;
      // Two deltas, so a test can see chunks pass one by one.
      parts.push(
        { type: `${c.type}-start`, id },
        { type: `${c.type}-delta`, id, delta: text.slice(0, 3) },
        { type: `${c.type}-delta`, id, delta: text.slice(3) },
        { type: `${c.type}-end`, id },
      );
    } else parts.push(c);
  }
  parts.push({ type: 'finish', finishReason: result.finishReason, usage: result.usage });
  return parts;
}

export function arrayStream(parts: object[]): ReadableStream<object> {
  return new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(p);
      controller.close();
    },
  });
}

const DEFAULT_SUMMARY = '## Task state\nReading files one by one.\n## Next steps\nRead the next file.';

/** A mock model of the given class (MockLanguageModelV4 or MockLanguageModelV3) driven by a script. */
export function scriptedModel<M>(Mock: MockClass<M>, script: ScriptOptions) {
  const ratioOf = (options: CallOptions) =>
    typeof script.ratio === 'function' ? script.ratio(options) : (script.ratio ?? 1.3);
  const received: Received[] = [];
  let agentIndex = 0;

  async function answer(kind: Received['kind'], options: CallOptions) {
    const summarizer = isSummarizerCall(options);
    const ratio = ratioOf(options);
    const input = promptTokens(options, ratio) + (summarizer ? 0 : (script.hidden ?? 0));
    received.push({ kind, summarizer, options, tokens: input });
    // Like a real provider (fetch): an aborted call fails at once.
    if (options.abortSignal?.aborted) throw options.abortSignal.reason ?? new DOMException('aborted', 'AbortError');
    if (summarizer) return resultOf({ text: (script.summary ?? (() => DEFAULT_SUMMARY))(options) }, input, ratio);
    return resultOf(await script.reply(options, agentIndex++), input, ratio);
  }

  const model = new (Mock as unknown as new (settings: Settings) => M)({
    modelId: 'mock-model',
    doGenerate: (options) => answer('generate', options),
    doStream: async (options) => {
      const parts = partsOf(await answer('stream', options));
      return { stream: script.stream?.(parts, options) ?? arrayStream(parts) };
    },
  });

  return {
    model,
    received,
    /** The calls of the agent (not the summarizer). */
    agentCalls: () => received.filter((r) => !r.summarizer),
    summarizerCalls: () => received.filter((r) => r.summarizer),
  };
}

/** An agent that reads a file per step (`read` tool) for `steps` steps, then answers 'done'. */
export function readerScript(steps: number): ScriptOptions['reply'] {
  return (_options, index) =>
    index < steps ? { toolCalls: [{ toolName: 'read', input: { path: `src/file-${index}.ts` } }] } : { text: 'done' };
}

/** About `chars` characters of source-like text (a tool result). */
export function fileText(path: string, chars = 3_000): string {
  let out = `// ${path}\n`;
  for (let i = 0; out.length < chars; i++) out += `export const value${i} = computeSomething(${i}, "${path}");\n`;
  return out.slice(0, chars);
}

/**
 * `request`, six file reads of 2,500 characters each, then `followUp`: a conversation under an 8k
 * threshold with enough tool history for a compaction (an overflow retry) to matter. `M` is the
 * message type of the ai version under test.
 */
export function readHistory<M>(request: string, followUp: string): M[] {
  const messages: unknown[] = [{ role: 'user', content: request }];
  for (let i = 0; i < 6; i++) {
    const call = { type: 'tool-call', toolCallId: `h${i}`, toolName: 'read', input: { path: `f${i}.ts` } };
    const output = { type: 'text', value: fileText(`f${i}.ts`, 2_500) };
    messages.push(
      { role: 'assistant', content: [call] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: `h${i}`, toolName: 'read', output }] },
    );
  }
  messages.push({ role: 'user', content: followUp });
  return messages as M[];
}

/** The text of a message's content (string, or its text parts). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p: { type?: string; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .join('');
}

/** Whether a prompt holds the guard's summary message. */
export function hasSummary(prompt: CallOptions['prompt']): boolean {
  return prompt.some((m) => m.role === 'user' && textOf(m.content).startsWith('[Context Summary]'));
}

const PART_TYPES: Record<string, readonly string[]> = {
  user: ['text', 'file'],
  assistant: ['text', 'file', 'reasoning', 'reasoning-file', 'tool-call', 'tool-result', 'custom'],
  tool: ['tool-result', 'tool-approval-response'],
};
const OUTPUT_TYPES = ['text', 'json', 'execution-denied', 'error-text', 'error-json', 'content'];

/**
 * What a provider would reject in a V4 / V3 prompt (the shapes the adapter writes back: summary and
 * continuation messages, placeholders, truncated outputs); empty when valid.
 */
export function promptShapeProblems(prompt: CallOptions['prompt']): string[] {
  const problems: string[] = [];
  prompt.forEach((m, i) => {
    if (m.role === 'system') {
      if (typeof m.content !== 'string') problems.push(`message ${i}: system content is not a string`);
      return;
    }
    const allowed = PART_TYPES[m.role];
    if (!allowed) return void problems.push(`message ${i}: unknown role ${m.role}`);
    if (!Array.isArray(m.content))
      return void problems.push(`message ${i}: ${m.role} content is not an array of parts`);
    for (const part of m.content as Array<Record<string, unknown>>) {
      if (!allowed.includes(part?.type as string))
        problems.push(`message ${i}: ${m.role} part of type ${String(part?.type)}`);
      if (part?.type === 'text' && typeof part.text !== 'string') problems.push(`message ${i}: text part without text`);
      if (part?.type === 'tool-result') {
        const output = part.output as { type?: string; value?: unknown } | undefined;
        if (!output || !OUTPUT_TYPES.includes(output.type as string))
          problems.push(`message ${i}: tool result output ${JSON.stringify(output)?.slice(0, 80)}`);
        else if ((output.type === 'text' || output.type === 'error-text') && typeof output.value !== 'string')
          problems.push(`message ${i}: text output without a string value`);
      }
    }
  });
  return problems;
}

export const OVERFLOW_MESSAGE =
  "This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens. Please reduce the length of the messages.";

/**
 * OpenAI's Chat Completions rejection of a prompt over the window, as @ai-sdk/openai throws it: not
 * retryable, so the SDK's own retries stay out.
 */
export const overflowError = (message = OVERFLOW_MESSAGE, responseBody?: string): APICallError =>
  new APICallError({
    message,
    url: 'https://api.openai.com/v1/chat/completions',
    requestBodyValues: {},
    statusCode: 400,
    ...(responseBody ? { responseBody } : {}),
    isRetryable: false,
  });
