// Heap against sessions: one guard (in-memory store and archive) serving many sessions, each
// compacted (its tool outputs archived) and then recalled once (its recall index built), as a
// server holding thousands of users' conversations does. With the default bounds and with small
// ones, the heap after a full GC at 1,000, 2,500, 5,000 and 10,000 sessions, and per 1,000
// sessions: a bound shows as a heap that stops growing.
//
//   node bench/tenancy.ts                    (up to 10,000 sessions, both configurations)
//   node bench/tenancy.ts --sessions 2000    (up to 2,000)
//
// Each session: a system prompt, a request, six tool steps of 3,000 characters (about 18,000
// characters archived) in an 8,000-token window, compacted on its first call (no summarizer: the
// mechanical digest), then one recall query that finds its own fact.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createContextGuard, type ContextGuardOptions, type GuardMessage } from '../src/index.ts';
import { numberFlag } from './args.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const args = process.argv.slice(2);
const MAX = numberFlag(args, '--sessions', 10_000);
const CHECKPOINTS = [1_000, 2_500, 5_000, 10_000].filter((n) => n <= MAX);
if (CHECKPOINTS.at(-1) !== MAX) CHECKPOINTS.push(MAX);

const filler = (label: string, chars: number) =>
  `${label}: ${'the module compiles and the next step applies the same change. '.repeat(Math.ceil(chars / 60))}`.slice(
    0,
    chars,
  );

function conversation(s: number): GuardMessage[] {
  const out: GuardMessage[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: `Migrate ledger module ${s} to the new API.` },
  ];
  for (let i = 0; i < 6; i++) {
    const id = `call_${i}`;
    const output =
      i === 1 ? `${filler('log', 1_500)}\nfact-${s}-quokka\n${filler('more', 1_500)}` : filler(`f${i}`, 3_000);
    out.push(
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { i } }] },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: id, toolName: 'read_file', output: { type: 'text', value: output } },
        ],
      },
    );
  }
  out.push({ role: 'user', content: 'Go on.' });
  return out;
}

const heapMb = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
};

async function run(label: string, options: ContextGuardOptions) {
  const base = heapMb();
  const guard = createContextGuard({ contextWindow: 8_000, ...options });
  const rows: string[] = [];
  let found = 0;
  let s = 0;
  const started = performance.now();
  for (const checkpoint of CHECKPOINTS) {
    for (; s < checkpoint; s++) {
      const sessionId = `user-${s}`;
      await guard.beforeModel({ sessionId, messages: conversation(s) });
      const items = await guard.recall(sessionId, { query: `fact-${s}-quokka` });
      if (items.some((item) => item.text.includes(`fact-${s}-quokka`))) found++;
    }
    const heap = heapMb() - base;
    rows.push(
      `| ${label} | ${checkpoint.toLocaleString('en-US')} | ${heap.toFixed(0)} | ${((heap * 1_000) / checkpoint).toFixed(1)} |`,
    );
  }
  const seconds = (performance.now() - started) / 1_000;
  return { rows, found, seconds };
}

const configurations: Array<[string, ContextGuardOptions]> = [
  ['defaults (maxSessions 10,000; archive.maxTotalChars 100M; archive.indexChars 10M)', {}],
  [
    'small (maxSessions 1,000; archive.maxTotalChars 5M; archive.indexChars 1M)',
    { maxSessions: 1_000, archive: { maxTotalChars: 5_000_000, indexChars: 1_000_000 } },
  ],
];

console.log(`node ${process.version}; heap after a full GC, above the heap before the guard was created`);
console.log('| bounds | sessions | heap MB | MB per 1,000 sessions |');
console.log('|---|---:|---:|---:|');
const notes: string[] = [];
for (const [label, options] of configurations) {
  const { rows, found, seconds } = await run(label, options);
  for (const row of rows) console.log(row);
  notes.push(
    `${label}: ${found.toLocaleString('en-US')} of ${MAX.toLocaleString('en-US')} recalls found their fact, ${seconds.toFixed(0)} s`,
  );
}
console.log('');
for (const note of notes) console.log(note);
