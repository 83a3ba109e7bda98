// The guard's cost per call against another checkout's, both in one process, taking turns: the
// way to say whether a change made the common call slower. Two processes timed one after the other
// (bench/overhead.ts run twice) differ by more than such a change on a shared machine; here both
// guards meet the same machine, turn by turn, and each turn's ratio is read.
//
//   git worktree add --detach /tmp/before <commit>      (the checkout to compare with)
//   ln -s "$PWD/node_modules" /tmp/before/node_modules
//   node bench/overhead-vs.ts /tmp/before                (this checkout / that one)
//   node bench/overhead-vs.ts . --rounds 300             (against itself: how much a ratio wanders)
//   node bench/overhead-vs.ts /tmp/before --rebuilt      (a host that rebuilds its messages every call, as the AI SDK does)
//   node bench/overhead-vs.ts /tmp/before --alone other --rounds 14
//        (one checkout's guard alone in the process, no warm-up, no pairing: what a process running
//        one version sees; under `valgrind --tool=cachegrind node --single-threaded ...`, the
//        difference between --rounds 14 and --rounds 4, divided by 2,600 calls, is the instructions
//        a call executes, which no other process on the machine changes)
//   node --max-semi-space-size=512 bench/overhead-vs.ts /tmp/before --alloc
//        (bytes allocated per call instead of time: the heap's growth across each call, with a young
//        generation large enough that no collection runs inside one; a call a collection ran in is skipped)
//
// Then the cost of making a guard (createContextGuard with a window), 1,000 of each, taking turns
// in blocks of 100: a server that makes a guard per request pays it on every request.
//
// A round runs one session on each guard (the order alternates): 260 tool steps of 3,000
// characters each, beforeModel + afterModel per step, the last 130 timed (about 100k to 200k
// tokens of history). The host's work (building the arrays) is not timed. Each round is made of
// new message objects, so that no guard finds the messages of an earlier round in its caches.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { fileText, firstMessages, lcg, readFileTools, rebuild, toolStep } from './tool-steps.ts';

const argv = process.argv.slice(2);
const other = argv.find((a) => !a.startsWith('--'));
if (!other) {
  console.error('usage: node bench/overhead-vs.ts <other checkout> [--rounds N] [--rebuilt]');
  process.exit(2);
}
const option = (name: string, fallback: number): number => {
  const at = argv.indexOf(name);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};
const ROUNDS = option('--rounds', 300);
const WARM_ROUNDS = 10;
const STEPS = 260;
const TIMED_FROM = STEPS / 2;
const rebuiltHost = argv.includes('--rebuilt');
const allocation = argv.includes('--alloc');
const aloneAt = argv.indexOf('--alone');
const alone = aloneAt >= 0 ? (argv[aloneAt + 1] === 'other' ? 1 : 0) : undefined;

type Lib = typeof import('../src/index.ts');
const here = path.resolve(import.meta.dirname, '..');
const load = async (root: string): Promise<Lib> =>
  (await import(pathToFileURL(path.join(path.resolve(root), 'src/index.ts')).href)) as Lib;
const guards: [Lib, Lib] =
  alone === undefined
    ? [await load(here), await load(other)]
    : ((lib) => [lib, lib] as [Lib, Lib])(await load(alone === 0 ? here : other));

const random = lcg(42);
const texts = Array.from({ length: STEPS }, (_, i) => fileText(i, random));
const tools = readFileTools;

/** One session on a new guard of `lib`: the mean µs (or with --alloc, bytes allocated) per call over the timed steps. */
async function session(lib: Lib): Promise<number> {
  let heuristic = 0;
  const guard = lib.createContextGuard({
    contextWindow: 10_000_000,
    exactCounting: 'off',
    onEvent: (e) => {
      if (e.type === 'estimate') heuristic = e.heuristicTokens;
    },
  });
  let history = firstMessages();
  let total = 0;
  let counted = 0;
  for (let i = 0; i < STEPS; i++) {
    history = [...history, ...toolStep(i, texts[i] as string)];
    const sent = rebuiltHost ? rebuild(history) : history;
    const h0 = allocation ? process.memoryUsage().heapUsed : 0;
    const t0 = performance.now();
    await guard.beforeModel({ sessionId: 's', messages: sent, tools });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.round(heuristic * 1.3) } });
    const spent = allocation ? process.memoryUsage().heapUsed - h0 : (performance.now() - t0) * 1000;
    if (i >= TIMED_FROM && spent >= 0) {
      total += spent;
      counted++;
    }
  }
  return total / counted;
}

const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b);
const quantile = (xs: number[], q: number): number => sorted(xs)[Math.floor((xs.length - 1) * q)] as number;

if (alone !== undefined) {
  const times: number[] = [];
  for (let r = 0; r < ROUNDS; r++) times.push(await session(guards[0]));
  console.log(
    `${alone === 0 ? here : path.resolve(other)} alone, ${ROUNDS} rounds: ${quantile(times, 0.5).toFixed(2)} ${allocation ? 'bytes' : 'µs'} per call (median of rounds)`,
  );
  process.exit(0);
}
for (let r = 0; r < WARM_ROUNDS; r++) for (const lib of guards) await session(lib);
const times: [number[], number[]] = [[], []];
const ratios: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const first = r % 2;
  const t: number[] = [];
  t[first] = await session(guards[first] as Lib);
  t[1 - first] = await session(guards[1 - first] as Lib);
  times[0].push(t[0] as number);
  times[1].push(t[1] as number);
  ratios.push((t[0] as number) / (t[1] as number));
}

const µs = (x: number): string => x.toFixed(allocation ? 0 : 2);
console.log(
  `node ${process.version}, ${ROUNDS} rounds (${rebuiltHost ? 'rebuilt' : 'same'} objects), ${allocation ? 'bytes allocated' : 'µs'} per call, median of rounds:`,
);
console.log(`  this checkout  ${µs(quantile(times[0], 0.5))}   (${here})`);
console.log(`  other          ${µs(quantile(times[1], 0.5))}   (${path.resolve(other)})`);
console.log(
  `  this / other   ${quantile(ratios, 0.5).toFixed(3)}  (quartiles ${quantile(ratios, 0.25).toFixed(3)}–${quantile(ratios, 0.75).toFixed(3)})`,
);

/** µs per createContextGuard of `lib`, over `n` guards. */
function creation(lib: Lib, n: number): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) lib.createContextGuard({ contextWindow: 128_000 });
  return ((performance.now() - t0) * 1000) / n;
}
const made: [number[], number[]] = [[], []];
for (let b = 0; b < 10; b++) for (const k of [0, 1] as const) made[k].push(creation(guards[k], 100));
console.log(
  `  createContextGuard, µs (median of 10 blocks of 100): this ${quantile(made[0], 0.5).toFixed(0)}, other ${quantile(made[1], 0.5).toFixed(0)}`,
);
