// Time of picking the user's own sentences out of a message (src/compaction/prose.ts) on hostile
// input: each shape fed megabytes of its own worst case (long runs of punctuation a pattern might
// rescan, one endless token, endless lines, near-misses of every machine-output pattern).
//
//   node bench/user-words.ts            (1, 2 and 4 MB, 3 runs each: the median)
//   node bench/user-words.ts --quick    (1 MB, 1 run)
//
// Every shape must be linear: from 1 to 2 to 4 MB a time should double, not quadruple.
import { proseSentences } from '../src/compaction/prose.ts';

const MB = 1 << 20;
const quick = process.argv.includes('--quick');
const SIZES = quick ? [MB] : [MB, 2 * MB, 4 * MB];
const RUNS = quick ? 1 : 3;

const fill = (unit: string, size: number): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

const CASES: Array<[string, (size: number) => string]> = [
  ['prose, one long paragraph', (n) => fill('Keep the public API stable and tell me before you delete a file. ', n)],
  [
    'prose, many lines in many languages',
    (n) => fill('Use pnpm, not npm.\nNe touche jamais à la base.\n请不要修改数据库。\n', n),
  ],
  ['a pasted log', (n) => fill('2026-11-24 10:00:01 INFO step ok\n    at run (src/a.ts:1:2)\n{"a":1}\n', n)],
  ['one token of dots', (n) => `${fill('.', n)}x`],
  ['one token of closing punctuation', (n) => `a${fill(')]}"\'»', n)}b`],
  ['one token of opening punctuation', (n) => `${fill('([{"«', n)}`],
  ['one endless word', (n) => fill('a', n)],
  ['one endless snake_case', (n) => fill('a_', n)],
  ['one endless camelCase', (n) => fill('aB', n)],
  ['"at " and no frame end', (n) => `at ${fill('x:', n)}`],
  ['an endless SQL start', (n) => `SELECT ${fill('a ', n)}`],
  ['an endless key: value', (n) => `key: ${fill('v', n)}`],
  ['spaces only', (n) => fill(' ', n)],
  ['line breaks only', (n) => fill('\n', n)],
  ['sentence ends only', (n) => fill('. ', n)],
  ['CJK full stops only', (n) => fill('。', n)],
  ['backticks', (n) => fill('`a` ', n)],
  ['fences', (n) => fill('```\n', n)],
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

console.log(`| shape | ${SIZES.map((s) => `${s / MB} MB (ms)`).join(' | ')} |`);
console.log(`|---|${SIZES.map(() => '---:').join('|')}|`);
for (const [label, make] of CASES) {
  const times = SIZES.map((size) => {
    const text = make(size);
    const runs: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const start = performance.now();
      proseSentences(text);
      runs.push(performance.now() - start);
    }
    return median(runs);
  });
  console.log(`| ${label} | ${times.map((t) => t.toFixed(0)).join(' | ')} |`);
}
