// Time of recall queries on a large archive: the worst the model can write (32 long words, each
// fuzzily matchable) and ordinary ones, on one session's archive of 2,000,000 characters (the
// default `archive.maxChars`) of tool output with a large vocabulary.
//
//   node bench/recall.ts                 (2M characters, 7 runs of each query)
//   node bench/recall.ts --chars 500000 --runs 3
//
// A session's index is built in slices: its first query (or the first after `archive.indexChars`
// dropped it) indexes the newest items up to 10,000 characters, scans the others for the query's
// words, and leaves them to background slices. The first table times each query as a session's
// first (a fresh index per run) and says whether it found the same items as the whole index; the
// second times them on the whole index. Each row: the median of the runs and the slowest, in CPU
// time of this process (what the query costs the event loop; on a machine shared with other work
// the wall time adds the waits for a processor) and in wall time.
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

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1_000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ms = (x: number) => (x < 10 ? x.toFixed(1) : x.toFixed(0));
const ids = (found: Array<{ id: string }>) => found.map((r) => r.id);

/** Waits for the background slices of `index`'s session to index the rest: total and slowest turn, in CPU ms. */
async function settle(index: RecallIndex): Promise<{ total: number; slowest: number; turns: number }> {
  let total = 0;
  let slowest = 0;
  let turns = 0;
  while (index.pendingChars('s') > 0) {
    const c = cpuMs();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const spent = cpuMs() - c;
    total += spent;
    slowest = Math.max(slowest, spent);
    turns++;
  }
  return { total, slowest, turns };
}

console.log(
  `node ${process.version}, archive of ${CHARS.toLocaleString('en-US')} characters in ${archive.batches[0]?.items.length} items, ${RUNS} runs`,
);

// The full index's answers, to compare the first queries' with.
const full = new RecallIndex(10);
full.recall('s', archive, { query: 'warm' }, 8_000);
const background = await settle(full);
const answers = new Map(queries.map(([, query]) => [query, ids(full.recall('s', archive, { query }, 8_000))]));
/** How many of the whole index's answers `found` has, and in the same order or not. */
const agreement = (found: string[], whole: string[]): string => {
  if (whole.length === 0) return found.length === 0 ? 'the same (none)' : `none; ${found.length} others`;
  const shared = found.filter((id) => whole.includes(id)).length;
  const same = found.join() === whole.join();
  return same ? `the same ${whole.length}` : `${shared} of ${whole.length}`;
};

console.log('');
console.log(
  "A session's first query (a fresh index each run): it indexes the newest items up to 10,000 characters, scans the others for the query's words (exactly: no near spellings), and leaves the rest to background slices",
);
console.log('');
console.log(
  '| first query | CPU ms, median | CPU ms, slowest | wall ms, median | items found | found by the whole index too |',
);
console.log('|---|---:|---:|---:|---:|---|');
for (const [label, query] of queries) {
  const cpu: number[] = [];
  const wall: number[] = [];
  let found: Array<{ id: string }> = [];
  for (let i = 0; i < RUNS; i++) {
    const index = new RecallIndex(10);
    const t = performance.now();
    const c = cpuMs();
    found = index.recall('s', archive, { query }, 8_000);
    cpu.push(cpuMs() - c);
    wall.push(performance.now() - t);
  }
  const same = agreement(ids(found), answers.get(query) ?? []);
  console.log(
    `| ${label} | ${ms(median(cpu))} | ${ms(Math.max(...cpu))} | ${ms(median(wall))} | ${found.length} | ${same} |`,
  );
}
console.log('');
console.log(
  `The rest indexed in the background: ${ms(background.total)} ms of CPU in ${background.turns} turns of the event loop, the slowest ${ms(background.slowest)} ms`,
);
console.log('');
console.log('Queries on the whole index (after the background slices)');
console.log('');
console.log('| query | CPU ms, median | CPU ms, slowest | wall ms, median | items found |');
console.log('|---|---:|---:|---:|---:|');
for (const [label, query] of queries) {
  const cpu: number[] = [];
  const wall: number[] = [];
  let found = 0;
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const c = cpuMs();
    found = full.recall('s', archive, { query }, 8_000).length;
    cpu.push(cpuMs() - c);
    wall.push(performance.now() - t);
  }
  console.log(`| ${label} | ${ms(median(cpu))} | ${ms(Math.max(...cpu))} | ${ms(median(wall))} | ${found} |`);
}
