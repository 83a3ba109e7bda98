// Time of recall queries on a large archive: the worst the model can write (32 long words, each
// fuzzily matchable) and ordinary ones, on one session's archive of 2,000,000 characters (the
// default `archive.maxChars`) of tool output with a large vocabulary.
//
//   node bench/recall.ts                 (2M characters, 7 runs of each query)
//   node bench/recall.ts --chars 500000 --runs 3
//
// The index is built on a session's first query after its archive changed; a compaction's new batch
// is added to the index already built, so a whole build happens once per session (or after the
// index was dropped by `archive.indexChars`): its time is the first row. Each query row is the
// median of the runs on the built index, and the slowest run, in CPU time of this process (what the
// query costs the event loop; on a machine shared with other work the wall time adds the waits for
// a processor) and in wall time.
import { RecallIndex } from '../src/archive/recall.ts';
import type { ArchivedItem, SessionArchive } from '../src/archive/types.ts';
import { numberFlag } from './args.ts';
import { prng } from './random.ts';

const args = process.argv.slice(2);
const CHARS = numberFlag(args, '--chars', 2_000_000);
const RUNS = numberFlag(args, '--runs', 7);
const rand = prng(22);
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

function word(min: number, max: number): string {
  let n = min + Math.floor(rand() * (max - min + 1));
  let w = '';
  while (n-- > 0) w += LETTERS[Math.floor(rand() * 26)];
  return w;
}

/** Tool outputs of 8,000 characters: words from a 60,000-word vocabulary, identifiers, paths, numbers. */
function archiveOf(chars: number): SessionArchive {
  const vocabulary = Array.from({ length: 60_000 }, () => word(3, 12));
  const pick = () => vocabulary[Math.floor(rand() * vocabulary.length)] as string;
  const items: ArchivedItem[] = [];
  let total = 0;
  for (let k = 0; total < chars; k++) {
    let text = `read_file returned:\n// src/${pick()}/${pick()}.ts\n`;
    while (text.length < 8_000) {
      const r = rand();
      text += r < 0.05 ? `ORD-${Math.floor(rand() * 1e6)} ` : r < 0.1 ? `${pick()}_${pick()} ` : `${pick()} `;
      if (rand() < 0.08) text += '\n';
    }
    items.push({
      id: `call_${k}`,
      label: 'compaction-batch-s-1',
      role: 'tool',
      text,
      toolCallId: `call_${k}`,
      toolName: 'read_file',
      position: k,
      replaced: 'placeholder',
    });
    total += text.length;
  }
  const batch = { label: 'compaction-batch-s-1', depth: 0, start: '', end: '', header: '[h]', items, chars: total };
  return { version: 1, batches: [batch], receipts: [], evicted: 0 };
}

// As a store gives it back (JSON): flat strings, not the ropes that building them left.
const archive = JSON.parse(JSON.stringify(archiveOf(CHARS))) as SessionArchive;
const sample = archive.batches[0]?.items[3]?.text.split(/\s+/) ?? [];
const queries: Array<[string, string]> = [
  [
    '32 long words (18-24 letters), none in the archive: the worst',
    Array.from({ length: 32 }, () => word(18, 24)).join(' '),
  ],
  ['32 words of 8 letters, none in the archive', Array.from({ length: 32 }, () => word(8, 8)).join(' ')],
  ['32 words of 5 letters, none in the archive', Array.from({ length: 32 }, () => word(5, 5)).join(' ')],
  ['a 1,000-character pasted output', (archive.batches[0]?.items[7]?.text ?? '').slice(0, 1_000)],
  ['three words of one output, one misspelt', `${sample[10]} ${sample[20]} ${(sample[30] ?? 'x').slice(1)}`],
  ['an identifier (ORD-…)', sample.find((w) => w.startsWith('ORD-')) ?? 'ORD-1'],
];

const index = new RecallIndex(10);
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1_000;
};
let t = performance.now();
let c = cpuMs();
index.recall('s', archive, { query: 'warm' }, 8_000);
const build = [cpuMs() - c, performance.now() - t];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ms = (x: number) => (x < 10 ? x.toFixed(1) : x.toFixed(0));

console.log(
  `node ${process.version}, archive of ${CHARS.toLocaleString('en-US')} characters in ${archive.batches[0]?.items.length} items, ${RUNS} runs`,
);
console.log('| query | CPU ms, median | CPU ms, slowest | wall ms, median | items found |');
console.log('|---|---:|---:|---:|---:|');
console.log(
  `| a session's first query (builds its index) | ${ms(build[0] as number)} | | ${ms(build[1] as number)} | |`,
);
for (const [label, query] of queries) {
  const cpu: number[] = [];
  const wall: number[] = [];
  let found = 0;
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    c = cpuMs();
    found = index.recall('s', archive, { query }, 8_000).length;
    cpu.push(cpuMs() - c);
    wall.push(performance.now() - t);
  }
  console.log(`| ${label} | ${ms(median(cpu))} | ${ms(Math.max(...cpu))} | ${ms(median(wall))} | ${found} |`);
}
