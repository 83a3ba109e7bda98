// Estimation accuracy on real agent transcripts with the provider's real prompt size per call.
//
//   node bench/accuracy.ts [transcripts-dir] [--exact-counting=auto|off|o200k_base|cl100k_base]
//   (default ../shared/transcripts, skipped when absent; exact counting 'auto', the guard's default)
//
// Every model call of every transcript is replayed through the guard: beforeModel on the messages
// sent, then afterModel with the provider's real count, as a host would. Each estimate is scored
// against the real count, next to two baselines computed on the same messages:
//   - chars/4: the plain heuristic;
//   - seed: heuristic × clamp(real / heuristic of the previous call, 1, 5), 1.5 on the first call.
// The first call of a file and the first call after a compaction boundary are not scored: the
// files lack the hidden system prompt and tool schemas, which only a real count reveals.
import { createContextGuard, type ContextGuardOptions, type EstimateEvent } from '../src/index.ts';
import { loadTranscripts, type Transcript } from './transcripts.ts';

type Method = 'guard' | 'seed' | 'chars/4';
const METHODS: Method[] = ['guard', 'seed', 'chars/4'];

export interface Scores {
  errors: Record<Method, number[]>;
}

/** Replays one transcript; returns the relative error (estimate − real) / real of each scored call. */
export async function replay(
  transcript: Transcript,
  exactCounting: ContextGuardOptions['exactCounting'] = 'auto',
): Promise<Scores> {
  let lastEstimate: EstimateEvent | undefined;
  // Far above every prompt: this measures estimation, not compaction.
  const guard = createContextGuard({ contextWindow: 100_000_000, exactCounting });
  // The baselines are computed from plain chars/4, whatever the guard's exact counting does.
  const plain = createContextGuard({
    contextWindow: 100_000_000,
    exactCounting: 'off',
    onEvent: (e) => {
      if (e.type === 'estimate') lastEstimate = e;
    },
  });
  const errors: Record<Method, number[]> = { guard: [], seed: [], 'chars/4': [] };
  let previous: { real: number; heuristic: number } | undefined;
  for (const call of transcript.calls) {
    const r = await guard.beforeModel({
      sessionId: transcript.file,
      modelId: transcript.modelId,
      messages: call.messages,
      tools: call.tools,
    });
    await plain.beforeModel({ sessionId: transcript.file, messages: call.messages, tools: call.tools });
    const heuristic = lastEstimate!.heuristicTokens;
    const seedCorrection = previous ? Math.min(5, Math.max(1, previous.real / previous.heuristic)) : 1.5;
    if (!call.skip) {
      const real = call.inputTokens;
      errors.guard.push((r.tokens - real) / real);
      errors.seed.push((heuristic * seedCorrection - real) / real);
      errors['chars/4'].push((heuristic - real) / real);
    }
    const usage = {
      inputTokens: call.inputTokens,
      ...(call.outputTokens !== undefined ? { outputTokens: call.outputTokens } : {}),
    };
    await guard.afterModel({ sessionId: transcript.file, usage });
    previous = { real: call.inputTokens, heuristic };
  }
  return { errors };
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}%`;

export function summarize(errors: number[]) {
  const abs = errors.map(Math.abs).sort((a, b) => a - b);
  return {
    n: errors.length,
    medianAbs: quantile(abs, 0.5),
    p95Abs: quantile(abs, 0.95),
    worstUnder: Math.min(0, ...errors),
    worstOver: Math.max(0, ...errors),
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const exactCounting = (args.find((a) => a.startsWith('--exact-counting='))?.split('=')[1] ??
    'auto') as ContextGuardOptions['exactCounting'];
  const transcripts = loadTranscripts(args.find((a) => !a.startsWith('--')));
  if (!transcripts) {
    console.log('bench/accuracy: no transcripts folder (../shared/transcripts); nothing to measure.');
    return;
  }
  const groups = new Map<string, Record<Method, number[]>>();
  const pooled: Record<Method, number[]> = { guard: [], seed: [], 'chars/4': [] };
  for (const t of transcripts) {
    const { errors } = await replay(t, exactCounting);
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
  const ok = s.p95Abs <= 0.02 && s.worstUnder >= -0.08;
  console.log(`\ntarget (pooled p95 |error| <= 2%, no undercount worse than -8%): ${ok ? 'met' : 'NOT met'}`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) await main();
