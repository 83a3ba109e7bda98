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
//
// Needs valgrind (Debian's package) and takes a few minutes: each checkout runs in its own process
// under callgrind with V8 on one thread (--single-threaded), so that its compilers and collector
// are counted too, in the process totals. The workload is bench/overhead-vs.ts's: sessions of 260
// tool steps of 3,000 characters on new guards, beforeModel + afterModel per step. Each checkout runs
// twice, to call --from and to call --from + --calls, and the difference is what those calls cost:
// loading the modules is not in it. A process's first calls run in V8's lower tiers (what a
// short-lived process pays); the later ones show what a long-running agent pays.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { numberFlag, stringFlag } from './args.ts';
import { fileText, firstMessages, lcg, readFileTools, toolStep } from './tool-steps.ts';

const argv = process.argv.slice(2);
const FROM = numberFlag(argv, '--from', 0);
const CALLS = numberFlag(argv, '--calls', 2_000);
const STEPS = 260;

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
      await guard.beforeModel({ sessionId: 's', messages: history, tools: readFileTools });
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
      process.execPath,
      '--single-threaded',
      '--perf-basic-prof',
      fileURLToPath(import.meta.url),
      '--child',
      root,
      '--calls',
      String(calls),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (run.status !== 0) throw new Error(`valgrind failed (${run.status}): ${run.stderr.slice(-2_000)}`);
  const pid = /^pid: (\d+)$/m.exec(readFileSync(out, 'utf8').slice(0, 2_000))?.[1];
  const codeMap = `/tmp/perf-${pid}.map`;
  const costs = readCosts(out, readCodeMap(codeMap), `${pathToFileURL(root).href}/src/`);
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
    `node ${process.version}, callgrind, calls ${FROM.toLocaleString('en-US')} to ${(FROM + CALLS).toLocaleString('en-US')} of a process (sessions of ${STEPS} tool steps), per call:`,
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
  if (results.length === 2) reportDifferences(results as [Map<string, Counts>, Map<string, Counts>]);
}

/** The guard's functions (by name, wherever their file moved) whose instructions differ most. */
function reportDifferences([here, other]: [Map<string, Counts>, Map<string, Counts>]): void {
  const byName = (costs: Map<string, Counts>): Map<string, number> => {
    const m = new Map<string, number>();
    for (const [bucket, c] of costs) {
      if (!isGuard(bucket)) continue;
      const name = bucket.split(' ')[0] as string;
      m.set(name, (m.get(name) ?? 0) + (c[0] as number));
    }
    return m;
  };
  const a = byName(here);
  const b = byName(other);
  const names = [...new Set([...a.keys(), ...b.keys()])];
  const rows = names
    .map((name) => ({ name, a: a.get(name) ?? 0, b: b.get(name) ?? 0 }))
    .sort((x, y) => Math.abs(y.a - y.b) - Math.abs(x.a - x.b))
    .slice(0, 15);
  console.log('\nInstructions per call of the functions that differ most (this checkout, the other):');
  for (const r of rows) console.log(`  ${r.name.padEnd(28)} ${perCall(r.a).padStart(7)} ${perCall(r.b).padStart(7)}`);
}

const childRoot = stringFlag(argv, '--child');
if (childRoot) await child(childRoot, CALLS);
else {
  const other = argv.find((a, i) => !a.startsWith('--') && argv[i - 1] !== '--calls' && argv[i - 1] !== '--from');
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
