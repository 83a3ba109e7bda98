// Estimation accuracy on real agent transcripts with the provider's real prompt size per call.
//
//   node bench/accuracy.ts [transcripts-dir] [--exact-counting=auto|off|o200k_base|cl100k_base] [--worst=N]
//   (default ../shared/transcripts, skipped when absent; exact counting 'auto', the guard's default;
//   --worst lists the N scored calls with the largest |error| and what was added before each)
//
// Every model call of every transcript is replayed through the guard: beforeModel on the messages
// sent, then afterModel with the provider's real count, as a host would. Each estimate is scored
// against the real count, next to two baselines computed on the same messages:
//   - chars/4: the plain heuristic;
//   - seed: heuristic × clamp(real / heuristic of the previous call, 1, 5), 1.5 on the first call.
// The first call of a file and the first call after a compaction boundary are not scored: the
// files lack the hidden system prompt and tool schemas, which only a real count reveals.
//
// The replay itself is cli/estimate.ts, shared with `context-guard replay`: both report the same
// estimate error for the same file.
import { estimateCalls, summarizeErrors } from '../cli/estimate.ts';
import type { ContextGuardOptions, GuardMessage } from '../src/index.ts';
import { loadTranscripts, type Transcript } from './transcripts.ts';

type Method = 'guard' | 'seed' | 'chars/4';
const METHODS: Method[] = ['guard', 'seed', 'chars/4'];

export interface Scores {
  errors: Record<Method, number[]>;
  /** The guard's scored calls, in order, with what was added since the previous call. */
  calls: ScoredCall[];
}

export interface ScoredCall {
  file: string;
  /** Index of the call in its transcript. */
  index: number;
  real: number;
  estimate: number;
  error: number;
  /** Real growth since the previous call (its real count). */
  realGrowth: number;
  /** Output tokens the previous call reported. */
  previousOutput: number | undefined;
  /** Characters added since the previous call, by kind (the previous response's reasoning, text and tool calls, then tool results and user text). */
  added: { messages: number; reasoning: number; text: number; toolCalls: number; toolResults: number; user: number };
}

/** Characters of the messages added since the previous call, by kind. */
function addedByKind(messages: readonly GuardMessage[]): ScoredCall['added'] {
  const added = { messages: messages.length, reasoning: 0, text: 0, toolCalls: 0, toolResults: 0, user: 0 };
  for (const m of messages) {
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as unknown[]);
    for (const part of parts as Array<Record<string, unknown>>) {
      const size = JSON.stringify(part.type === 'text' || part.type === 'reasoning' ? part.text : part)?.length ?? 0;
      if (m.role === 'assistant') {
        if (part.type === 'reasoning') added.reasoning += size;
        else if (part.type === 'tool-call') added.toolCalls += size;
        else added.text += size;
      } else if (m.role === 'tool' || part.type === 'tool-result') added.toolResults += size;
      else added.user += size;
    }
  }
  return added;
}

/** Replays one transcript; returns the relative error (estimate − real) / real of each scored call. */
export async function replay(
  transcript: Transcript,
  exactCounting: ContextGuardOptions['exactCounting'] = 'auto',
): Promise<Scores> {
  const estimates = await estimateCalls(transcript, { exactCounting });
  const errors: Record<Method, number[]> = { guard: [], seed: [], 'chars/4': [] };
  const calls: ScoredCall[] = [];
  let previous: { real: number; heuristic: number; output: number | undefined; messages: number } | undefined;
  for (const [index, call] of transcript.calls.entries()) {
    const { estimate, heuristic } = estimates[index]!;
    const seedCorrection = previous ? Math.min(5, Math.max(1, previous.real / previous.heuristic)) : 1.5;
    const real = call.inputTokens;
    if (!call.skip) {
      errors.guard.push((estimate - real) / real);
      errors.seed.push((heuristic * seedCorrection - real) / real);
      errors['chars/4'].push((heuristic - real) / real);
      calls.push({
        file: transcript.file,
        index,
        real,
        estimate,
        error: (estimate - real) / real,
        realGrowth: real - (previous?.real ?? 0),
        previousOutput: previous?.output,
        added: addedByKind(call.messages.slice(previous?.messages ?? 0)),
      });
    }
    previous = { real, heuristic, output: call.outputTokens, messages: call.messageCount };
  }
  return { errors, calls };
}

const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}%`;

/** Median and p95 of |error|, worst under and over (cli/estimate.ts, shared with `context-guard replay`). */
export const summarize = summarizeErrors;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const exactCounting = (args.find((a) => a.startsWith('--exact-counting='))?.split('=')[1] ??
    'auto') as ContextGuardOptions['exactCounting'];
  const worst = Number(args.find((a) => a.startsWith('--worst='))?.split('=')[1] ?? 0);
  const transcripts = loadTranscripts(args.find((a) => !a.startsWith('--')));
  if (!transcripts) {
    console.log('bench/accuracy: no transcripts folder (../shared/transcripts); nothing to measure.');
    return;
  }
  const groups = new Map<string, Record<Method, number[]>>();
  const pooled: Record<Method, number[]> = { guard: [], seed: [], 'chars/4': [] };
  const scored: ScoredCall[] = [];
  for (const t of transcripts) {
    const { errors, calls } = await replay(t, exactCounting);
    scored.push(...calls);
    const key = `${t.format} (${t.modelId.replace(/^deepseek\//, '')})`;
    const g = groups.get(key) ?? { guard: [], seed: [], 'chars/4': [] };
    for (const m of METHODS) {
      g[m].push(...errors[m]);
      pooled[m].push(...errors[m]);
    }
    groups.set(key, g);
  }
  const lines = [
    '| transcripts | scored calls | method | median \\|error\\| | p95 \\|error\\| | worst under | worst over |',
    '|---|---:|---|---:|---:|---:|---:|',
  ];
  const row = (label: string, m: Method, errors: number[]) => {
    const s = summarize(errors);
    lines.push(
      `| ${label} | ${s.n} | ${m} | ${pct(s.medianAbs).slice(1)} | ${pct(s.p95Abs).slice(1)} | ${pct(s.worstUnder)} | ${pct(s.worstOver)} |`,
    );
  };
  for (const [key, g] of groups) for (const m of METHODS) row(key, m, g[m]);
  for (const m of METHODS) row('**pooled**', m, pooled[m]);
  console.log(
    `${transcripts.length} transcripts, ${transcripts.reduce((n, t) => n + t.calls.length, 0)} model calls, exactCounting: ${exactCounting}`,
  );
  console.log(lines.join('\n'));
  const s = summarize(pooled.guard);
  const ok = s.p95Abs <= 0.01 && s.worstUnder >= -0.05;
  console.log(`\ntarget (pooled p95 |error| <= 1%, no undercount worse than -5%): ${ok ? 'met' : 'NOT met'}`);
  if (worst > 0) printWorst(scored, worst);
}

/** The `n` scored calls with the largest |error|, with what was added since the previous call. */
function printWorst(calls: ScoredCall[], n: number): void {
  const rows = [...calls].sort((a, b) => Math.abs(b.error) - Math.abs(a.error)).slice(0, n);
  console.log(`\n${rows.length} largest |error| (guard); added: characters since the previous call`);
  console.log(
    '| transcript | call | real | estimate | error | real growth | previous output | messages | reasoning | text | tool calls | tool results | user |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of rows) {
    const a = c.added;
    console.log(
      `| ${c.file} | ${c.index} | ${c.real} | ${c.estimate} | ${pct(c.error)} | ${c.realGrowth} | ${c.previousOutput ?? ''} | ${a.messages} | ${a.reasoning} | ${a.text} | ${a.toolCalls} | ${a.toolResults} | ${a.user} |`,
    );
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) await main();
