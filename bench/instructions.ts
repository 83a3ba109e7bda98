// The guard's own work per call counted by valgrind, not timed: instructions, cache misses and
// mispredicted branches, attributed to the guard's functions through the map V8 writes of its
// compiled code (--perf-basic-prof). No other process on the machine changes these counts, so two
// checkouts compare where timings on a shared machine cannot (two runs of the same code differ by
// more than a change that costs a microsecond a call).
//
//   node bench/instructions.ts                          (this checkout, a process's first 2,000 calls)
//   node bench/instructions.ts /tmp/before              (this checkout and another, with the functions that differ most)
//   node bench/instructions.ts /tmp/before --from 2000 --calls 4000
//        (calls 2,000 to 6,000 of a process: by then the guard's functions run at V8's top tier)
//   node bench/instructions.ts /tmp/before --main-thread   (V8's compilers on their own threads,
//        as in any process: only what the main thread runs is counted; the counts then vary from
//        run to run with when the compilers finish, and a window that does not start at call 0
//        can credit code that moved between the two runs to the wrong function)
//   node bench/instructions.ts /tmp/before --rebuilt --steps 1275 --top 30
//        (a host that rebuilds its messages every call, sessions of 1,275 steps: 2,552 messages at
//         the end; and the 30 functions of this checkout that cost the most)
//
// Needs valgrind (Debian's package) and takes a few minutes: each checkout runs in its own process
// under callgrind with V8 on one thread (--single-threaded), so that its compilers and collector
// are counted too, in the process totals. The workload is bench/overhead-vs.ts's: sessions of 260
// (--steps) tool steps of 3,000 characters on new guards, beforeModel + afterModel per step. Each checkout runs
// twice, to call --from and to call --from + --calls, and the difference is what those calls cost:
// loading the modules is not in it. A process's first calls run in V8's lower tiers (what a
// short-lived process pays); the later ones show what a long-running agent pays.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { numberFlag, stringFlag } from './args.ts';
import { fileText, firstMessages, lcg, readFileTools, rebuild, toolStep } from './tool-steps.ts';

const argv = process.argv.slice(2);
const FROM = numberFlag(argv, '--from', 0);
const CALLS = numberFlag(argv, '--calls', 2_000);
/** How many of this checkout's costliest functions to list (--top N; none by default). */
const TOP = numberFlag(argv, '--top', 0);
/** Tool steps of a session before a new guard starts (the history grows to twice as many messages). */
const STEPS = numberFlag(argv, '--steps', 260);
/** A host that rebuilds every message object on every call (as the AI SDK does), not one that resends them. */
const REBUILT = argv.includes('--rebuilt');
/**
 * V8 with its threads (--main-thread): its compilers and part of its collector then run beside the
 * guard, as in any Node.js process, and only the main thread's costs are counted (what a call
 * waits for), not the work the compilers do on the side.
 */
const MAIN_THREAD = argv.includes('--main-thread');

/** The workload, in the process valgrind runs: `calls` calls on the guard of `root`. */
async function child(root: string, calls: number): Promise<void> {
  const lib = (await import(pathToFileURL(path.join(root, 'src/index.ts')).href)) as typeof import('../src/index.ts');
  const random = lcg(42);
  const texts = Array.from({ length: STEPS }, (_, i) => fileText(i, random));
  for (let call = 0; call < calls; ) {
    const guard = lib.createContextGuard({ contextWindow: 10_000_000, exactCounting: 'off' });
    let history = firstMessages();
    for (let i = 0; i < STEPS && call < calls; i++, call++) {
      history = [...history, ...toolStep(i, texts[i] as string)];
      await guard.beforeModel({ sessionId: 's', messages: REBUILT ? rebuild(history) : history, tools: readFileTools });
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: 2_000 + i * 1_000 } });
    }
  }
}

/** The events read from callgrind's output, in this order. */
const EVENTS = ['Ir', 'I1mr', 'D1mr', 'D1mw', 'Bcm', 'Bim'] as const;
type Counts = number[];

/** One compiled-code range of V8's map: start, end (exclusive) and name. */
interface CodeRange {
  start: number;
  end: number;
  name: string;
}

function readCodeMap(file: string): CodeRange[] {
  const ranges: CodeRange[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [start, size, ...name] = line.split(' ');
    if (!start || !size || name.length === 0) continue;
    const from = Number.parseInt(start, 16);
    ranges.push({ start: from, end: from + Number.parseInt(size, 16), name: name.join(' ') });
  }
  return ranges.sort((a, b) => a.start - b.start);
}

function rangeAt(ranges: CodeRange[], address: number): CodeRange | undefined {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid] as CodeRange;
    if (address < r.start) hi = mid - 1;
    else if (address >= r.end) lo = mid + 1;
    else return r;
  }
  return undefined;
}

/**
 * Where an instruction's cost goes: a function of the checkout's src/ by name and file, or a
 * category (the rest of the compiled JavaScript, V8's builtins, native code).
 */
function bucketOf(range: CodeRange | undefined, srcPrefix: string): string {
  if (!range) return '(native: V8, Node.js, libraries)';
  const js = /^JS:[*+^~]?'?(\S*) (\S+?)(?::\d+:\d+)?$/.exec(range.name);
  if (!js) return range.name.startsWith('Builtin:') ? '(builtins)' : '(other compiled code)';
  const [, fn, url] = js as unknown as [string, string, string];
  return url.startsWith(srcPrefix) ? `${fn || '(anonymous)'} ${url.slice(srcPrefix.length)}` : '(other JavaScript)';
}

/** The cost lines of callgrind's output (compressed positions, instruction addresses first), summed per bucket. */
function readCosts(outFile: string, ranges: CodeRange[], srcPrefix: string): Map<string, Counts> {
  const lines = readFileSync(outFile, 'utf8').split('\n');
  let columns: string[] = [];
  let positions = 1;
  let address = 0;
  let callCost = false;
  const totals = new Map<string, Counts>();
  for (const line of lines) {
    if (line.startsWith('events:')) columns = line.split(/\s+/).slice(1);
    else if (line.startsWith('positions:')) positions = line.split(/\s+/).length - 1;
    else if (line.startsWith('calls=')) callCost = true;
    else if (/^(0x[0-9a-f]+|[+-]\d+|\*)\s/.test(line)) {
      const fields = line.split(/\s+/);
      address = nextAddress(fields[0] as string, address);
      // The line after calls= is the callee's inclusive cost: counted where it is spent, not here.
      if (callCost) {
        callCost = false;
        continue;
      }
      add(totals, bucketOf(rangeAt(ranges, address), srcPrefix), columns, fields.slice(positions));
    }
  }
  return totals;
}

function nextAddress(position: string, previous: number): number {
  if (position === '*') return previous;
  if (position.startsWith('0x')) return Number.parseInt(position, 16);
  return previous + Number.parseInt(position, 10);
}

function add(totals: Map<string, Counts>, bucket: string, columns: string[], values: string[]): void {
  let counts = totals.get(bucket);
  if (!counts) totals.set(bucket, (counts = EVENTS.map(() => 0)));
  for (let i = 0; i < EVENTS.length; i++) {
    const at = columns.indexOf(EVENTS[i] as string);
    if (at >= 0 && at < values.length) counts[i] = (counts[i] as number) + Number(values[at]);
  }
}

/** What calls FROM to FROM + CALLS of a process cost on `root`'s guard, per bucket. */
function measure(root: string, work: string): Map<string, Counts> {
  const until = callgrind(root, work, FROM + CALLS);
  const before = callgrind(root, work, FROM);
  for (const [bucket, counts] of before) {
    const total = until.get(bucket) ?? EVENTS.map(() => 0);
    until.set(
      bucket,
      total.map((n, i) => n - (counts[i] as number)),
    );
  }
  return until;
}

/** One checkout under callgrind, `calls` calls from the process's start: its costs per bucket. */
function callgrind(root: string, work: string, calls: number): Map<string, Counts> {
  const out = path.join(work, `callgrind-${path.basename(root)}-${Date.now()}.out`);
  const run = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      '--dump-instr=yes',
      '--cache-sim=yes',
      '--branch-sim=yes',
      `--callgrind-out-file=${out}`,
      ...(MAIN_THREAD ? ['--separate-threads=yes'] : []),
      process.execPath,
      ...(MAIN_THREAD ? [] : ['--single-threaded']),
      '--perf-basic-prof',
      fileURLToPath(import.meta.url),
      '--child',
      root,
      '--calls',
      String(calls),
      '--steps',
      String(STEPS),
      ...(REBUILT ? ['--rebuilt'] : []),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (run.status !== 0) throw new Error(`valgrind failed (${run.status}): ${run.stderr.slice(-2_000)}`);
  // With its threads apart, callgrind writes one file per thread: the main thread's is the first.
  const file = MAIN_THREAD ? `${out}-01` : out;
  const pid = /^pid: (\d+)$/m.exec(readFileSync(file, 'utf8').slice(0, 2_000))?.[1];
  const codeMap = `/tmp/perf-${pid}.map`;
  const costs = readCosts(file, readCodeMap(codeMap), `${pathToFileURL(root).href}/src/`);
  rmSync(codeMap, { force: true });
  return costs;
}

const sum = (costs: Map<string, Counts>, keep: (bucket: string) => boolean): Counts =>
  EVENTS.map((_, i) => [...costs].reduce((total, [bucket, c]) => total + (keep(bucket) ? (c[i] as number) : 0), 0));
const isGuard = (bucket: string): boolean => !bucket.startsWith('(');
const perCall = (n: number): string => Math.round(n / CALLS).toLocaleString('en-US');

/** The parts of the process a row shows: the guard's own code, then what runs around it. */
const PARTS: Array<[string, (bucket: string) => boolean]> = [
  ["the guard's code (src/)", isGuard],
  ['other JavaScript (the workload, Node.js, libraries)', (b) => b === '(other JavaScript)'],
  ["V8's builtins (property access, allocation, calls)", (b) => b === '(builtins)' || b === '(other compiled code)'],
  ['native (collector, compilers, runtime, libraries)', (b) => b === '(native: V8, Node.js, libraries)'],
  ['whole process', () => true],
];

function report(roots: string[], results: Map<string, Counts>[]): void {
  console.log(
    `node ${process.version}, callgrind, calls ${FROM.toLocaleString('en-US')} to ${(FROM + CALLS).toLocaleString('en-US')} of a process (sessions of ${STEPS} tool steps${REBUILT ? ', messages rebuilt every call' : ''}${MAIN_THREAD ? ', main thread only' : ''}), per call:`,
  );
  console.log('| part | checkout | instructions | I1 misses | D1 misses | mispredicted branches |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const [part, keep] of PARTS)
    roots.forEach((root, k) => {
      const [ir = 0, i1 = 0, d1r = 0, d1w = 0, bc = 0, bi = 0] = sum(results[k] as Map<string, Counts>, keep);
      console.log(
        `| ${part} | ${root} | ${perCall(ir)} | ${perCall(i1)} | ${perCall(d1r + d1w)} | ${perCall(bc + bi)} |`,
      );
    });
  if (results.length === 2 || TOP > 0) reportDifferences(results[0] as Map<string, Counts>, results[1]);
}

/** The guard's functions (by name, wherever their file moved) whose instructions differ most, and the costliest (--top). */
function reportDifferences(here: Map<string, Counts>, other: Map<string, Counts> = new Map()): void {
  const byName = (costs: Map<string, Counts>): Map<string, Counts> => {
    const m = new Map<string, Counts>();
    for (const [bucket, c] of costs) {
      if (!isGuard(bucket)) continue;
      const name = bucket.split(' ')[0] as string;
      const sums = m.get(name) ?? EVENTS.map(() => 0);
      m.set(
        name,
        sums.map((n, i) => n + (c[i] as number)),
      );
    }
    return m;
  };
  const a = byName(here);
  const b = byName(other);
  const none = EVENTS.map(() => 0);
  const names = [...new Set([...a.keys(), ...b.keys()])];
  const rows = names.map((name) => ({ name, a: a.get(name) ?? none, b: b.get(name) ?? none }));
  // Instructions, I1 misses and mispredicted branches of a function, per call.
  const cells = ([ir = 0, i1 = 0, , , bc = 0, bi = 0]: Counts): string =>
    `${perCall(ir).padStart(7)} ${perCall(i1).padStart(5)} ${perCall(bc + bi).padStart(5)}`;
  const show = (title: string, list: typeof rows): void => {
    console.log(`\n${title}: instructions, I1 misses, mispredicted branches (this checkout | the other):`);
    for (const r of list) console.log(`  ${r.name.padEnd(28)} ${cells(r.a)} | ${cells(r.b)}`);
  };
  const instructions = (c: Counts): number => c[0] as number;
  if (other.size > 0)
    show(
      'Per call, the functions whose instructions differ most',
      [...rows]
        .sort(
          (x, y) => Math.abs(instructions(y.a) - instructions(y.b)) - Math.abs(instructions(x.a) - instructions(x.b)),
        )
        .slice(0, 15),
    );
  if (TOP > 0)
    show(
      "Per call, this checkout's costliest functions",
      [...rows].sort((x, y) => instructions(y.a) - instructions(x.a)).slice(0, TOP),
    );
}

const childRoot = stringFlag(argv, '--child');
if (childRoot) await child(childRoot, CALLS);
else {
  const other = argv.find(
    (a, i) => !a.startsWith('--') && !['--calls', '--from', '--top', '--steps'].includes(argv[i - 1] as string),
  );
  const roots = [path.resolve(import.meta.dirname, '..'), ...(other ? [path.resolve(other)] : [])];
  const work = mkdtempSync(path.join(tmpdir(), 'context-guard-instructions-'));
  try {
    report(
      roots,
      roots.map((root) => measure(root, work)),
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
