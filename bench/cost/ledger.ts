// Per-call accounting of billed input tokens with a prompt cache.
//
// Each prompt is priced by the fake provider of the simulation (realTokens: ratio × chars/4 of the
// text, tool names, ids and inputs, 12 characters of framing a message, plus the tool definitions).
// The cached part of a call is the longest prefix it shares with the previous call's prompt, message
// by message: a message counts when it is the same object or has the same JSON; the first one that
// differs ends the prefix (tool definitions come first and never change, so they are cached from the
// second call on). Billed cost in input-token units: cached × 0.1 (cache read) + the rest × 1.25
// (cache write), as Anthropic bills them, + the summarizer's own input × 1.0.
import type { GuardMessage, ToolDefinition } from '../../src/index.ts';
import { realTokens, type ProviderModel } from '../../test/compaction/simulation.ts';

export const CACHE_READ = 0.1;
export const CACHE_WRITE = 1.25;
export const SUMMARIZER_INPUT = 1.0;

export interface CallRecord {
  /** Real tokens of the prompt sent. */
  prompt: number;
  /** Real tokens of its prefix shared with the previous prompt. */
  cached: number;
  /** Real tokens the summarizer received for this call's compaction (0 when none). */
  summarizer: number;
  compacted: boolean;
  /** Messages of the previous prompt, and how many of them start this one. */
  previousMessages: number;
  prefixMessages: number;
  /** Real tokens of the previous prompt (0 on the first call). */
  previousPrompt: number;
  cost: number;
}

const json = new WeakMap<object, string>();
function jsonOf(m: GuardMessage): string {
  let s = json.get(m);
  if (s === undefined) json.set(m, (s = JSON.stringify(m)));
  return s;
}

/** Messages `a` and `b` share at their start. */
export function sharedPrefix(a: readonly GuardMessage[], b: readonly GuardMessage[]): number {
  let k = 0;
  while (k < a.length && k < b.length && (a[k] === b[k] || jsonOf(a[k]!) === jsonOf(b[k]!))) k++;
  return k;
}

export class Ledger {
  readonly records: CallRecord[] = [];
  private previous: readonly GuardMessage[] | undefined;
  private previousPrompt = 0;
  private readonly tools: readonly ToolDefinition[];
  private readonly provider: ProviderModel;

  constructor(tools: readonly ToolDefinition[], provider: ProviderModel) {
    this.tools = tools;
    this.provider = provider;
  }

  /** Records one call: the prompt sent, whether it compacted, and the summarizer's input tokens. */
  record(messages: readonly GuardMessage[], compacted: boolean, summarizer: number): CallRecord {
    const prompt = realTokens(messages, this.tools, this.provider);
    const prefixMessages = this.previous ? sharedPrefix(this.previous, messages) : 0;
    const cached = this.previous
      ? Math.min(prompt, realTokens(messages.slice(0, prefixMessages), this.tools, this.provider))
      : 0;
    const record: CallRecord = {
      prompt,
      cached,
      summarizer,
      compacted,
      previousMessages: this.previous?.length ?? 0,
      prefixMessages,
      previousPrompt: this.previousPrompt,
      cost: cached * CACHE_READ + (prompt - cached) * CACHE_WRITE + summarizer * SUMMARIZER_INPUT,
    };
    this.records.push(record);
    this.previous = messages;
    this.previousPrompt = prompt;
    return record;
  }
}

/** What a run's calls add up to. */
export interface RunStats {
  calls: number;
  compactions: number;
  /** Mean number of calls from one compaction to the next (undefined with fewer than two). */
  gap: number | undefined;
  /** Shortest such gap. */
  minGap: number | undefined;
  prompt: number;
  cached: number;
  cacheShare: number;
  cost: number;
  /** The cost's parts: cache reads, writes on calls without a compaction, writes on compacting calls, summarizer input. */
  parts: { reads: number; growthWrites: number; compactionWrites: number; summarizer: number };
  summarizerTokens: number;
  /** Mean real size of the prompt right after a compaction / window. */
  after: number | undefined;
  /** Mean prompt / window over all calls. */
  meanPrompt: number;
  maxPrompt: number;
  /** Calls whose prompt was over the window. */
  overflows: number;
  /** Calls without a compaction whose prompt did not start with the whole previous prompt, and the tokens re-written for it. */
  breaks: number;
  breakTokens: number;
  /** At compacting calls: mean share of the new prompt that was cached, and mean messages kept from the previous prompt's start. */
  compactionCacheShare: number | undefined;
  compactionPrefixMessages: number | undefined;
}

const mean = (xs: number[]): number | undefined =>
  xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0) / xs.length;

export function stats(records: readonly CallRecord[], window: number): RunStats {
  const at = records.flatMap((r, i) => (r.compacted ? [i] : []));
  const gaps = at.slice(1).map((i, k) => i - at[k]!);
  const sum = (f: (r: CallRecord) => number, rs: readonly CallRecord[] = records) => rs.reduce((n, r) => n + f(r), 0);
  const compacting = records.filter((r) => r.compacted);
  const plain = records.filter((r) => !r.compacted);
  const broken = plain.filter((r, i) => i > 0 && r.prefixMessages < r.previousMessages);
  const prompt = sum((r) => r.prompt);
  const cached = sum((r) => r.cached);
  return {
    calls: records.length,
    compactions: at.length,
    gap: mean(gaps),
    minGap: gaps.length > 0 ? Math.min(...gaps) : undefined,
    prompt,
    cached,
    cacheShare: prompt === 0 ? 0 : cached / prompt,
    cost: sum((r) => r.cost),
    parts: {
      reads: sum((r) => r.cached * CACHE_READ),
      growthWrites: sum((r) => (r.prompt - r.cached) * CACHE_WRITE, plain),
      compactionWrites: sum((r) => (r.prompt - r.cached) * CACHE_WRITE, compacting),
      summarizer: sum((r) => r.summarizer * SUMMARIZER_INPUT),
    },
    summarizerTokens: sum((r) => r.summarizer),
    after: mean(compacting.map((r) => r.prompt / window)),
    meanPrompt: mean(records.map((r) => r.prompt / window)) ?? 0,
    maxPrompt: Math.max(0, ...records.map((r) => r.prompt / window)),
    overflows: records.filter((r) => r.prompt > window).length,
    breaks: broken.length,
    breakTokens: sum((r) => Math.max(0, r.previousPrompt - r.cached), broken),
    compactionCacheShare: mean(compacting.map((r) => r.cached / r.prompt)),
    compactionPrefixMessages: mean(compacting.map((r) => r.prefixMessages)),
  };
}
