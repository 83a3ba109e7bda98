// Every in-process structure of the archive that grows with sessions or time has a bound (issue
// 22): the recall indexes (by characters, all sessions together), the writes a failing store left
// waiting (all sessions together), the receipts (summaries included). bench/tenancy.ts shows the
// heap per 1,000 sessions with the default and a small bound.
import { describe, expect, it } from 'vitest';
import { batchOf } from '../../src/archive/archive.ts';
import { RecallIndex } from '../../src/archive/recall.ts';
import { ArchiveStore, archiveKey, MAX_RECEIPT_CHARS, MemoryArchives, receiptChars } from '../../src/archive/store.ts';
import type { ArchiveBatch, ArchivedItem, CompactionReceipt, SessionArchive } from '../../src/archive/types.ts';
import type { StateStore } from '../../src/index.ts';

const text = (word: string, chars: number) => `${word} `.repeat(Math.ceil(chars / (word.length + 1))).slice(0, chars);

function batch(label: string, word: string, chars: number): ArchiveBatch {
  const item: ArchivedItem = {
    id: `${label}#1`,
    label,
    role: 'tool',
    text: text(word, chars),
    toolName: 'read',
    position: 1,
    replaced: 'placeholder',
  };
  return batchOf(label, 0, '', '', [item]);
}

const archiveOf = (batches: ArchiveBatch[], evicted = 0): SessionArchive => ({
  version: 1,
  batches,
  receipts: [],
  evicted,
});

describe('recall indexes', () => {
  it('hold at most indexChars characters, all sessions together, and rebuild a dropped one on demand', () => {
    const index = new RecallIndex(10_000, undefined, 50_000);
    const recall = (s: string, chars: number) =>
      index.recall(s, archiveOf([batch(`b-${s}`, `word${s}`, chars)]), { query: `word${s}` }, 1_000);
    for (let s = 0; s < 40; s++) {
      expect(recall(String(s), 5_000)).toHaveLength(1);
      expect(index.chars).toBeLessThanOrEqual(50_000);
    }
    expect(index.sessions).toBeLessThanOrEqual(10);
    // The first session's index was dropped; its next recall builds it again.
    expect(recall('0', 5_000)).toHaveLength(1);
    expect(index.chars).toBeLessThanOrEqual(50_000);
    // An archive larger than the whole bound is searched, not kept.
    expect(recall('big', 100_000)).toHaveLength(1);
    expect(index.chars).toBeLessThanOrEqual(50_000);
  });

  it('hold at most maxSessions sessions, the least recently recalled dropped first', () => {
    const index = new RecallIndex(3);
    const archives = new Map<string, SessionArchive>();
    const recall = (s: string) => {
      const archive = archives.get(s) ?? archiveOf([batch(`b-${s}`, `word${s}`, 100)]);
      archives.set(s, archive);
      return index.recall(s, archive, { query: `word${s}` }, 1_000);
    };
    for (const s of ['a', 'b', 'c']) expect(recall(s)).toHaveLength(1);
    expect(recall('a')).toHaveLength(1); // a is now the most recently recalled: b goes first
    expect(recall('d')).toHaveLength(1);
    expect(index.sessions).toBe(3);
    const chars = index.chars;
    expect(recall('a')).toHaveLength(1); // kept: nothing indexed again
    expect(index.chars).toBe(chars);
    expect(recall('b')).toHaveLength(1); // dropped: indexed again, c dropped in turn
    expect(index.sessions).toBe(3);
  });

  it('follow an archive as it changes: new batches indexed, evicted ones gone', () => {
    const index = new RecallIndex(10);
    const b1 = batch('b1', 'alpha', 1_000);
    const b2 = batch('b2', 'beta', 1_000);
    const b3 = batch('b3', 'gamma', 1_000);
    expect(index.recall('s', archiveOf([b1, b2]), { query: 'alpha' }, 1_000)).toHaveLength(1);
    expect(index.chars).toBe(2_000);
    const next = archiveOf([b2, b3], 1);
    expect(index.recall('s', next, { query: 'alpha' }, 1_000)).toEqual([]);
    expect(index.recall('s', next, { id: 'b1' }, 1_000)).toEqual([]);
    expect(index.recall('s', next, { query: 'gamma' }, 1_000).map((r) => r.label)).toEqual(['b3']);
    expect(index.recall('s', next, { query: 'beta' }, 1_000).map((r) => r.label)).toEqual(['b2']);
    expect(index.chars).toBe(2_000);
    // An archive that is not the indexed one grown (another store's copy): indexed anew.
    const other = archiveOf([b3, b1], 0);
    expect(index.recall('s', other, { query: 'alpha' }, 1_000).map((r) => r.label)).toEqual(['b1']);
    expect(index.recall('s', other, { query: 'beta' }, 1_000)).toEqual([]);
  });
});

/** A store whose every operation fails. */
const failing: StateStore<unknown> = {
  get: async () => {
    throw new Error('down');
  },
  set: async () => {
    throw new Error('down');
  },
  delete: async () => {
    throw new Error('down');
  },
};

const call = async <T>(_s: string, _op: string, run: () => Promise<T>) => {
  try {
    return { ok: true as const, value: await run() };
  } catch {
    return { ok: false as const };
  }
};

const receipt = (at: string, summaryChars: number): CompactionReceipt => ({
  at,
  reason: 'threshold',
  strategy: 'summary',
  steps: ['summary'],
  tokensBefore: 10_000,
  tokensAfter: 2_000,
  replaced: [],
  archive: [],
  summary: text('summary', summaryChars),
});

describe('writes a failing store left waiting', () => {
  it('hold at most maxTotalChars characters, all sessions together (the oldest dropped, with an event)', async () => {
    const events: Array<{ type: string; sessionId: string }> = [];
    const store = new ArchiveStore({
      store: failing,
      maxSessions: 10_000,
      maxTotalChars: 50_000,
      call,
      maxChars: 20_000,
      emit: (e) => events.push(e),
    });
    for (let s = 0; s < 100; s++) {
      await store.write(`s${s}`, [batch(`b${s}`, 'x', 10_000)], receipt(`t${s}`, 100));
      expect(store.waitingChars).toBeLessThanOrEqual(50_000);
    }
    expect(store.hasPending('s99')).toBe(true);
    expect(store.hasPending('s0')).toBe(false);
    expect(events.filter((e) => e.type === 'archive-evicted').map((e) => e.sessionId)).toContain('s0');
    // Many compactions of one session during the outage: its receipts are bounded too.
    for (let i = 0; i < 300; i++) await store.write('long', [], receipt(`r${i}`, 5_000));
    const waiting = await store.read('long');
    expect(waiting.receipts.reduce((n, r) => n + receiptChars(r), 0)).toBeLessThanOrEqual(MAX_RECEIPT_CHARS);
    expect(waiting.receipts.at(-1)?.at).toBe('r299');
  });
});

describe('receipts', () => {
  it('keep the newest summaries within MAX_RECEIPT_CHARS per session, and count in the in-memory bound', async () => {
    const archives = new MemoryArchives(10_000, 1_000_000, () => {});
    const store = new ArchiveStore({
      store: archives,
      maxSessions: 10_000,
      maxTotalChars: 1_000_000,
      call,
      maxChars: 0,
      emit: () => {},
    });
    for (let i = 0; i < 200; i++) await store.write('s', [], receipt(`r${i}`, 10_000));
    const stored = (await archives.get(archiveKey('s'))) as SessionArchive;
    expect(stored.receipts.reduce((n, r) => n + receiptChars(r), 0)).toBeLessThanOrEqual(MAX_RECEIPT_CHARS);
    expect(stored.receipts.at(-1)?.summary?.length).toBe(10_000);
    expect(stored.receipts.at(-1)?.at).toBe('r199');
    // The older receipts say what happened, without their summaries.
    expect(stored.receipts.length).toBeGreaterThan(9);
    expect(stored.receipts[0]?.summary).toBeUndefined();
    expect(archives.chars).toBeGreaterThan(0);
    expect(archives.chars).toBeLessThanOrEqual(MAX_RECEIPT_CHARS);
  });
});
