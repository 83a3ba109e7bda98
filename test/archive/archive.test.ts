// Lossless compaction through the guard: what a compaction takes out of the prompt is archived
// before the prompt is sent, recall finds it (by tool-call id, batch label or query), the archive
// survives a store outage and is bounded, receipts say what each compaction did, and the user's
// recent words are carried over verbatim.
import { describe, expect, it } from 'vitest';
import { archiveKey } from '../../src/archive/store.ts';
import {
  createContextGuard,
  MemoryStore,
  type ContextGuardOptions,
  type GuardMessage,
  type SessionArchive,
  type StateStore,
} from '../../src/index.ts';
import { expectInvariants } from '../compaction/invariants.ts';
import { assistant, recorder, system, toolStep, user } from '../helpers.ts';

const WINDOW = 8_000;
const filler = (label: string, chars: number) =>
  `${label}: ${'the module compiles and the next step applies the same change. '.repeat(Math.ceil(chars / 60))}`.slice(
    0,
    chars,
  );

/** An agent session: a request, tool steps with large outputs (one with a unique fact), answers. */
function session(steps: number, fact = 'ERR_LEDGER_7731: balance mismatch in invoice 4471'): GuardMessage[] {
  const out: GuardMessage[] = [system('You are a coding agent.'), user('Migrate the ledger module to the new API.')];
  for (let i = 0; i < steps; i++) {
    const output = i === 1 ? `${filler('log', 1_500)}\n${fact}\n${filler('more', 1_500)}` : filler(`file ${i}`, 3_000);
    out.push(...toolStep(`call_${i}`, { path: `src/ledger/part_${i}.ts` }, output));
    out.push(assistant(filler(`answer ${i}`, 400)));
    out.push(user(`Step ${i + 1}: go on with part ${i + 1}.`));
  }
  return out;
}

function setup(options: ContextGuardOptions = {}) {
  const ev = recorder();
  const guard = createContextGuard({ contextWindow: WINDOW, onEvent: ev.onEvent, ...options });
  return { guard, ev };
}

/** A store that fails every write of archives while `down` (session state still works). */
class FlakyArchiveStore<T> implements StateStore<T> {
  readonly inner = new MemoryStore<T>();
  down = false;
  readonly writes: string[] = [];
  get(id: string) {
    return this.inner.get(id);
  }
  async set(id: string, value: T) {
    if (this.down && id.startsWith('\u001farchive')) throw new Error('store down');
    this.writes.push(id);
    await this.inner.set(id, value);
  }
  delete(id: string) {
    return this.inner.delete(id);
  }
}

describe('archive before replace', () => {
  it('archives the originals before the compacted prompt is returned, and recall finds them by id and query', async () => {
    const store = new FlakyArchiveStore<unknown>();
    const { guard, ev } = setup({ store: store as StateStore<never> });
    const messages = session(6);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeDefined();
    expectInvariants(messages, r);
    // The archive was written (to the user's store) before the call's state, and before beforeModel resolved.
    const archive = (await store.inner.get(archiveKey('s'))) as SessionArchive;
    expect(archive.batches).toHaveLength(1);
    expect(store.writes.indexOf(archiveKey('s'))).toBeLessThan(store.writes.lastIndexOf('s'));
    const receipt = ev.last('compaction-end').receipt;
    expect(receipt.archive).toEqual([archive.batches[0]?.label]);
    expect(archive.batches[0]?.label).toMatch(/^compaction-batch-s-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(archive.batches[0]?.header).toMatch(/^\[depth:0\|start:[^|]+\|end:[^|]+\|count:\d+\]$/);

    // Everything that is no longer verbatim in the prompt is in the archive.
    const sent = JSON.stringify(r.messages);
    const original = (id: string) =>
      String(
        (
          messages.flatMap((m) => (m.role === 'tool' ? m.content : [])).find((p) => p.toolCallId === id) as never as {
            output: { value: string };
          }
        ).output.value,
      );
    for (let i = 0; i < 6; i++) {
      const id = `call_${i}`;
      if (sent.includes(JSON.stringify(original(id)))) continue;
      const [item] = await guard.recall('s', { id, maxChars: 100_000 });
      expect(item?.toolCallId, id).toBe(id);
      expect(item?.text).toContain(original(id));
    }
    const hits = await guard.recall('s', { query: 'ledger balance mismatch 4471' });
    expect(hits[0]?.text).toContain('ERR_LEDGER_7731: balance mismatch in invoice 4471');
    expect(hits[0]?.score).toBeGreaterThan(0);
  });

  it('when the store fails the archive write, the compaction still happens, recall still finds it, and the next call writes it', async () => {
    const store = new FlakyArchiveStore<unknown>();
    store.down = true;
    const { guard, ev } = setup({ store: store as StateStore<never> });
    const messages = session(6);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeDefined();
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expect(ev.of('archive-deferred')).toHaveLength(1);
    expect(ev.of('store-failed').length).toBeGreaterThan(0);
    expect(await store.inner.get(archiveKey('s'))).toBeUndefined();
    // Kept in this process meanwhile: recall finds it.
    expect((await guard.recall('s', { query: 'ERR_LEDGER_7731' }))[0]?.text).toContain('ERR_LEDGER_7731');
    expect(await guard.compactions('s')).toHaveLength(1);

    // Still down: the next call leaves it waiting (one event per failure, no second deferral).
    await guard.beforeModel({ sessionId: 's', messages: [...messages, assistant('ok')] });
    expect(ev.of('archive-written')).toHaveLength(0);
    store.down = false;
    await guard.beforeModel({ sessionId: 's', messages: [...messages, assistant('ok'), user('next')] });
    const written = ev.of('archive-written');
    expect(written).toHaveLength(1);
    expect(written[0]?.labels).toEqual(ev.of('archive-deferred')[0]?.labels);
    const stored = (await store.inner.get(archiveKey('s'))) as SessionArchive;
    expect(stored.batches.map((b) => b.label)).toEqual(written[0]?.labels);
    expect(stored.receipts).toHaveLength(1);
    // A second guard on the same store (another process) recalls it.
    const other = createContextGuard({ contextWindow: WINDOW, store: store as StateStore<never> });
    expect((await other.recall('s', { query: 'ERR_LEDGER_7731' }))[0]?.text).toContain('ERR_LEDGER_7731');
  });
});

describe('recall', () => {
  it('placeholders and truncation markers name the id to recall; the summary names its batch', async () => {
    const { guard, ev } = setup({ prune: false, summarizer: () => '## Task state\nMigrating the ledger.' });
    const messages = session(12);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    const sent = JSON.stringify(r.messages);
    const label = ev.last('compaction-end').receipt.archive[0] as string;
    expect(sent).toContain(`archive batch \\"${label}\\"`);
    expect(sent).toContain('The recall tool finds them by query or by that label.');
    // And recall by that label returns the batch's items, in order.
    const items = await guard.recall('s', { id: label, limit: 50 });
    expect(items.length).toBeGreaterThan(3);
    expect(items.every((i) => i.label === label)).toBe(true);
    expect(items.map((i) => i.position)).toEqual([...items.map((i) => i.position)].sort((a, b) => a - b));
  });

  it('a pruned tool output names its id, and recall by that id returns it whole', async () => {
    const { guard } = setup({ keepRecentTokens: 1_000 });
    // Prune alone reaches the target: one placeholder, no summary.
    const messages: GuardMessage[] = [system('You are a coding agent.'), user('Read the files.')];
    for (let i = 0; i < 4; i++) messages.push(...toolStep(`read_${i}`, { path: `f${i}` }, filler(`file ${i}`, 5_000)));
    messages.push(assistant('Done reading.'), user('Now summarize them.'));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.steps[0]).toBe('prune');
    const sent = JSON.stringify(r.messages);
    expect(sent).toMatch(
      /Archived: recall id \\"read_0\\", or call the tool again\.|archived whole: recall id \\"read_0\\"/,
    );
    const [item] = await guard.recall('s', { id: 'read_0', maxChars: 10_000 });
    expect(item?.text).toContain(filler('file 0', 5_000));
    expect(item?.truncated).toBe(false);
  });

  it('is bounded: limit and maxChars, long items cut around the match', async () => {
    const { guard } = setup();
    await guard.beforeModel({ sessionId: 's', messages: session(10) });
    const all = await guard.recall('s', { query: 'module compiles', limit: 50 });
    expect(all.length).toBeGreaterThan(5);
    expect(await guard.recall('s', { query: 'module compiles', limit: 2 })).toHaveLength(2);
    const small = await guard.recall('s', { query: 'ERR_LEDGER_7731', limit: 1, maxChars: 300 });
    expect(small[0]?.truncated).toBe(true);
    expect(small[0]?.text).toContain('ERR_LEDGER_7731');
    expect(small[0]?.text.length).toBeLessThan(460);
    expect(small[0]?.chars).toBeGreaterThan(3_000);
    // The default bound is about a tenth of the window.
    const bounded = await guard.recall('s', { query: 'module compiles', limit: 50 });
    expect(bounded.reduce((n, i) => n + i.text.length, 0)).toBeLessThanOrEqual(0.4 * WINDOW + 50 * 80);
  });

  it('cuts a long item with room after its last match: the sentence holding it is returned whole', async () => {
    const { guard } = setup();
    const fact = 'Decided to keep the retry loop in tenant_b638 rather than the queue, because the queue drops jobs';
    // A common query word early, the fact near the end of the room a cut from the start would give.
    const output = `${filler('log', 350)} We should check how the scheduler batches the retry attempts. ${filler(
      'more',
      680,
    )}\n${fact}\n${filler('tail', 3_000)}`;
    const messages = session(8);
    messages.splice(2, 0, ...toolStep('notes', { path: 'NOTES.md' }, output));
    await guard.beforeModel({ sessionId: 's', messages });
    const [item] = await guard.recall('s', {
      query: 'why the retry loop stays in tenant_b638',
      limit: 1,
      maxChars: 1_200,
    });
    expect(item?.toolCallId).toBe('notes');
    expect(item?.truncated).toBe(true);
    expect(item?.text).toContain(fact);
  });

  it('cuts around the match in a text whose lower case is longer (İ lowers to two characters)', async () => {
    const { guard } = setup();
    const fact = 'Decided to keep the RETRY LOOP in TENANT_B638 rather than the queue, because the queue drops jobs';
    const output = `${'İSTANBUL İZMİR '.repeat(140)}\n${fact}\n${filler('tail', 3_000)}`;
    const messages = session(8);
    messages.splice(2, 0, ...toolStep('notes', { path: 'NOTES.md' }, output));
    await guard.beforeModel({ sessionId: 's', messages });
    const [item] = await guard.recall('s', { query: 'retry loop tenant_b638', limit: 1, maxChars: 1_200 });
    expect(item?.toolCallId).toBe('notes');
    expect(item?.truncated).toBe(true);
    expect(item?.text).toContain(fact);
  });

  it('finds a query holding a capital dotted I (its lower case keeps the combining dot)', async () => {
    const { guard } = setup();
    const output = `${filler('head', 3_000)} the İstanbul office closed on Friday ${filler('tail', 3_000)}`;
    const messages = session(8);
    messages.splice(2, 0, ...toolStep('notes', { path: 'NOTES.md' }, output));
    await guard.beforeModel({ sessionId: 's', messages });
    const [item] = await guard.recall('s', { query: 'İstanbul', limit: 1, maxChars: 400 });
    expect(item?.toolCallId).toBe('notes');
    expect(item?.text).toContain('İstanbul office');
  });

  it('answers [] and never throws for an unknown session, no query, or bad options', async () => {
    const { guard, ev } = setup();
    expect(await guard.recall('nobody', { query: 'x' })).toEqual([]);
    await guard.beforeModel({ sessionId: 's', messages: session(8) });
    expect(await guard.recall('s', {})).toEqual([]);
    expect(await guard.recall('s', { query: 'zzzzqqqq' })).toEqual([]);
    expect(await guard.recall('s', { query: 42 as never, limit: -3 as never })).toEqual([]);
    expect(await guard.recall('' as never, { query: 'x' })).toEqual([]);
    expect(ev.of('error').map((e) => e.stage)).toEqual(['recall']);
  });

  it('searches the first words of a huge query, and still finds by them', async () => {
    const { guard } = setup();
    await guard.beforeModel({ sessionId: 's', messages: session(8) });
    // A model that pastes a whole output as its query: its first words are searched.
    const pasted = `ERR_LEDGER_7731 balance ${Array.from({ length: 20_000 }, (_, i) => `w${i % 97}`).join(' ')}`;
    const [hit] = await guard.recall('s', { query: pasted });
    expect(hit?.text).toContain('ERR_LEDGER_7731');
    expect(await guard.recall('s', { query: ' '.repeat(10_000) })).toEqual([]);
  });

  it('matches identifiers exactly: look-alikes repeated in many outputs do not outrank the one named', async () => {
    const { guard } = setup({ prune: false, summarizer: () => 'S' });
    const messages: GuardMessage[] = [system('You are a coding agent.'), user('Grep the sources.')];
    // The one named: a long output with one mention. Look-alikes: short outputs, nothing but them.
    messages.push(...toolStep('g0', { pattern: 'inventory' }, `${filler('log', 3_000)}\nsrc/core/inventory_bcb1.ts`));
    for (let i = 1; i < 8; i++) {
      const lines = Array.from({ length: 20 }, (_, k) => `src/core/inventory_bcb${2 + ((k + i) % 7)}.ts`);
      messages.push(...toolStep(`g${i}`, { pattern: 'inventory' }, lines.join('\n')), assistant(`step ${i}`));
    }
    messages.push(user('Now fix it.'));
    for (let i = 0; i < 6; i++) messages.push(...toolStep(`r${i}`, { i }, filler(`file ${i}`, 3_000)));
    await guard.beforeModel({ sessionId: 's', messages: [...messages, user('go on')] });
    const [first] = await guard.recall('s', { query: 'file inventory_bcb1', limit: 1 });
    expect(first?.toolCallId).toBe('g0');
    expect(first?.text).toContain('src/core/inventory_bcb1.ts');
  });

  it('redacts secrets in what it archives', async () => {
    const { guard } = setup();
    const messages = session(8, 'export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD');
    await guard.beforeModel({ sessionId: 's', messages });
    const [item] = await guard.recall('s', { query: 'OPENAI_API_KEY', maxChars: 50_000 });
    expect(item?.text).toContain('OPENAI_API_KEY');
    expect(item?.text).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789ABCD');
  });

  it('archive: false keeps no originals (placeholders say to run the tool again) but still keeps receipts', async () => {
    const { guard } = setup({ archive: false });
    const r = await guard.beforeModel({ sessionId: 's', messages: session(8) });
    expect(r.compaction).toBeDefined();
    expect(JSON.stringify(r.messages)).not.toContain('recall');
    expect(await guard.recall('s', { query: 'ERR_LEDGER_7731' })).toEqual([]);
    const receipts = await guard.compactions('s');
    expect(receipts).toHaveLength(1);
    expect(receipts[0]?.archive).toEqual([]);
    expect(receipts[0]?.replaced.length).toBeGreaterThan(0);
  });
});

describe('eviction', () => {
  it('drops the oldest batches beyond archive.maxChars, with an event, and keeps the newest', async () => {
    const { guard, ev } = setup({ archive: { maxChars: 12_000 } });
    let history = session(4);
    for (let round = 0; round < 8; round++) {
      const r = await guard.beforeModel({ sessionId: 's', messages: history });
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.ceil(r.tokens) } });
      history = [
        ...history,
        ...session(4)
          .slice(2)
          .map((m) => structuredClone(m)),
      ];
      history = history.map((m, i) =>
        m.role === 'tool'
          ? ({ ...m, content: m.content.map((p) => ({ ...p, toolCallId: `c${i}` })) } as GuardMessage)
          : m.role === 'assistant' && Array.isArray(m.content)
            ? ({
                ...m,
                content: m.content.map((p) => (p.type === 'tool-call' ? { ...p, toolCallId: `c${i + 1}` } : p)),
              } as GuardMessage)
            : m,
      );
    }
    const receipts = await guard.compactions('s');
    expect(receipts.length).toBeGreaterThan(2);
    const evicted = ev.of('archive-evicted');
    expect(evicted.length).toBeGreaterThan(0);
    const gone = evicted.flatMap((e) => e.labels);
    for (const label of gone) expect(await guard.recall('s', { id: label })).toEqual([]);
    const newest = receipts.at(-1)?.archive[0] as string;
    expect((await guard.recall('s', { id: newest })).length).toBeGreaterThan(0);
  });
});

describe('receipts', () => {
  it('lists every compaction with what it replaced, by position and tool-call id; compaction-end carries the same', async () => {
    const { guard, ev } = setup({ summarizer: () => 'S' });
    const messages = session(8);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    const [receipt] = await guard.compactions('s');
    expect(receipt).toEqual(ev.last('compaction-end').receipt);
    expect(receipt?.tokensBefore).toBe(r.compaction?.tokensBefore);
    expect(receipt?.tokensAfter).toBe(r.compaction?.tokensAfter);
    expect(receipt?.strategy).toBe(r.compaction?.strategy);
    expect(receipt?.summary).toBe(r.compaction?.summary);
    expect(new Date(receipt?.at as string).getTime()).toBeGreaterThan(Date.now() - 60_000);
    const tools = receipt?.replaced.filter((m) => m.role === 'tool') ?? [];
    expect(tools.length).toBeGreaterThan(0);
    for (const m of tools) {
      expect(messages[m.position]?.role).toBe('tool');
      expect(JSON.stringify(messages[m.position])).toContain(m.toolCallId as string);
    }
    expect(await guard.compactions('other')).toEqual([]);
  });
});

describe('user messages carried over', () => {
  it('keeps the most recent user messages verbatim after a summary, older ones summarized and archived', async () => {
    const seen: string[] = [];
    const { guard } = setup({
      contextWindow: 64_000,
      prune: false,
      keepRecentTokens: 2_000,
      keepUserMessagesTokens: 300,
      summarizer: ({ messages }) => {
        for (const m of messages) if (m.role === 'user') seen.push(String(m.content));
        return 'S';
      },
    });
    const messages: GuardMessage[] = [system('sys'), user('Start the audit.')];
    for (let i = 0; i < 30; i++) {
      messages.push(user(`Constraint ${i}: never touch table t${i}.`));
      messages.push(...toolStep(`q${i}`, { sql: `select ${i}` }, filler(`rows ${i}`, 6_000)));
      messages.push(assistant(filler(`finding ${i}`, 600)));
    }
    messages.push(user('Now write the report.'));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.strategy).toBe('summary');
    const summaryAt = r.messages.findIndex(
      (m) => m.role === 'user' && String(m.content).startsWith('[Context Summary]'),
    );
    const before = r.messages.slice(0, summaryAt).map((m) => String(m.content));
    const carried = before.filter((t) => t.startsWith('Constraint'));
    expect(carried.length).toBeGreaterThan(2);
    // The most recent ones, in order, and not also given to the summarizer.
    const numbers = carried.map((t) => Number(/Constraint (\d+)/.exec(t)?.[1]));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    for (const t of carried) expect(seen).not.toContain(t);
    // The older ones were summarized and are in the archive.
    expect(seen).toContain('Constraint 0: never touch table t0.');
    expect((await guard.recall('s', { query: 'Constraint 0 table t0' }))[0]?.text).toBe(
      'Constraint 0: never touch table t0.',
    );
    expectInvariants(messages, r);
  });

  it('keepUserMessagesTokens: 0 carries nothing over', async () => {
    const { guard } = setup({ keepUserMessagesTokens: 0, prune: false, summarizer: () => 'S' });
    const messages = session(10);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.strategy).toBe('summary');
    const summaryAt = r.messages.findIndex(
      (m) => m.role === 'user' && String(m.content).startsWith('[Context Summary]'),
    );
    expect(r.messages.slice(0, summaryAt).filter((m) => String(m.content).startsWith('Step'))).toEqual([]);
  });
});

/** Appends one agent step with ids and facts of its own. */
function step(history: GuardMessage[], i: number): GuardMessage[] {
  return [
    ...history,
    user(`Task ${i}: handle ticket TCK-${1000 + i}.`),
    ...toolStep(`s${i}`, { ticket: `TCK-${1000 + i}` }, filler(`ticket ${1000 + i} details`, 2_500)),
    assistant(`Ticket TCK-${1000 + i} handled: ${filler('notes', 300)}`),
  ];
}

describe('clip-archive', () => {
  it('adds one summary batch per compaction, shows the first and last, and re-summarizes the middle one level deeper', async () => {
    const inputs: string[][] = [];
    const { guard, ev } = setup({
      prune: false,
      clipArchive: { first: 1, last: 2, buffer: 1 },
      summarizer: ({ messages, previousSummary }) => {
        expect(previousSummary).toBeUndefined();
        inputs.push(messages.map((m) => JSON.stringify(m.content)));
        const tickets = [...new Set(JSON.stringify(messages).match(/TCK-\d+/g) ?? [])];
        return `## Task state\nHandled ${tickets.join(', ')}.`;
      },
    });
    let history: GuardMessage[] = [system('You handle support tickets.'), user('Work through the queue.')];
    let compactions = 0;
    let sawOmission = false;
    for (let i = 0; i < 80 && compactions < 7; i++) {
      history = step(history, i);
      const r = await guard.beforeModel({ sessionId: 's', messages: history });
      expectInvariants(history, r);
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.ceil(r.tokens) } });
      if (!r.compaction) continue;
      compactions++;
      const summary = r.compaction.summary ?? '';
      const titles = summary.match(/\[Summary batch \d+ of \d+ · [^\]]+\]/g) ?? [];
      expect(titles.length).toBeLessThanOrEqual(3);
      if (/summary batch(es)? left out here/.test(summary)) sawOmission = true;
    }
    expect(compactions).toBeGreaterThanOrEqual(6);
    expect(sawOmission).toBe(true);
    // The merged batch sits between the first and the last ones: left out, named, searchable.
    const summary = ev.last('compaction-end').summary ?? '';
    expect(summary).toMatch(/\[1 summary batch left out here \([^)]*~depth-\d[^)]*\)/);
    // The deeper batch is archived with its depth, holding the batch summaries it merged.
    const deep = (await guard.compactions('s')).flatMap((r) => r.archive).find((l) => l.includes('~depth-1'));
    expect(deep).toBeDefined();
    const merged = (await guard.recall('s', { id: deep as string, limit: 50 })).filter((m) => m.label === deep);
    expect(merged.length).toBeGreaterThanOrEqual(2);
    expect(merged.every((m) => m.role === 'summary' && m.header.startsWith('[depth:1|'))).toBe(true);
    // Every ticket, summarized or not, can be recalled.
    for (let i = 0; i < 10; i++) {
      const hits = await guard.recall('s', { query: `ticket TCK-${1000 + i}`, limit: 10 });
      expect(
        hits.some((h) => h.text.includes(`TCK-${1000 + i}`)),
        `TCK-${1000 + i}`,
      ).toBe(true);
    }
  });
});

describe('recall of a long output by id', () => {
  it('starts where the prompt cut it, pages on with offset, and keeps a recallMaxChars below the window share', async () => {
    const { guard } = setup({ archive: { recallMaxChars: 300 } });
    const marks = Array.from({ length: 200 }, (_, k) => `<mark ${k}> ${filler(`part ${k}`, 150)}`).join('\n');
    const messages: GuardMessage[] = [
      system('You are a coding agent.'),
      user('Read the log.'),
      ...toolStep('log_1', { path: 'build.log' }, marks),
      assistant('Read it.'),
      user('What failed?'),
    ];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.truncatedToolResults).toBe(1);
    const sent = JSON.stringify(r.messages);
    const [first] = await guard.recall('s', { id: 'log_1' });
    expect(first?.text.length).toBeLessThan(300 + 140);
    // The part the prompt lacks: a mark that is not in the prompt, right where its copy is cut.
    expect(first?.offset).toBeGreaterThan(0);
    const shownMark = /<mark (\d+)>/.exec(first?.text ?? '')?.[1];
    expect(shownMark).toBeDefined();
    expect(sent).not.toContain(`<mark ${shownMark}>`);
    const next = Number(/recall with offset (\d+) to read on/.exec(first?.text ?? '')?.[1]);
    expect(next).toBe((first?.offset ?? 0) + 300);
    const [second] = await guard.recall('s', { id: 'log_1', offset: next });
    expect(second?.offset).toBe(next);
    expect(second?.text).toContain(
      marks.slice(next - 'read_file returned:\n'.length, next - 'read_file returned:\n'.length + 100),
    );
  });
});

describe('the in-memory archive', () => {
  it('drops the least recently used session beyond archive.maxTotalChars, with an event naming it', async () => {
    const { guard, ev } = setup({ archive: { maxTotalChars: 30_000 } });
    for (const id of ['a', 'b', 'c', 'd']) {
      const r = await guard.beforeModel({ sessionId: id, messages: session(8) });
      expect(r.compaction).toBeDefined();
    }
    const evicted = ev.of('archive-evicted');
    expect(evicted.map((e) => e.sessionId)).toContain('a');
    expect(await guard.recall('a', { query: 'ERR_LEDGER_7731' })).toEqual([]);
    expect((await guard.recall('d', { query: 'ERR_LEDGER_7731' }))[0]?.text).toContain('ERR_LEDGER_7731');
  });
});

describe('reset', () => {
  it('drops the archive and the receipts with the rest of the session', async () => {
    const { guard } = setup();
    await guard.beforeModel({ sessionId: 's', messages: session(8) });
    expect((await guard.compactions('s')).length).toBe(1);
    await guard.reset('s');
    expect(await guard.compactions('s')).toEqual([]);
    expect(await guard.recall('s', { query: 'ERR_LEDGER_7731' })).toEqual([]);
  });
});

describe('an original larger than half the archive', () => {
  it('is archived as its head and tail, with a marker, and the rest of the batch is kept', async () => {
    const { guard } = setup({ archive: { maxChars: 40_000 } });
    const huge = `HEAD-OF-LOG ${'x'.repeat(200_000)} TAIL-OF-LOG`;
    const messages: GuardMessage[] = [
      system('You are a coding agent.'),
      user('Read the log.'),
      ...toolStep('big', { path: 'huge.log' }, huge),
      ...session(6).slice(2),
    ];
    await guard.beforeModel({ sessionId: 's', messages });
    const [item] = await guard.recall('s', { id: 'big', maxChars: 1_000_000 });
    expect(item?.chars).toBeLessThanOrEqual(20_100);
    expect(item?.text).toContain('HEAD-OF-LOG');
    expect(item?.text).toContain('TAIL-OF-LOG');
    expect(item?.text).toMatch(/characters omitted; too large to archive whole/);
    expect((await guard.recall('s', { query: 'ERR_LEDGER_7731' }))[0]?.text).toContain('ERR_LEDGER_7731');
  });
});
