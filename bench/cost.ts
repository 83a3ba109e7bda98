// What compaction costs in billed input tokens with a prompt cache: context-guard and LangChain's
// summarizationMiddleware on the same sessions, side by side.
//
//   node bench/cost.ts                 (npm run bench:cost; a few seconds)
//   node bench/cost.ts --quick         (150 calls a scenario, three windows)
//   node bench/cost.ts --json          (every row, with the cost's parts and the cache diagnostics)
//   node bench/cost.ts --calls 600 --windows 4000,1000000 --target 0.3   (target: the guard's option)
//
// Scenarios (bench/cost/scenarios.ts): the shapes of the acceptance simulation (test/compaction/
// simulation.test.ts), a tool-heavy coding agent (a user request, four tool calls with outputs of
// 1.2% of the window each, a final answer), a plain chat (a user message and an answer, 1.2% of the
// window a call) and the same agent behind a host that never reports usage, in windows of 4k, 32k,
// 128k, 200k and 1M tokens; sizes are fractions of the window in the fake provider's real tokens
// (ratio 1.2, 1.3 for the host without usage), so each window crosses the threshold alike.
//
// Each scenario is replayed by a stateless host: it appends the call's messages, sends its whole
// history to beforeModel, "sends" r.messages, reports the fake provider's count of it to afterModel
// (not in the no-usage scenario) and appends the scripted answer. Systems:
// - guard, mechanical: createContextGuard({ contextWindow }), no summarizer (the mechanical digest);
// - guard, scripted summary: the simulation's scripted summarizer (fakeSummarizer: a few lines);
// - langchain: summarizationMiddleware (langchain 1.x) triggered at the guard's threshold, its
//   default keep (the last 20 messages), trim and token counter (countTokensApproximately: chars/4
//   of the state, without the system prompt and tool definitions), a scripted summary model
//   answering like the guard's (bench/cost/langchain.ts); the host keeps the agent state and sends
//   system + state;
// - langchain, real count: the same with a tokenCounter that counts like the provider (system
//   prompt, tool definitions and the provider's ratio included), so that its trigger is the guard's
//   threshold in real tokens.
// Accounting per call (bench/cost/ledger.ts): the prompt's real tokens (tool definitions included),
// the cached part (its longest prefix shared with the previous prompt, message by message), and the
// billed cost in input-token units: cached × 0.1 + the rest × 1.25 + the summarizer's input × 1.0.
// The summarizer's input is what it was sent (instructions + prompt for the guard, LangChain's
// formatted summary prompt), in real tokens at the provider's ratio, for both systems alike; the
// guard's own compaction.summarizerInputTokens (its estimate) is in --json as summarizerReported.
import type { BaseMessage } from '@langchain/core/messages';
import { toGuardMessages } from '../adapters/langchain/convert.ts';
import { createContextGuard, thresholdFor, type GuardMessage } from '../src/index.ts';
import { fakeSummarizer, realTokens } from '../test/compaction/simulation.ts';
import { ScriptedSummaryModel } from './cost/langchain.ts';
import { LangChainHost } from './survival/langchain.ts';
import { Ledger, stats, type RunStats } from './cost/ledger.ts';
import { buildScenario, SHAPES, WINDOWS, type Scenario, type Shape } from './cost/scenarios.ts';
import { numberFlag } from './args.ts';

type SystemName = 'guard, mechanical' | 'guard, scripted summary' | 'langchain' | 'langchain, real count';
const SYSTEMS: readonly SystemName[] = [
  'guard, mechanical',
  'guard, scripted summary',
  'langchain',
  'langchain, real count',
];

interface RunResult {
  stats: RunStats;
  /** Calls that compacted, by index. */
  compactedAt: number[];
  /** Guard only: its compactions by strategy, and the summarizer input it reported (its estimate, not billed). */
  strategies?: Record<string, number>;
  summarizerReported?: number;
  ms: number;
}

/** Real tokens of what a summarizer was sent: its characters at the provider's ratio. */
const summarizerTokens = (s: Scenario, chars: readonly number[]): number =>
  chars.reduce((n, c) => n + Math.ceil((s.provider.ratio * c) / 4), 0);

async function runGuard(s: Scenario, withSummary: boolean, target: number | undefined): Promise<RunResult> {
  const started = performance.now();
  const summarizer = withSummary ? fakeSummarizer({ ratio: s.provider.ratio }) : undefined;
  const guard = createContextGuard({
    contextWindow: s.window,
    ...(summarizer ? { summarizer: summarizer.summarize } : {}),
    ...(target !== undefined ? { target } : {}),
  });
  const sessionId = `cost-${s.name}`;
  const ledger = new Ledger(s.tools, s.provider);
  const history: GuardMessage[] = [s.system];
  const strategies: Record<string, number> = {};
  const compactedAt: number[] = [];
  let reported = 0;
  for (const [i, call] of s.calls.entries()) {
    history.push(...call.before);
    const seen = summarizer?.calls.length ?? 0;
    const r = await guard.beforeModel({ sessionId, messages: history.slice(), tools: s.tools });
    if (r.compaction) {
      compactedAt.push(i);
      strategies[r.compaction.strategy] = (strategies[r.compaction.strategy] ?? 0) + 1;
      reported += r.compaction.summarizerInputTokens;
    }
    const sent = summarizerTokens(
      s,
      (summarizer?.calls ?? []).slice(seen).map((c) => c.inputChars),
    );
    const record = ledger.record(r.messages, r.compaction !== undefined, sent);
    if (s.usage) await guard.afterModel({ sessionId, usage: { inputTokens: record.prompt } });
    history.push(...call.reply);
  }
  return {
    stats: stats(ledger.records, s.window),
    compactedAt,
    strategies,
    summarizerReported: reported,
    ms: performance.now() - started,
  };
}

/**
 * LangChain's middleware at the guard's threshold. `realCount`: its tokenCounter counts like the
 * provider (system prompt, tool definitions and the provider's ratio included) instead of its
 * default countTokensApproximately (chars/4 of the state's messages).
 */
async function runLangChain(s: Scenario, realCount: boolean): Promise<RunResult> {
  const started = performance.now();
  const model = new ScriptedSummaryModel({});
  // The same summary length as the guard's scripted summarizer: half its summary budget, at most 1,500 characters.
  const threshold = thresholdFor(s.window, undefined);
  const maxSummaryTokens = Math.max(256, Math.floor((s.window - threshold) / 2));
  model.maxChars = Math.min(1500, Math.floor((maxSummaryTokens * 2) / s.provider.ratio));
  const tokenCounter = (messages: BaseMessage[]) =>
    realTokens([s.system, ...toGuardMessages(messages)], s.tools, s.provider);
  const host = new LangChainHost({ system: s.system, threshold, model, ...(realCount ? { tokenCounter } : {}) });
  const ledger = new Ledger(s.tools, s.provider);
  const compactedAt: number[] = [];
  for (const [i, call] of s.calls.entries()) {
    const seen = model.inputs.length;
    const { messages, compacted } = await host.beforeModel(call.before);
    if (compacted) compactedAt.push(i);
    ledger.record(messages, compacted, summarizerTokens(s, model.inputs.slice(seen)));
    host.afterModel(call.reply);
  }
  return { stats: stats(ledger.records, s.window), compactedAt, ms: performance.now() - started };
}

interface Row {
  window: number;
  shape: Shape;
  system: SystemName;
  result: RunResult;
}

const windowLabel = (w: number) => (w >= 1_000_000 ? `${w / 1_000_000}M` : `${w / 1000}k`);
const pct = (x: number | undefined): string =>
  x === undefined ? '–' : `${(x * 100).toFixed(x === 0 || x === 1 ? 0 : 1)}%`;
const fixed = (x: number | undefined, digits = 1): string => (x === undefined ? '–' : x.toFixed(digits));
function units(x: number): string {
  if (x >= 1e9) return `${(x / 1e9).toFixed(2)}G`;
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)}M`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)}k`;
  return x.toFixed(0);
}

function table(rows: Row[]): string {
  const lines = [
    '| window | shape | system | calls | compactions / 100 calls | calls between compactions (min) | cache share | billed (units) | vs guard, mechanical | prompt after compaction / window | mean prompt / window | max prompt / window |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const s = r.result.stats;
    const guard = rows.find((x) => x.window === r.window && x.shape === r.shape && x.system === 'guard, mechanical');
    const vs = guard ? s.cost / guard.result.stats.cost : Number.NaN;
    const max = s.overflows > 0 ? `**${pct(s.maxPrompt)}** (over in ${s.overflows} calls)` : pct(s.maxPrompt);
    lines.push(
      `| ${windowLabel(r.window)} | ${r.shape} | ${r.system} | ${s.calls} | ${fixed((s.compactions * 100) / s.calls)} | ` +
        `${fixed(s.gap)}${s.minGap !== undefined ? ` (${s.minGap})` : ''} | ${pct(s.cacheShare)} | ${units(s.cost)} | ` +
        `×${vs.toFixed(2)} | ${pct(s.after)} | ${pct(s.meanPrompt)} | ${max} |`,
    );
  }
  return lines.join('\n');
}

/** Stats pooled over rows: sums, and call-weighted means. */
function pooled(rows: Row[]) {
  const ss = rows.map((r) => r.result.stats);
  const sum = (f: (s: RunStats) => number) => ss.reduce((n, s) => n + f(s), 0);
  return {
    calls: sum((s) => s.calls),
    compactions: sum((s) => s.compactions),
    cacheShare: sum((s) => s.cached) / sum((s) => s.prompt),
    cost: sum((s) => s.cost),
    reads: sum((s) => s.parts.reads),
    growthWrites: sum((s) => s.parts.growthWrites),
    compactionWrites: sum((s) => s.parts.compactionWrites),
    summarizer: sum((s) => s.parts.summarizer),
    meanPrompt: sum((s) => s.meanPrompt * s.calls) / sum((s) => s.calls),
    breaks: sum((s) => s.breaks),
    breakTokens: sum((s) => s.breakTokens),
    overflows: sum((s) => s.overflows),
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const json = args.includes('--json');
  const calls = numberFlag(args, '--calls', quick ? 150 : 400);
  const targetFlag = numberFlag(args, '--target', Number.NaN);
  const target = Number.isNaN(targetFlag) ? undefined : targetFlag;
  const windowsArg = args.includes('--windows') ? args[args.indexOf('--windows') + 1] : undefined;
  const windows = windowsArg ? windowsArg.split(',').map(Number) : quick ? [4_000, 128_000, 1_000_000] : WINDOWS;
  const started = performance.now();

  const rows: Row[] = [];
  for (const window of windows) {
    for (const shape of SHAPES) {
      for (const system of SYSTEMS) {
        // A fresh copy of the scenario for each system: nothing one system caches on a message object reaches another.
        const s = buildScenario(window, shape, calls);
        const result = system.startsWith('langchain')
          ? await runLangChain(s, system === 'langchain, real count')
          : await runGuard(s, system === 'guard, scripted summary', target);
        rows.push({ window, shape, system, result });
        if (!json)
          process.stderr.write(
            `  ${s.name} ${system}: ${result.stats.compactions} compactions, ${(result.ms / 1000).toFixed(1)} s\n`,
          );
      }
    }
  }
  const seconds = (performance.now() - started) / 1000;

  if (json) {
    console.log(
      JSON.stringify(
        {
          node: process.version,
          quick,
          calls,
          target,
          windows,
          seconds,
          rows: rows.map((r) => ({ window: r.window, shape: r.shape, system: r.system, ...r.result })),
        },
        null,
        2,
      ),
    );
    return;
  }

  console.log(
    `node ${process.version}; ${calls} calls a scenario${target !== undefined ? `; guard target ${target}` : ''}; cost = cached × 0.1 + uncached × 1.25 + summarizer input × 1.0 ` +
      `(input-token units); ${seconds.toFixed(1)} s`,
  );
  console.log(table(rows));

  console.log("\nPooled over windows and shapes (cost parts: shares of the system's billed units):");
  const guardCost = pooled(rows.filter((r) => r.system === 'guard, mechanical')).cost;
  for (const system of SYSTEMS) {
    const p = pooled(rows.filter((r) => r.system === system));
    const part = (x: number) => pct(x / p.cost);
    console.log(
      `- ${system}: cache share ${pct(p.cacheShare)}, billed ${units(p.cost)} (×${(p.cost / guardCost).toFixed(2)}), ` +
        `${fixed((p.compactions * 100) / p.calls)} compactions / 100 calls, mean prompt ${pct(p.meanPrompt)} of the window; ` +
        `cost = reads ${part(p.reads)} + writes of growth ${part(p.growthWrites)} + writes at compactions ` +
        `${part(p.compactionWrites)} + summarizer ${part(p.summarizer)}; cache broken without a compaction: ` +
        `${p.breaks} calls (${units(p.breakTokens)} tokens re-written)`,
    );
  }
  for (const system of SYSTEMS.filter((x) => x.startsWith('langchain'))) {
    const lc = rows.filter((r) => r.system === system);
    const within = lc.filter((r) => r.result.stats.overflows === 0);
    const over = lc.filter((r) => r.result.stats.overflows > 0);
    console.log(
      `${system} stays within the window in ${within.length} of ${lc.length} scenarios` +
        (within.length > 0 && over.length > 0
          ? ` (${within.map((r) => `${windowLabel(r.window)} ${r.shape}`).join(', ')})`
          : '') +
        (over.length > 0
          ? `; over it in ${over
              .map(
                (r) =>
                  `${windowLabel(r.window)} ${r.shape} (${r.result.stats.overflows} calls, max ${pct(r.result.stats.maxPrompt)})`,
              )
              .join(', ')}`
          : ''),
    );
  }
  const guardOver = rows.filter((r) => r.system.startsWith('guard') && r.result.stats.overflows > 0);
  console.log(
    guardOver.length === 0
      ? 'the guard stays within the window in every scenario'
      : `GUARD OVER THE WINDOW: ${guardOver.map((r) => `${windowLabel(r.window)} ${r.shape} ${r.system}`).join(', ')}`,
  );
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) await main();
