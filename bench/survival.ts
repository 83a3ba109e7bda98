// What survives compaction: facts planted in long synthetic sessions, checked after every compaction.
//
//   node bench/survival.ts            (npm run bench:survival; about half a minute)
//   node bench/survival.ts --quick    (one shorter session per window and shape)
//   node bench/survival.ts --json     (the rows and every fact that was neither in the prompt nor recallable)
//   node bench/survival.ts --sessions 3 --compactions 8 --seed 7 --windows 4000,16000 --verbose
//   node bench/survival/diagnose.ts   (why recall misses: variants of its ranking and of its cut)
//
// --compactions N sizes the sessions: the threshold once, then N times (threshold − target), what a
// compaction would free if it went just down to the target; the guard frees more (pruning, the
// summary's own size), so it compacts fewer times (3 to 5 with the default 6).
//
// Sessions (bench/survival/session.ts): deterministic, seeded; windows of 4k, 16k, 128k and 200k
// tokens; two shapes, tool-heavy (an agent reading and writing files, grepping, running tests: big
// tool outputs) and chat-heavy (long user / assistant exchanges, a tool step now and then); lengths set
// so that each session crosses the threshold several times. Planted in each: 15 facts, five kinds
// (a user's constraint, a file path, an exact error message, an order / ticket number, a decision
// with its reason) each early, in the middle and late, each a unique string, among distractors of
// the same kinds.
//
// Each session is replayed call by call by a stateless host: it appends the call's messages, sends
// its whole history to beforeModel, reports a provider-like count of what the guard returned
// (chars/4 of its text, 3 tokens a message) to afterModel, then appends the scripted answer. After
// every compaction (r.compaction set), for every fact planted so far:
//   - in prompt: the fact's string is in JSON.stringify(r.messages);
//   - recallable: guard.recall(sessionId, { query, limit: 5 }) returns an item whose text holds the
//     fact, the query naming the fact's kind and a distinctive word (e.g. "TypeError reading qx81",
//     "file invoice_9f3a"), measured for every planted fact, whether it is in the prompt or not.
// Also: presence at every call from the first compaction on (the guard and LangChain compact at
// different rhythms), the largest prompt sent, and for each recall miss of a fact gone from the
// prompt, why (read from the archive as stored, bench/survival/store.ts): never archived, evicted,
// archived but outranked, or returned with its text cut around another match.
// Summarizers: `mechanical` (no summarizer: the guard's mechanical digest), `headings-only` (a
// scripted summarizer answering only the seven headings of the template, the worst case of a model
// summary), and LangChain's summarizationMiddleware (bench/survival/langchain.ts) with the same
// headings-only summary and with a first-200-characters-of-each-message summary; LangChain has no
// recall.
import { createContextGuard, SUMMARY_SECTIONS, thresholdFor, type GuardMessage } from '../src/index.ts';
import { RecordingStore } from './survival/store.ts';
import { FirstCharsChatModel, headingsModel, LangChainHost } from './survival/langchain.ts';
import { sessionsFor, FACT_KINDS, type Fact, type FactKind, type Session, type Shape } from './survival/session.ts';
import { numberFlag } from './args.ts';

type SummarizerName = 'mechanical' | 'headings-only' | 'langchain, headings-only' | 'langchain, first 200 chars';
const SUMMARIZERS: readonly SummarizerName[] = [
  'mechanical',
  'headings-only',
  'langchain, headings-only',
  'langchain, first 200 chars',
];
const SHAPES: readonly Shape[] = ['tool-heavy', 'chat-heavy'];

/** The worst case of a model-written summary: the template's headings and nothing under them. */
export const HEADINGS_ONLY = SUMMARY_SECTIONS.map((s) => `## ${s.title}\n(none)`).join('\n\n');

interface ArchivedItemLike {
  id: string;
  label?: string;
  role?: string;
  text: string;
  truncated?: boolean;
}
interface RecallCapable {
  recall?: (
    sessionId: string,
    query: { query?: string; id?: string; limit?: number; maxChars?: number },
  ) => Promise<ArchivedItemLike[]>;
  compactions?: (sessionId: string) => Promise<unknown[]>;
}

/** One check of one planted fact after one compaction. */
interface Observation {
  fact: Fact;
  inPrompt: boolean;
  /** Undefined when the run has no recall. */
  recalled: boolean | undefined;
  /** What recall returned (ids), for the misses. */
  returned?: string[];
  /** Why recall missed it: see `MissReason`. */
  miss?: MissReason;
}

/**
 * Why a recall missed a fact, from the archive as stored (bench/survival/store.ts): `not archived`
 * (no archived item holds it), `evicted` (an item held it at an earlier compaction, no longer:
 * the archive's size bound), `outranked` (archived, but not among the 5 items the query
 * returned), `cut` (the item holding it was returned, its text cut around another match).
 */
type MissReason = 'not archived' | 'evicted' | 'outranked' | 'cut';

interface SessionRun {
  compactions: number;
  /** Compactions that summarized (a summary or a mechanical digest), not only pruned. */
  summarizing: number;
  strategies: Record<string, number>;
  receipts: number | undefined;
  observations: Observation[];
  /** Largest prompt sent, provider-like tokens / window. */
  peak: number;
  calls: number;
  /** Archive batches evicted (the archive's size bound). */
  evicted: number;
  /** Facts planted so far, checked at every call from the first compaction on, and how many were in the prompt. */
  everyCall: { n: number; present: number };
}

function emptyRun(): SessionRun {
  return {
    compactions: 0,
    summarizing: 0,
    strategies: {},
    receipts: undefined,
    observations: [],
    peak: 0,
    calls: 0,
    evicted: 0,
    everyCall: { n: 0, present: 0 },
  };
}

/** A provider-like count of a prompt: chars/4 of its text, tool names, ids and inputs, 3 tokens a message. */
export function promptTokens(messages: readonly GuardMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += 12;
    if (typeof m.content === 'string') {
      chars += m.content.length;
      continue;
    }
    for (const part of m.content as unknown as Array<Record<string, unknown>>) {
      if (typeof part['text'] === 'string') chars += part['text'].length;
      if (part['type'] === 'tool-call')
        chars += String(part['toolName']).length + JSON.stringify(part['input'] ?? null).length;
      if (part['type'] === 'tool-result') {
        const output = part['output'] as { value?: unknown } | undefined;
        const value = output?.value;
        chars +=
          String(part['toolName']).length +
          (typeof value === 'string' ? value.length : JSON.stringify(value ?? null).length);
      }
    }
  }
  return Math.ceil(chars / 4);
}

async function replayGuard(session: Session, name: 'mechanical' | 'headings-only'): Promise<SessionRun> {
  const store = new RecordingStore();
  const guard = createContextGuard({
    contextWindow: session.window,
    store,
    ...(name === 'headings-only' ? { summarizer: () => HEADINGS_ONLY } : {}),
  });
  const extra = guard as unknown as RecallCapable;
  const recall = typeof extra.recall === 'function' ? extra.recall.bind(guard) : undefined;
  const sessionId = session.id;
  const history: GuardMessage[] = [session.system];
  /** Facts found in the archive at some compaction (to tell an eviction from a fact never archived). */
  const archived = new Set<string>();
  const run = emptyRun();
  for (const [i, call] of session.calls.entries()) {
    history.push(...call.before);
    const r = await guard.beforeModel({ sessionId, messages: history.slice() });
    const inputTokens = promptTokens(r.messages);
    run.peak = Math.max(run.peak, inputTokens / session.window);
    run.calls++;
    if (r.compaction || run.compactions > 0) {
      // Presence at every call from the first compaction on, whatever the compaction rhythm.
      const prompt = JSON.stringify(r.messages);
      for (const fact of session.facts) {
        if (fact.call > i) continue;
        run.everyCall.n++;
        if (prompt.includes(fact.text)) run.everyCall.present++;
      }
    }
    if (r.compaction) {
      run.compactions++;
      run.strategies[r.compaction.strategy] = (run.strategies[r.compaction.strategy] ?? 0) + 1;
      if (r.compaction.steps.includes('summary') || r.compaction.steps.includes('mechanical')) run.summarizing++;
      const prompt = JSON.stringify(r.messages);
      for (const fact of session.facts) {
        if (fact.call > i) continue;
        const o: Observation = { fact, inPrompt: prompt.includes(fact.text), recalled: undefined };
        if (recall) {
          const items = await recall(sessionId, { query: fact.query, limit: 5 });
          o.recalled = items.some((it) => typeof it.text === 'string' && it.text.includes(fact.text));
          if (!o.recalled) {
            o.returned = items.map((it) => `${it.id}${it.truncated ? ' (cut)' : ''}`);
            const holders = store.holders(sessionId, fact.text);
            o.miss =
              holders.size === 0
                ? archived.has(fact.text)
                  ? 'evicted'
                  : 'not archived'
                : items.some((it) => holders.has(it.id))
                  ? 'cut'
                  : 'outranked';
          }
          if (o.recalled || o.miss === 'cut' || o.miss === 'outranked') archived.add(fact.text);
        }
        run.observations.push(o);
      }
    }
    await guard.afterModel({ sessionId, usage: { inputTokens, outputTokens: promptTokens([call.response]) } });
    history.push(call.response);
  }
  run.evicted = store.archive(sessionId)?.evicted ?? 0;
  if (typeof extra.compactions === 'function') run.receipts = (await extra.compactions.call(guard, sessionId)).length;
  return run;
}

/** The first-200-characters summarizer, within the guard's summary budget for the window (its default maxSummaryTokens). */
function firstChars(window: number): FirstCharsChatModel {
  const model = new FirstCharsChatModel({});
  const buffer = window - thresholdFor(window, undefined);
  model.maxChars = Math.max(256, Math.floor(buffer / 2)) * 4;
  return model;
}

async function replayLangChain(session: Session, name: SummarizerName): Promise<SessionRun> {
  const host = new LangChainHost({
    system: session.system,
    threshold: thresholdFor(session.window, undefined),
    model: name === 'langchain, headings-only' ? headingsModel(HEADINGS_ONLY) : firstChars(session.window),
  });
  const run = emptyRun();
  for (const [i, call] of session.calls.entries()) {
    const { messages, compacted } = await host.beforeModel(call.before);
    run.peak = Math.max(run.peak, promptTokens(messages) / session.window);
    run.calls++;
    if (compacted || run.compactions > 0) {
      const prompt = JSON.stringify(messages);
      for (const fact of session.facts) {
        if (fact.call > i) continue;
        run.everyCall.n++;
        if (prompt.includes(fact.text)) run.everyCall.present++;
      }
    }
    if (compacted) {
      run.compactions++;
      run.strategies['summary'] = (run.strategies['summary'] ?? 0) + 1;
      run.summarizing++;
      const prompt = JSON.stringify(messages);
      for (const fact of session.facts) {
        if (fact.call > i) continue;
        run.observations.push({ fact, inPrompt: prompt.includes(fact.text), recalled: undefined });
      }
    }
    host.afterModel(call.response);
  }
  return run;
}

interface Row {
  window: number;
  shape: Shape;
  summarizer: SummarizerName;
  sessions: number;
  calls: number;
  compactions: number[];
  summarizing: number[];
  strategies: Record<string, number>;
  receipts: number | undefined;
  observations: number;
  /** Archive batches evicted, all sessions. */
  evicted: number;
  inPromptByKind: Record<FactKind, number>;
  inPrompt: number;
  /** In the prompt at every call from the first compaction on (not only right after a compaction). */
  inPromptEveryCall: number;
  /** Undefined: no recall in this run. */
  recallable: number | undefined;
  /** Of the observations where the fact was not in the prompt, the share recall found. */
  goneRecallable: number | undefined;
  /** Neither in the prompt nor recallable (not in the prompt, for runs without recall). */
  lost: number;
  peak: number;
  /** Observations of facts gone from the prompt that recall missed, by reason. */
  missReasons: Record<MissReason, number>;
  /** Each fact gone from the prompt that recall missed, at its last miss. */
  misses: Array<{
    kind: FactKind;
    position: string;
    carrier: string;
    fact: string;
    query: string;
    reason: MissReason | undefined;
    returned: string[];
  }>;
}

function summarizeRow(
  window: number,
  shape: Shape,
  summarizer: SummarizerName,
  runs: SessionRun[],
  hasRecall: boolean,
): Row {
  const obs = runs.flatMap((r) => r.observations);
  const share = (xs: Observation[], f: (o: Observation) => boolean) =>
    xs.length === 0 ? Number.NaN : xs.filter(f).length / xs.length;
  const inPromptByKind = {} as Record<FactKind, number>;
  for (const k of FACT_KINDS)
    inPromptByKind[k] = share(
      obs.filter((o) => o.fact.kind === k),
      (o) => o.inPrompt,
    );
  const gone = obs.filter((o) => !o.inPrompt);
  const strategies: Record<string, number> = {};
  for (const r of runs) for (const [s, n] of Object.entries(r.strategies)) strategies[s] = (strategies[s] ?? 0) + n;
  const last = new Map<string, Row['misses'][number]>();
  const missReasons: Record<MissReason, number> = { 'not archived': 0, evicted: 0, outranked: 0, cut: 0 };
  for (const o of gone) {
    if (!hasRecall || o.recalled) continue;
    if (o.miss) missReasons[o.miss]++;
    last.set(o.fact.text, {
      kind: o.fact.kind,
      position: o.fact.position,
      carrier: o.fact.carrier,
      fact: o.fact.text,
      query: o.fact.query,
      reason: o.miss,
      returned: o.returned ?? [],
    });
  }
  const misses = [...last.values()];
  return {
    window,
    shape,
    summarizer,
    sessions: runs.length,
    calls: runs.reduce((n, r) => n + r.calls, 0),
    compactions: runs.map((r) => r.compactions),
    summarizing: runs.map((r) => r.summarizing),
    strategies,
    receipts: runs.every((r) => r.receipts !== undefined) ? runs.reduce((n, r) => n + (r.receipts ?? 0), 0) : undefined,
    observations: obs.length,
    evicted: runs.reduce((n, r) => n + r.evicted, 0),
    inPromptByKind,
    inPrompt: share(obs, (o) => o.inPrompt),
    inPromptEveryCall:
      runs.reduce((n, r) => n + r.everyCall.present, 0) /
      Math.max(
        1,
        runs.reduce((n, r) => n + r.everyCall.n, 0),
      ),
    recallable: hasRecall ? share(obs, (o) => o.recalled === true) : undefined,
    goneRecallable: hasRecall ? share(gone, (o) => o.recalled === true) : undefined,
    lost: share(obs, (o) => !o.inPrompt && o.recalled !== true),
    peak: Math.max(...runs.map((r) => r.peak)),
    missReasons,
    misses,
  };
}

const pct = (x: number | undefined): string =>
  x === undefined ? 'n/a' : Number.isNaN(x) ? '–' : `${(x * 100).toFixed(x === 1 || x === 0 ? 0 : 1)}%`;
const windowLabel = (w: number) => `${w / 1000}k`;

function table(rows: Row[]): string {
  const lines = [
    '| window | shape | summarizer | compactions / session (summarizing) | constraint | path | error | id | decision | **in prompt** | in prompt, every call | recallable | gone → recalled | **lost** | peak prompt |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const range = (xs: number[]) => {
      const lo = Math.min(...xs);
      const hi = Math.max(...xs);
      return lo === hi ? `${lo}` : `${lo}–${hi}`;
    };
    const k = r.inPromptByKind;
    const constraint =
      k.constraint < 1 && !r.summarizer.startsWith('langchain') ? `**${pct(k.constraint)}**` : pct(k.constraint);
    lines.push(
      `| ${windowLabel(r.window)} | ${r.shape} | ${r.summarizer} | ${range(r.compactions)} (${range(r.summarizing)}) | ${constraint} | ${pct(k.path)} | ${pct(k.error)} | ${pct(k.id)} | ${pct(k.decision)} | **${pct(r.inPrompt)}** | ${pct(r.inPromptEveryCall)} | ${pct(r.recallable)} | ${pct(r.goneRecallable)} | **${pct(r.lost)}** | ${pct(r.peak)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const json = args.includes('--json');
  const verbose = args.includes('--verbose');
  const sessions = numberFlag(args, '--sessions', quick ? 1 : 6);
  const compactions = numberFlag(args, '--compactions', quick ? 3 : 6);
  const seed = numberFlag(args, '--seed', 1);
  const windowsArg = args[args.indexOf('--windows') + 1];
  const windows =
    args.includes('--windows') && windowsArg ? windowsArg.split(',').map(Number) : [4_000, 16_000, 128_000, 200_000];
  const started = performance.now();

  const probe = createContextGuard({ contextWindow: 8_000 }) as unknown as RecallCapable;
  const hasRecall = typeof probe.recall === 'function';
  const rows: Row[] = [];
  const all = new Map<SummarizerName, SessionRun[]>(SUMMARIZERS.map((s) => [s, []]));
  for (const window of windows) {
    for (const shape of SHAPES) {
      const built = sessionsFor(seed, window, shape, sessions, compactions);
      for (const summarizer of SUMMARIZERS) {
        const runs: SessionRun[] = [];
        for (const session of built)
          runs.push(
            summarizer === 'mechanical' || summarizer === 'headings-only'
              ? await replayGuard(session, summarizer)
              : await replayLangChain(session, summarizer),
          );
        rows.push(summarizeRow(window, shape, summarizer, runs, hasRecall && !summarizer.startsWith('langchain')));
        all.get(summarizer)?.push(...runs);
        if (!json)
          process.stderr.write(
            `  ${windowLabel(window)} ${shape} ${summarizer}: ${runs.map((r) => r.compactions).join(', ')} compactions, ` +
              `${((performance.now() - started) / 1000).toFixed(1)} s\n`,
          );
      }
    }
  }
  const seconds = (performance.now() - started) / 1000;

  if (json) {
    console.log(
      JSON.stringify({ node: process.version, quick, sessions, compactions, seed, hasRecall, seconds, rows }, null, 2),
    );
    return;
  }
  console.log(
    `node ${process.version}; ${sessions} session(s) per window and shape, sized by --compactions ${compactions}, seed ${seed}; ` +
      `15 facts per session; guard.recall ${hasRecall ? 'present' : 'ABSENT (recall columns n/a)'}; ${seconds.toFixed(1)} s`,
  );
  console.log(
    'Shares over (compaction, fact planted so far) pairs, checked right after each compaction. constraint…decision: ' +
      'in the prompt, by kind. in prompt, every call: the same at every call from the first compaction on. ' +
      'gone → recalled: of the facts not in the prompt, found by recall. lost: neither. peak prompt: largest prompt / window.',
  );
  console.log(table(rows));

  console.log('\nPooled over windows and shapes:');
  for (const [summarizer, runs] of all) {
    const p = summarizeRow(0, 'tool-heavy', summarizer, runs, hasRecall && !summarizer.startsWith('langchain'));
    console.log(
      `- ${summarizer}: in prompt ${pct(p.inPrompt)} (every call ${pct(p.inPromptEveryCall)}), user constraints in ` +
        `prompt ${pct(p.inPromptByKind.constraint)}, recallable ${pct(p.recallable)}, gone → recalled ` +
        `${pct(p.goneRecallable)}, lost ${pct(p.lost)}`,
    );
  }
  const mech = rows.filter((r) => r.summarizer === 'mechanical');
  const failing = mech.filter((r) => r.inPromptByKind.constraint < 1);
  console.log(
    failing.length === 0
      ? '\nuser constraints in prompt with the mechanical digest: 100% in every window and shape'
      : `\nUSER CONSTRAINTS LOST FROM THE PROMPT with the mechanical digest: ${failing
          .map((r) => `${windowLabel(r.window)} ${r.shape} ${pct(r.inPromptByKind.constraint)}`)
          .join(', ')}`,
  );
  if (!hasRecall) return;
  const evicting = rows.filter((r) => r.evicted > 0);
  if (evicting.length > 0)
    console.log(
      `archive batches evicted (archive.maxChars): ${evicting.map((r) => `${windowLabel(r.window)} ${r.shape} ${r.summarizer} ${r.evicted}`).join(', ')}`,
    );
  const reasons: Record<MissReason, number> = { 'not archived': 0, evicted: 0, outranked: 0, cut: 0 };
  for (const r of rows) for (const [k, n] of Object.entries(r.missReasons)) reasons[k as MissReason] += n;
  const missed = Object.values(reasons).reduce((a, b) => a + b, 0);
  console.log(
    missed === 0
      ? 'every fact gone from the prompt was found by recall'
      : `recall misses of facts gone from the prompt (observations): ${missed}; ${[
          [reasons.outranked, 'outranked (archived, not in the top 5)'],
          [reasons.cut, 'cut (the item holding it returned, its text cut around another match)'],
          [reasons.evicted, 'evicted (archived earlier, dropped by archive.maxChars)'],
          [reasons['not archived'], 'never archived'],
        ]
          .filter(([n]) => (n as number) > 0)
          .map(([n, what]) => `${n} ${what}`)
          .join(', ')}`,
  );
  const withinBound = missed - reasons.evicted;
  console.log(
    withinBound === 0
      ? 'within the archive bound: every fact gone from the prompt and still archived was found by recall (100%)'
      : `WITHIN THE ARCHIVE BOUND, RECALL MISSED ${withinBound} (outranked, cut or never archived)`,
  );
  const misses = rows.flatMap((r) =>
    r.misses.map((m) => ({ ...m, row: `${windowLabel(r.window)} ${r.shape} ${r.summarizer}` })),
  );
  const byCarrier = new Map<string, number>();
  for (const m of misses) {
    const key = `${m.kind} in ${m.carrier}, ${m.reason}`;
    byCarrier.set(key, (byCarrier.get(key) ?? 0) + 1);
  }
  if (misses.length > 0)
    console.log(
      `distinct facts missed: ${[...byCarrier]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k}: ${n}`)
        .join('; ')}`,
    );
  for (const m of misses.slice(0, verbose ? misses.length : 6))
    console.log(
      `  ${m.row}: ${m.kind} (${m.position}, ${m.carrier}) "${m.fact}", query "${m.query}", ${m.reason} -> [${m.returned.join(', ')}]`,
    );
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) await main();
