// Where V8 throws away the guard's optimized code while bench/overhead.ts runs. A function that
// deoptimizes goes back to V8's lower tiers and is compiled again only hundreds or thousands of
// calls later: one deoptimization in the per-call path (a loop that pushes an object onto an array
// that was made for small integers, a field that held a small integer and now holds a fraction) can
// cost more than any change of the code around it. Timings cannot show it apart from machine noise;
// this lists each one, with the line of the guard's source it happened at and why.
//
//   node bench/deopts.ts                   (this checkout's guard, timed by bench/overhead.ts once)
//   node bench/deopts.ts /tmp/before       (and another checkout's guard, through the same bench)
//   node bench/deopts.ts --quick           (bench/overhead.ts --quick: a smoke run)
//
// Each checkout runs in its own process under --trace-deopt-verbose; only deoptimizations located
// in that checkout's src/ are listed (the bench's own code, Node.js and libraries are left out),
// each with the phase of the bench it happened in (--marks): the throwaway warm-up pass, or a row's
// growth or timed calls. One in the timed calls of a row, or in the growth just before them, is
// paid in that row's figures.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const others = argv.filter((a) => !a.startsWith('--')).map((a) => path.resolve(a));

/** One deoptimization: the function, V8's reason, and where in the guard's source. */
interface Deopt {
  fn: string;
  reason: string;
  at: string;
  /** The bench's phase: 'warm-up', or a row's growth or timed calls. */
  phase: string;
}

function deoptsOf(root: string): Deopt[] {
  const child = spawnSync(
    process.execPath,
    [
      '--trace-deopt-verbose',
      path.join(here, 'bench/overhead.ts'),
      '--json',
      '--marks',
      '--src',
      root,
      ...(quick ? ['--quick'] : []),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 30 },
  );
  if (child.status !== 0) throw new Error(`bench/overhead.ts failed for ${root}: ${child.stderr}`);
  const src = `file://${path.join(root, 'src')}/`;
  const found: Deopt[] = [];
  let pending: { fn: string; reason: string } | undefined;
  let rows = false;
  let phase = 'start';
  for (const line of child.stdout.split('\n')) {
    const mark = /^# mark: (.*)$/.exec(line);
    if (mark) {
      if (mark[1] === 'rows') rows = true;
      phase = rows ? (mark[1] as string) : 'warm-up';
      continue;
    }
    const begin = /\(kind: [^,]+, reason: ([^)]*)\): begin\. deoptimizing .*?<JSFunction ([^ >]+)/.exec(line);
    if (begin) {
      pending = { reason: begin[1] as string, fn: begin[2] as string };
      continue;
    }
    const at = /;;; deoptimize at <([^>]+)>/.exec(line);
    if (at && pending) {
      const place = at[1] as string;
      if (place.startsWith(src)) found.push({ ...pending, at: place.slice(src.length), phase });
      pending = undefined;
    }
  }
  return found;
}

for (const root of [here, ...others]) {
  const deopts = deoptsOf(root);
  const counted = new Map<string, number>();
  for (const d of deopts) {
    const key = `${d.fn} (${d.reason}) at src/${d.at}, ${d.phase === 'start' || d.phase === 'warm-up' ? d.phase : `row ${d.phase}`}`;
    counted.set(key, (counted.get(key) ?? 0) + 1);
  }
  console.log(
    `${root}: ${deopts.length} deoptimizations in src/ during one bench/overhead.ts${quick ? ' --quick' : ''} run`,
  );
  for (const [key, n] of [...counted].sort((a, b) => b[1] - a[1])) console.log(`  ${n} × ${key}`);
}
