// A compaction's working state (compaction/work.ts) built from a hand-made pipeline input, so each
// step can be run alone. Plain functions stand in for the guard's measure and pricing: a message
// costs the length of its text (other parts: their JSON), an image or file 500 tokens, and the
// price is chars/4 (one provider token per heuristic token, 0.25 tokens per character).
// Defaults: a 10k window, threshold 8k, target 5k, a 2k tail, a 1k summary budget, tool results
// truncated past 1k tokens (4,000 characters).
import type { CompactionSettings } from '../../../src/compaction/policy.ts';
import { DEFAULT_FILE_OPS } from '../../../src/compaction/file-ops.ts';
import { emptyMemo, type CompactionMemo } from '../../../src/compaction/memo.ts';
import type { SummarizeOutcome } from '../../../src/compaction/summarizer.ts';
import { Work, type PipelineInput } from '../../../src/compaction/work.ts';
import type { GuardMessage, ToolResultPart } from '../../../src/index.ts';
import { hashMessage } from '../../../src/tokens/hash.ts';
import type { Entry } from '../../../src/tokens/prompt-measure.ts';

export const MEDIA_TOKENS = 500;
export const TOKENS_PER_CHAR = 0.25;

export const SETTINGS: CompactionSettings = {
  retention: 'keep-recent',
  target: 5_000,
  keepRecentTokens: 2_000,
  keepFirstUserMessage: true,
  maxSummaryTokens: 1_000,
  summarizerInputTokens: 4_000,
  summarizerContextWindow: 10_000,
  summarizerTimeoutMs: 1_000,
  compactionTimeoutMs: 1_000,
  prune: { maxToolResultTokens: 1_000, protectRecentTokens: 2_000, neverPrune: [] },
  fileOps: DEFAULT_FILE_OPS,
  keepUserMessagesTokens: 0,
  clipArchive: undefined,
  archive: false,
};

/** Heuristic characters and media tokens of one message. */
export function measureOne(m: GuardMessage): { chars: number; mediaTokens: number } {
  const content = m.content as unknown;
  if (typeof content === 'string') return { chars: content.length, mediaTokens: 0 };
  let chars = 0;
  let mediaTokens = 0;
  for (const part of content as Array<{ type: string; text?: string }>) {
    if (part.type === 'image' || part.type === 'file') mediaTokens += MEDIA_TOKENS;
    else if (part.type === 'text' || part.type === 'reasoning') chars += String(part.text).length;
    else chars += JSON.stringify(part).length;
  }
  return { chars, mediaTokens };
}

export function measure(messages: GuardMessage[]): ReturnType<PipelineInput['measure']> & { entries: Entry[] } {
  const entries = messages.map((message) => ({
    message,
    kind: 'test',
    ...measureOne(message),
    hash: hashMessage(message),
  }));
  const chars = entries.reduce((n, e) => n + e.chars, 0);
  const hash = entries.length > 0 ? (entries[entries.length - 1]?.hash ?? 0) : 0;
  return {
    chars,
    mediaTokens: entries.reduce((n, e) => n + e.mediaTokens, 0),
    toolChars: 0,
    prompt: { messages: entries.length, chars, hash },
    entries,
  };
}

export const price = (chars: number, mediaTokens: number): number => chars * TOKENS_PER_CHAR + mediaTokens;

/** Tokens of a prompt as the harness prices it. */
export function tokensOf(messages: GuardMessage[]): number {
  const m = measure(messages);
  return Math.ceil(price(m.chars, m.mediaTokens));
}

export interface SummarizeCall {
  messages: GuardMessage[];
  previousSummary: string | undefined;
  roomTokens: number;
  userRoomTokens: number;
}

/** A summarizer stand-in that records its calls; `outcome` decides each answer. */
export function fakeSummarize(outcome: (call: SummarizeCall) => Partial<SummarizeOutcome> = () => ({})) {
  const calls: SummarizeCall[] = [];
  const summarize: PipelineInput['summarize'] = async (messages, previousSummary, roomTokens, userRoomTokens) => {
    const call = { messages, previousSummary, roomTokens, userRoomTokens };
    calls.push(call);
    return {
      text: `SUMMARY of ${messages.length} messages`,
      mechanical: false,
      calls: 1,
      inputTokens: 10,
      lostMessages: 0,
      lostUserMessages: 0,
      ...outcome(call),
    };
  };
  return { calls, summarize };
}

export interface Harness {
  input: PipelineInput;
  starts: () => number;
  digestLosses: Array<[number, number]>;
}

/** A pipeline input over `messages`; every field may be overridden. */
export function pipelineInput(messages: GuardMessage[], overrides: Partial<PipelineInput> = {}): Harness {
  let starts = 0;
  const digestLosses: Array<[number, number]> = [];
  const hashes = messages.map(hashMessage);
  const input: PipelineInput = {
    sessionId: 's',
    archive: undefined,
    reason: 'threshold',
    focus: undefined,
    hostMessages: messages,
    hashOf: (i) => hashes[i] ?? 0,
    prefixOf: (n) => ({
      messages: n,
      chars: measure(messages.slice(0, n)).chars,
      hash: n > 0 ? (hashes[n - 1] ?? 0) : 0,
    }),
    memo: emptyMemo(),
    summaryApplies: false,
    settings: SETTINGS,
    threshold: 8_000,
    contextWindow: 10_000,
    redact: (text) => text,
    tokensBefore: tokensOf(messages),
    measure,
    measureSystem: () => measure(messages.filter((m) => m.role === 'system')),
    price,
    tokensPerChar: TOKENS_PER_CHAR,
    summarize: fakeSummarize().summarize,
    onStart: () => {
      starts++;
    },
    onDigestLoss: (lost, lostUser) => {
      digestLosses.push([lost, lostUser]);
    },
    onUserWordsLost: () => {},
    ...overrides,
  };
  return { input, starts: () => starts, digestLosses };
}

/** A Work over `messages`, as the pipeline builds it. */
export function work(messages: GuardMessage[], overrides: Partial<PipelineInput> = {}): Work {
  return new Work(pipelineInput(messages, overrides).input);
}

/** A memo with only the fields given. */
export function memo(fields: Partial<CompactionMemo>): CompactionMemo {
  return { ...emptyMemo(), ...fields };
}

/** Tool-result parts of a prompt, in order. */
export function toolResultParts(messages: readonly GuardMessage[]): ToolResultPart[] {
  return messages.flatMap((m) =>
    m.role === 'tool' ? m.content.filter((p): p is ToolResultPart => p.type === 'tool-result') : [],
  );
}

/** Text of a tool result's output. */
export function outputText(part: ToolResultPart): string {
  const value = (part.output as { value: unknown }).value;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** `n` characters of readable text starting with `label`. */
export function text(label: string, n: number): string {
  const filler = ' lorem ipsum dolor sit amet';
  return (label + filler.repeat(Math.ceil(n / filler.length))).slice(0, n);
}

/** An image part of 500 tokens. */
export const image = (name: string) => ({
  type: 'image' as const,
  image: `https://example.com/${name}.png`,
  mediaType: 'image/png',
});
