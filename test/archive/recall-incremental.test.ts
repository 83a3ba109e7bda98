// A session's recall index is built in slices (issue 22: the first query on a 2M-character archive
// built the whole index at once, 1.5 s of CPU): a query indexes at most QUERY_INDEX_CHARS
// characters (a small archive whole), searches the index, and scans the items not indexed yet for
// the query's words exactly; they are indexed in the background, a slice of about SLICE_CHARS
// characters per turn of the event loop. Counted documents, not timings (bench/recall.ts times the
// first query).
import MiniSearch from 'minisearch';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_INDEXED_ITEM_CHARS, QUERY_INDEX_CHARS, RecallIndex, SLICE_CHARS } from '../../src/archive/recall.ts';
import type { ArchiveBatch, ArchivedItem, SessionArchive } from '../../src/archive/types.ts';

const item = (k: number, text: string): ArchivedItem => ({
  id: `call_${k}`,
  label: 'batch-1',
  role: 'tool',
  text,
  toolCallId: `call_${k}`,
  toolName: 'read_file',
  position: k,
  replaced: 'placeholder',
});

const batch = (label: string, items: ArchivedItem[]): ArchiveBatch => ({
  label,
  depth: 0,
  start: '',
  end: '',
  header: '[h]',
  items,
  chars: items.reduce((n, i) => n + i.text.length, 0),
});

const archiveOf = (batches: ArchiveBatch[], evicted = 0): SessionArchive => ({
  version: 1,
  batches,
  receipts: [],
  evicted,
});

/** 100 outputs of about 8,000 characters; output k holds `marker_k` and, from the 50th on, `ledger`. */
function outputs(count = 100): ArchivedItem[] {
  return Array.from({ length: count }, (_, k) => {
    const filler = `line ${k} of a long read with nothing in particular `.repeat(150);
    return item(k, `${k >= 50 ? 'ledger reconciliation ' : ''}marker_${k} ${filler}`);
  });
}

/** Documents added to any MiniSearch index while `run` runs (the spies call through). */
function documentsAdded(run: () => void): number {
  const add = vi.spyOn(MiniSearch.prototype, 'add');
  const addAll = vi.spyOn(MiniSearch.prototype, 'addAll');
  try {
    run();
    return add.mock.calls.length + addAll.mock.calls.reduce((sum, [docs]) => sum + docs.length, 0);
  } finally {
    vi.restoreAllMocks();
  }
}

/** Runs turns of the event loop until the session's index has nothing pending. */
async function settled(index: RecallIndex, sessionId = 's'): Promise<number> {
  let turns = 0;
  while (index.pendingChars(sessionId) > 0 && turns < 10_000) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    turns++;
  }
  return turns;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('recall index built in slices', () => {
  it("indexes at most one query's share of a large archive before it answers, and still finds an item by its word", () => {
    const archive = archiveOf([batch('batch-1', outputs())]);
    const index = new RecallIndex(10);
    let found: string[] = [];
    const added = documentsAdded(() => {
      found = index.recall('s', archive, { query: 'marker_3' }, 10_000).map((r) => r.id);
    });
    // One output of 8,000 characters (the whole archive was indexed before the first answer: 100).
    expect(added).toBeLessThanOrEqual(Math.floor(QUERY_INDEX_CHARS / 8_000));
    expect(index.pendingChars('s')).toBeGreaterThan(700_000);
    // The oldest output, not indexed yet, is found by its word.
    expect(found[0]).toBe('call_3');
  });

  it('ranks the items not indexed yet with the indexed ones, by the same words', () => {
    const archive = archiveOf([batch('batch-1', outputs())]);
    const index = new RecallIndex(10);
    const found = index.recall('s', archive, { query: 'ledger marker_60', limit: 10 }, 10_000).map((r) => r.id);
    // The output with both words first; then others with one of them.
    expect(found[0]).toBe('call_60');
    expect(found).toHaveLength(10);
    expect(found.every((id) => Number(id.slice(5)) >= 50)).toBe(true);
  });

  it('indexes the rest in the background, a bounded slice per turn, then matches near spellings everywhere', async () => {
    const archive = archiveOf([batch('batch-1', outputs())]);
    const index = new RecallIndex(10);
    // Not indexed yet: a near spelling is matched only where the index already reaches.
    expect(index.recall('s', archive, { query: 'recconciliation', limit: 50 }, 10_000).length).toBeLessThan(50);
    const turns = await settled(index);
    expect(index.pendingChars('s')).toBe(0);
    // At most one slice per turn: about SLICE_CHARS each.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(700_000 / Math.max(SLICE_CHARS, 8_000)) - 1);
    const added = documentsAdded(() => {
      expect(index.recall('s', archive, { query: 'recconciliation', limit: 50 }, 10_000)).toHaveLength(50);
    });
    expect(added).toBe(0);
  });

  it('adds a new batch to the index the same way, and never indexes an item too large for one slice', async () => {
    const index = new RecallIndex(10);
    const first = batch('batch-1', outputs(20));
    expect(index.recall('s', archiveOf([first]), { query: 'marker_1' }, 10_000)[0]?.id).toBe('call_1');
    await settled(index);
    const huge = item(500, `${'an enormous build log line '.repeat(2_000)} needle_in_the_log ${'tail '.repeat(100)}`);
    expect(huge.text.length).toBeGreaterThan(MAX_INDEXED_ITEM_CHARS);
    const next = archiveOf([first, batch('batch-2', [huge, item(501, 'ledger of the second batch')])]);
    const add = vi.spyOn(MiniSearch.prototype, 'add');
    expect(index.recall('s', next, { query: 'needle_in_the_log' }, 10_000)[0]?.id).toBe('call_500');
    // The small item of the new batch only (by the query or in the background): the large one is
    // scanned by every query instead.
    await settled(index);
    expect(add).toHaveBeenCalledTimes(1);
    vi.restoreAllMocks();
    expect(index.recall('s', next, { query: 'needle_in_the_log' }, 10_000)[0]?.id).toBe('call_500');
  });

  it('drops evicted batches whether their items were indexed or not', () => {
    const index = new RecallIndex(10);
    const b1 = batch('b1', outputs(30));
    const b2 = batch(
      'b2',
      outputs(30).map((it, k) => ({ ...it, id: `late_${k}`, text: it.text.replace(/marker_/g, 'late_') })),
    );
    expect(index.recall('s', archiveOf([b1, b2]), { query: 'late_3' }, 10_000)[0]?.id).toBe('late_3');
    // b1's items were never indexed (the newest come first): evicting them must not touch the index.
    const after = archiveOf([b2], 1);
    expect(index.recall('s', after, { query: 'marker' }, 10_000)).toEqual([]);
    expect(index.recall('s', after, { query: 'late_4' }, 10_000)[0]?.id).toBe('late_4');
    expect(index.pendingChars('s')).toBeLessThan(b2.chars);
  });
});

describe('recall index after evictions', () => {
  // MiniSearch 7.2.0 vacuums discarded documents on timers of its own when auto-vacuum is on; the
  // vacuum walks the term tree while documents are added (here, background slices), and a
  // TypeError it throws there is an unhandled rejection that ends the host's process
  // (lucaong/minisearch#306). The guard never lets a timer of a dependency run its index.
  it('never starts a vacuum of its own, and rebuilds an index whose discarded documents outnumber its live ones', () => {
    const performVacuuming = vi.spyOn(
      MiniSearch.prototype as unknown as { performVacuuming: () => Promise<void> },
      'performVacuuming',
    );
    const index = new RecallIndex(10);
    const batches = Array.from({ length: 60 }, (_, b) =>
      batch(`batch-${b}`, [item(b, `marker_${b} evicted or kept, a short output of step ${b}`)]),
    );
    const add = vi.spyOn(MiniSearch.prototype, 'add');
    const addAll = vi.spyOn(MiniSearch.prototype, 'addAll');
    const added = () => add.mock.calls.length + addAll.mock.calls.reduce((sum, [docs]) => sum + docs.length, 0);
    let rebuilt = 0;
    for (let evicted = 0; evicted < 55; evicted++) {
      const before = added();
      const found = index.recall(
        's',
        archiveOf(batches.slice(evicted), evicted),
        { query: `marker_${evicted + 3}` },
        10_000,
      );
      expect(found.map((f) => f.id)).toContain(`call_${evicted + 3}`);
      if (evicted > 0 && added() - before > 1) rebuilt++;
    }
    expect(performVacuuming).not.toHaveBeenCalled();
    // Rebuilt when the dirt passed the live documents: a handful of times, never on every eviction.
    expect(rebuilt).toBeGreaterThan(0);
    expect(rebuilt).toBeLessThan(10);
  });
});
