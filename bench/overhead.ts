// Steady-state cost per model call of beforeModel + afterModel on a growing tool-heavy history,
// next to a full recount of the same history with LangChain's countTokensApproximately.
//
//   node bench/overhead.ts            (about 100k and 1M tokens; add --quick for a smoke run)
//   node bench/overhead.ts --runs 5   (five runs, each in its own process: each row's median, min and max)
//   node bench/overhead.ts --flush-mb 4   (4 MB written before each timed call and each recount,
//                                          untimed: the caches a host's own work leaves behind)
//   node bench/overhead.ts --diagnose     (adds a host that rebuilds its messages as the AI SDK does
//                                          but sends the originals: what the rebuild's emptied caches
//                                          cost without any comparison of rebuilt objects)
//   node --invocation-count-for-turbofan=300 bench/overhead.ts --runs 5   (V8 flags apply to every run:
//                                          here, the guard's once-per-call functions at V8's top tier)
//   node bench/overhead.ts --src /tmp/before   (the guard of another checkout, timed by this bench)
//   node bench/overhead.ts --sizes 1000000,100000 --warmups 5   (rows in that order, after five
//                                          throwaway passes instead of one: where in the process a row is timed)
//   node bench/overhead.ts --yardstick     (a fixed workload of the bench's own timed after each
//                                          recount: a measure of the process's speed the guard does not run)
//   node bench/overhead.ts --json --marks  (a line where each row's growth and timed calls start:
//                                          bench/deopts.ts places V8's deoptimizations with them)
//
// A throwaway session of each host runs first, so that the timed calls run compiled code (an
// agent's process calls the guard thousands of times) and the 100k row is not a measure of the JIT.
//
// Two host behaviours are measured: one that resends the same message objects (LangChain state,
// hand-written loops) and one that rebuilds every message object around the same strings on every
// call (the AI SDK converts its prompt anew each step). Building the arrays is the host's work and
// is not timed; only the guard's calls and the recount are.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { countTokensApproximately } from 'langchain';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { GuardMessage } from '../src/index.ts';
import { numberFlag, stringFlag } from './args.ts';
import { fileText, firstMessages, lcg, readFileTools, rebuild, toolStep } from './tool-steps.ts';

const quick = process.argv.includes('--quick');
const RUNS = numberFlag(process.argv, '--runs', 1);
const asJson = process.argv.includes('--json');
const FLUSH_MB = numberFlag(process.argv, '--flush-mb', 0);
const cold = FLUSH_MB > 0;
const diagnose = process.argv.includes('--diagnose');
/** Written one word per cache line between calls: what sits in the caches after a host's own work. */
const flushBuffer = new Int32Array((FLUSH_MB * (1 << 20)) / 4);
const flushCaches = (): void => {
  for (let i = 0; i < flushBuffer.length; i += 16) flushBuffer[i] = (flushBuffer[i] as number) + 1;
};
/** The checkout whose guard is timed (this one by default). */
const SRC = stringFlag(process.argv, '--src');
const { createContextGuard } = (await import(
  SRC ? pathToFileURL(path.join(path.resolve(SRC), 'src/index.ts')).href : '../src/index.ts'
)) as typeof import('../src/index.ts');
const SIZES_FLAG = stringFlag(process.argv, '--sizes');
const SIZES = SIZES_FLAG?.split(',').map(Number) ?? (quick ? [20_000, 100_000] : [100_000, 1_000_000]);
const WARMUPS = numberFlag(process.argv, '--warmups', 1);
const yardstick = process.argv.includes('--yardstick');
/** Prints where each row's phases start (--marks), on the same stream as V8's traces. */
const mark = process.argv.includes('--marks') ? (what: string) => console.log(`# mark: ${what}`) : () => {};
const TIMED_STEPS = quick ? 20 : 100;
const RECOUNT_EVERY = 4;

const random = lcg(42);
/** Step `i` of the history, its file read new text. */
const step = (i: number): GuardMessage[] => toolStep(i, fileText(i, random));

function toLangChain(messages: GuardMessage[]): BaseMessage[] {
  return messages.map((m) => {
    if (m.role === 'user' || m.role === 'system')
      return new HumanMessage(typeof m.content === 'string' ? m.content : '');
    if (m.role === 'tool') {
      const part = m.content[0]!;
      return new ToolMessage({
        content: part.output.type === 'text' ? part.output.value : '',
        tool_call_id: part.toolCallId,
      });
    }
    const parts = Array.isArray(m.content) ? m.content : [];
    return new AIMessage({
      content: parts.map((p) => (p.type === 'text' ? p.text : '')).join(''),
      tool_calls: parts.flatMap((p) =>
        p.type === 'tool-call'
          ? [{ id: p.toolCallId, name: p.toolName, args: p.input as Record<string, unknown> }]
          : [],
      ),
    });
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const tools = readFileTools;

/**
 * The yardstick (--yardstick): a fixed workload of the bench's own, on values made once at start,
 * timed right after each recount. The guard runs none of it: what it measures is how fast the
 * process runs at that moment, beside which the guard's time compares.
 */
// Made only when asked for: a megabyte of text the other runs do not carry in their heap.
const yardstickTexts = yardstick
  ? Array.from({ length: 300 }, (_, i) => ({
      role: i % 3 === 0 ? 'user' : 'tool',
      content: fileText(10_000 + i, lcg(i + 1)),
    }))
  : [];
// biome-ignore lint/correctness/noUnusedVariables: written, never read, so that the engine cannot drop the work.
let yardstickSink = 0;
function yardstickWork(): void {
  let h = 0;
  for (const m of yardstickTexts) {
    h = (h + m.content.length + m.role.length) | 0;
    for (let i = 0; i < 64; i++) h = (h * 31 + m.content.charCodeAt(i)) | 0;
  }
  yardstickSink ^= h;
}

type Host = 'same objects' | 'rebuilt objects' | 'same objects, exact o200k' | 'same objects, rebuilt aside';
const HOSTS: Host[] = [
  'same objects',
  'rebuilt objects',
  'same objects, exact o200k',
  ...(diagnose ? (['same objects, rebuilt aside'] as const) : []),
];

/** What the host built but did not send ('rebuilt aside'), kept alive until the call is timed. */
let aside: GuardMessage[] = [];

async function measure(targetTokens: number, host: Host): Promise<Row> {
  // A window far above the history so the guard only measures (compaction is not what is timed here).
  let heuristic = 0;
  const guard = createContextGuard({
    contextWindow: 10_000_000,
    exactCounting: host === 'same objects, exact o200k' ? 'o200k_base' : 'off',
    onEvent: (e) => {
      if (e.type === 'estimate') heuristic = e.heuristicTokens;
    },
  });
  let history = firstMessages();
  let i = 0;
  mark(`${targetTokens} ${host}: growth`);
  // Warm-up: grow through the guard, as a real session would, so that the timed calls are centred
  // on the target size.
  let stepTokens = 0;
  while (heuristic + (stepTokens * TIMED_STEPS) / 2 < targetTokens) {
    const before = heuristic;
    history = [...history, ...step(i++)];
    const sent = host === 'rebuilt objects' ? rebuild(history) : history;
    if (host === 'same objects, rebuilt aside') aside = rebuild(history);
    await guard.beforeModel({ sessionId: 's', messages: sent, tools });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(heuristic * 1.3) } });
    stepTokens = heuristic - before;
  }
  const middle = { tokens: heuristic, messages: history.length };
  const guardTimes: number[] = [];
  const recountTimes: number[] = [];
  const yardstickTimes: number[] = [];
  mark(`${targetTokens} ${host}: timed`);
  for (let k = 0; k < TIMED_STEPS; k++) {
    history = [...history, ...step(i++)];
    const sent = host === 'rebuilt objects' ? rebuild(history) : history;
    if (host === 'same objects, rebuilt aside') aside = rebuild(history);
    if (cold) flushCaches();
    const t0 = performance.now();
    await guard.beforeModel({ sessionId: 's', messages: sent, tools });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(heuristic * 1.3) } });
    guardTimes.push(performance.now() - t0);
    // Read after the call (untimed): what was rebuilt aside stays alive through it, as a host's prompt would.
    if (host === 'same objects, rebuilt aside' && aside.length !== history.length) throw new Error('rebuilt aside');
    if (k % RECOUNT_EVERY === 0) {
      const lc = toLangChain(history);
      if (cold) flushCaches();
      const t1 = performance.now();
      await countTokensApproximately(lc);
      recountTimes.push(performance.now() - t1);
      if (yardstick) {
        const t2 = performance.now();
        yardstickWork();
        yardstickTimes.push(performance.now() - t2);
      }
    }
  }
  return {
    host,
    tokens: Math.round(middle.tokens + (stepTokens * TIMED_STEPS) / 2),
    messages: middle.messages + TIMED_STEPS,
    guard: median(guardTimes),
    recount: median(recountTimes),
    ...(yardstick ? { yardstick: median(yardstickTimes) } : {}),
  };
}

interface Row {
  host: Host;
  tokens: number;
  messages: number;
  guard: number;
  recount: number;
  yardstick?: number;
}

/** One run: every size and host, after a warm-up of every host through the same paths (discarded). */
async function run(): Promise<Row[]> {
  for (let pass = 0; pass < WARMUPS; pass++) for (const host of HOSTS) await measure(quick ? 5_000 : 300_000, host);
  const rows: Row[] = [];
  mark('rows');
  for (const size of SIZES) for (const host of HOSTS) rows.push(await measure(size, host));
  aside = [];
  return rows;
}

const µs = (ms: number): string => (ms * 1000).toFixed(0);
const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
/** The median of a row's values over the runs, with the lowest and highest in brackets when there are several. */
const spread = (xs: number[], show: (x: number) => string): string =>
  xs.length === 1 ? show(xs[0] as number) : `${show(median(xs))} (${show(Math.min(...xs))}–${show(Math.max(...xs))})`;

if (asJson) {
  console.log(JSON.stringify(await run()));
} else {
  // Each run in its own process: the spread between runs includes the JIT's and the heap's luck.
  const runs: Row[][] = [];
  if (RUNS === 1) runs.push(await run());
  else {
    const args = [
      fileURLToPath(import.meta.url),
      ...(quick ? ['--quick'] : []),
      ...(cold ? ['--flush-mb', String(FLUSH_MB)] : []),
      ...(diagnose ? ['--diagnose'] : []),
      ...(SRC ? ['--src', SRC] : []),
      ...(SIZES_FLAG ? ['--sizes', SIZES_FLAG] : []),
      ...(WARMUPS !== 1 ? ['--warmups', String(WARMUPS)] : []),
      ...(yardstick ? ['--yardstick'] : []),
      '--json',
    ];
    for (let r = 0; r < RUNS; r++) {
      // With this process's V8 flags (node --some-flag bench/overhead.ts --runs 5).
      const child = spawnSync(process.execPath, [...process.execArgv, ...args], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      });
      if (child.status !== 0) throw new Error(`run ${r + 1} failed: ${child.stderr}`);
      runs.push(JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as Row[]);
    }
  }
  const lines = [
    `| history (chars/4 tokens, mid-run) | messages (mid-run) | host | guard µs/call | full recount µs/call | guard / recount |${yardstick ? ' yardstick µs | guard / yardstick |' : ''}`,
    `|---:|---:|---|---:|---:|---:|${yardstick ? '---:|---:|' : ''}`,
  ];
  (runs[0] as Row[]).forEach((first, i) => {
    const of = (f: (row: Row) => number, show: (x: number) => string) =>
      spread(
        runs.map((rows) => f(rows[i] as Row)),
        show,
      );
    const cells = [
      first.tokens.toLocaleString('en-US'),
      first.messages.toLocaleString('en-US'),
      first.host,
      of((r) => r.guard, µs),
      of((r) => r.recount, µs),
      of((r) => r.guard / r.recount, pct),
      ...(yardstick ? [of((r) => r.yardstick as number, µs), of((r) => r.guard / (r.yardstick as number), pct)] : []),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  });
  console.log(
    `node ${process.version}${process.execArgv.length > 0 ? ` ${process.execArgv.join(' ')}` : ''}${SRC ? `, the guard of ${path.resolve(SRC)}` : ''}${cold ? `, ${FLUSH_MB} MB written before each timed call` : ''}, ${RUNS === 1 ? 'one run' : `${RUNS} runs, each in its own process (median, lowest–highest)`}; ` +
      `each row of a run: the median of ${TIMED_STEPS} calls (guard) and ${TIMED_STEPS / RECOUNT_EVERY} recounts`,
  );
  console.log(lines.join('\n'));
}
