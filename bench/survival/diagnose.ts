// Why recall misses archived facts: a diagnostic next to bench/survival.ts, on the same sessions.
//
//   node bench/survival/diagnose.ts [--sessions 6] [--windows 4000,16000,128000,200000] [--seed 1]   (about 30 s)
//
// The sessions of bench/survival.ts run through a guard without a summarizer. After each
// compaction, for every planted fact that is gone from the prompt but held by an archived item (the
// archive as stored, bench/survival/store.ts), the fact's query is answered four ways:
//   - ranking: is the holding item in the top 5 of a MiniSearch index over the archived items built
//     with the guard's options (src/archive/recall.ts: prefix and fuzzy 0.2 on every term, tool
//     name boosted), without fuzzy matching, without prefix matching, and with exact terms only
//     (neither); and how many top-5 answers hold one item id twice (a tool result archived when
//     truncated, then again when replaced by a placeholder);
//   - the cut: when the holding item is in the top 5, does its text still hold the fact once cut to
//     an even share of recall's default bound (the guard's: 40% of the window in characters, 800 to
//     16,000, over 5 items), the cut centred on the first occurrence of any matched term (what
//     recall does) or on the matched term found in the fewest archived items (the rarest)? Counted
//     for the guard's options with either cut, and without prefix matching with the rarest-term cut.
// The guard's own recall is not changed: these are what-ifs, to point at the fix.
import MiniSearch from 'minisearch';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { promptTokens } from '../survival.ts';
import { sessionsFor, type Shape } from './session.ts';
import { RecordingStore } from './store.ts';
import { numberFlag } from '../args.ts';

interface Item {
  id: string;
  label: string;
  role: string;
  text: string;
  toolName?: string;
}

type Variant = 'guard options' | 'no fuzzy' | 'no prefix' | 'exact terms';
const VARIANTS: Record<Variant, { prefix: boolean; fuzzy: number | false }> = {
  'guard options': { prefix: true, fuzzy: 0.2 },
  'no fuzzy': { prefix: true, fuzzy: false },
  'no prefix': { prefix: false, fuzzy: 0.2 },
  'exact terms': { prefix: false, fuzzy: false },
};

/**
 * `max` characters of `text` starting a third of `max` before `at` (the whole text when it fits).
 * `headAndTail`: as recall does, a match in the first half of the room (or none) keeps the head and tail instead.
 */
function windowAt(text: string, at: number, max: number, headAndTail: boolean): string {
  if (text.length <= max) return text;
  if (at < 0 || (headAndTail && at < max / 2))
    return `${text.slice(0, Math.ceil(max / 2))}${text.slice(text.length - Math.floor(max / 2))}`;
  const start = Math.max(0, Math.min(at - Math.floor(max / 3), text.length - max));
  return text.slice(start, start + max);
}

interface Tally {
  facts: number;
  top5: Record<Variant, number>;
  duplicates: number;
  /** The fact in the text returned: guard options cut at the first match (as recall), at the rarest term; no prefix, rarest term. */
  keptFirst: number;
  keptRarest: number;
  keptNoPrefixRarest: number;
}

const emptyTally = (): Tally => ({
  facts: 0,
  top5: { 'guard options': 0, 'no fuzzy': 0, 'no prefix': 0, 'exact terms': 0 },
  duplicates: 0,
  keptFirst: 0,
  keptRarest: 0,
  keptNoPrefixRarest: 0,
});

async function diagnose(window: number, shape: Shape, sessions: number, seed: number, tally: Tally): Promise<void> {
  const share = Math.floor(Math.max(800, Math.min(16_000, Math.floor(window * 0.4))) / 5);
  for (const session of sessionsFor(seed, window, shape, sessions, 6)) {
    const store = new RecordingStore();
    const guard = createContextGuard({ contextWindow: window, store });
    const history: GuardMessage[] = [session.system];
    for (const [i, call] of session.calls.entries()) {
      history.push(...call.before);
      const r = await guard.beforeModel({ sessionId: session.id, messages: history.slice() });
      if (r.compaction) {
        const prompt = JSON.stringify(r.messages);
        const items = (store.archive(session.id)?.batches ?? []).flatMap((b) => b.items) as Item[];
        const lower = items.map((it) => it.text.toLowerCase());
        const indexes = new Map<Variant, MiniSearch>();
        for (const [name, o] of Object.entries(VARIANTS) as Array<[Variant, (typeof VARIANTS)[Variant]]>) {
          const index = new MiniSearch({
            fields: ['text', 'toolName', 'label', 'role'],
            searchOptions: { prefix: o.prefix, fuzzy: o.fuzzy, boost: { toolName: 2 } },
          });
          index.addAll(items.map((it, j) => ({ ...it, id: j, toolName: it.toolName ?? '' })));
          indexes.set(name, index);
        }
        const rarity = new Map<string, number>();
        const seenIn = (term: string) => {
          if (!rarity.has(term)) rarity.set(term, lower.filter((t) => t.includes(term)).length);
          return rarity.get(term) as number;
        };
        for (const fact of session.facts) {
          if (fact.call > i || prompt.includes(fact.text)) continue;
          const holders = new Set(items.flatMap((it, j) => (it.text.includes(fact.text) ? [j] : [])));
          if (holders.size === 0) continue;
          tally.facts++;
          for (const [name, index] of indexes) {
            const top = index.search(fact.query).slice(0, 5);
            const hit = top.find((x) => holders.has(x.id as number));
            if (hit) tally.top5[name]++;
            if (name === 'guard options' && new Set(top.map((x) => items[x.id as number]?.id)).size < top.length)
              tally.duplicates++;
            if (!hit || (name !== 'guard options' && name !== 'no prefix')) continue;
            const j = hit.id as number;
            const text = items[j]?.text ?? '';
            const terms = hit.terms.map((t) => t.toLowerCase()).filter((t) => t.length >= 2);
            const positions = terms.map((t) => lower[j]?.indexOf(t) ?? -1).filter((p) => p >= 0);
            const first = positions.length > 0 ? Math.min(...positions) : -1;
            const rarest = terms.filter((t) => lower[j]?.includes(t)).sort((a, b) => seenIn(a) - seenIn(b))[0];
            const keptRarest = windowAt(text, rarest ? (lower[j]?.indexOf(rarest) ?? -1) : -1, share, false).includes(
              fact.text,
            );
            if (name === 'no prefix') {
              if (keptRarest) tally.keptNoPrefixRarest++;
              continue;
            }
            if (windowAt(text, first, share, true).includes(fact.text)) tally.keptFirst++;
            if (keptRarest) tally.keptRarest++;
          }
        }
      }
      await guard.afterModel({ sessionId: session.id, usage: { inputTokens: promptTokens(r.messages) } });
      history.push(call.response);
    }
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const sessions = numberFlag(args, '--sessions', 6);
  const seed = numberFlag(args, '--seed', 1);
  const at = args.indexOf('--windows');
  const windows =
    at >= 0 && args[at + 1] ? (args[at + 1] as string).split(',').map(Number) : [4_000, 16_000, 128_000, 200_000];
  const lines = [
    '| window | (compaction, fact) pairs gone from the prompt, archived | item in top 5: guard options | no fuzzy | no prefix | exact terms | ' +
      'answers with an item twice | fact returned: guard (cut at first match) | guard, cut at rarest term | ' +
      'no prefix, cut at rarest term |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const total = emptyTally();
  const row = (label: string, t: Tally) =>
    `| ${label} | ${t.facts} | ${t.top5['guard options']} | ${t.top5['no fuzzy']} | ${t.top5['no prefix']} | ` +
    `${t.top5['exact terms']} | ${t.duplicates} | ${t.keptFirst} | ${t.keptRarest} | ${t.keptNoPrefixRarest} |`;
  for (const window of windows) {
    const t = emptyTally();
    for (const shape of ['tool-heavy', 'chat-heavy'] as const) await diagnose(window, shape, sessions, seed, t);
    lines.push(row(`${window / 1000}k`, t));
    total.facts += t.facts;
    total.duplicates += t.duplicates;
    total.keptFirst += t.keptFirst;
    total.keptRarest += t.keptRarest;
    total.keptNoPrefixRarest += t.keptNoPrefixRarest;
    for (const k of Object.keys(t.top5) as Variant[]) total.top5[k] += t.top5[k];
  }
  lines.push(row('**all**', total));
  console.log(`seed ${seed}, ${sessions} session(s) per window and shape, no summarizer (mechanical digest)`);
  console.log(lines.join('\n'));
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) await main();
