// Does exact BPE counting (gpt-tokenizer, o200k_base / cl100k_base) of what was added since the
// last real count beat the calibrated chars/4 heuristic? Replays the transcripts with the same
// anchored scheme the guard uses (last real count + marginal correction × size of the addition)
// twice, once measuring the addition in characters / 4 and once in BPE tokens, and compares the
// errors and the cost of measuring.
//
//   node bench/exact-counting.ts [transcripts-dir]
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import type { GuardMessage } from '../src/index.ts';
import { summarize } from './accuracy.ts';
import { loadTranscripts } from './transcripts.ts';

/** The text a message contributes, the same fields the heuristic counts. */
function text(m: GuardMessage): string {
  if (typeof m.content === 'string') return m.content;
  return m.content
    .map((p) => {
      switch (p.type) {
        case 'text':
        case 'reasoning':
          return p.text;
        case 'tool-call':
          return p.toolName + JSON.stringify(p.input);
        case 'tool-result':
          return (
            p.toolName +
            (p.output.type === 'text' || p.output.type === 'error-text'
              ? p.output.value
              : JSON.stringify('value' in p.output ? p.output.value : ''))
          );
        default:
          return '';
      }
    })
    .join('\n');
}

type Unit = 'chars/4' | 'o200k' | 'cl100k';
const measureUnit: Record<Unit, (s: string) => number> = {
  'chars/4': (s) => s.length / 4,
  o200k: (s) => countO200k(s),
  cl100k: (s) => countCl100k(s),
};

const transcripts = loadTranscripts(process.argv[2]);
if (!transcripts) {
  console.log('bench/exact-counting: no transcripts folder; nothing to measure.');
  process.exit(0);
}

const lines = [
  '| addition measured in | scored calls | median \\|error\\| | p95 \\|error\\| | worst under | worst over | measuring time |',
  '|---|---:|---:|---:|---:|---:|---:|',
];
for (const unit of ['chars/4', 'o200k', 'cl100k'] as Unit[]) {
  const errors: number[] = [];
  let measuring = 0;
  for (const t of transcripts) {
    let previous: { real: number; count: number; messages: number } | undefined;
    let growth = { real: 0, units: 0 };
    const cache = new Map<GuardMessage, number>();
    for (const call of t.calls) {
      const t0 = performance.now();
      let count = 0;
      for (const m of call.messages) {
        let c = cache.get(m);
        if (c === undefined) {
          c = measureUnit[unit](text(m));
          cache.set(m, c);
        }
        count += c;
      }
      measuring += performance.now() - t0;
      if (previous && call.messages.length >= previous.messages) {
        const rate = growth.units > 0 ? growth.real / growth.units : unit === 'chars/4' ? 1.5 : 1.2;
        const estimate = previous.real + (count - previous.count) * Math.max(1, rate);
        if (!call.skip) errors.push((estimate - call.inputTokens) / call.inputTokens);
        const addedReal = call.inputTokens - previous.real;
        const addedUnits = count - previous.count;
        if (addedReal > 0 && addedUnits > 0)
          growth = { real: growth.real * 0.7 + addedReal, units: growth.units * 0.7 + addedUnits };
      } else {
        growth = { real: 0, units: 0 };
      }
      previous = { real: call.inputTokens, count, messages: call.messageCount };
    }
  }
  const s = summarize(errors);
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}%`;
  lines.push(
    `| ${unit} | ${s.n} | ${pct(s.medianAbs).slice(1)} | ${pct(s.p95Abs).slice(1)} | ${pct(s.worstUnder)} | ${pct(s.worstOver)} | ${measuring.toFixed(0)} ms |`,
  );
}
console.log(lines.join('\n'));
