// Recall answers in milliseconds whatever the query (issue 22): near spellings cost a walk of the
// index's term tree, so they are bounded: at most two edits, and a time budget per query past which
// the remaining terms match exactly. bench/recall.ts times the worst query on a 2M-character archive.
import { describe, expect, it } from 'vitest';
import { RecallIndex } from '../../src/archive/recall.ts';
import type { ArchivedItem, SessionArchive } from '../../src/archive/types.ts';

const item = (id: string, text: string): ArchivedItem => ({
  id,
  label: 'batch-1',
  role: 'tool',
  text,
  toolCallId: id,
  toolName: 'read',
  position: 1,
  replaced: 'placeholder',
});

const archiveOf = (items: ArchivedItem[]): SessionArchive => ({
  version: 1,
  batches: [{ label: 'batch-1', depth: 0, start: '', end: '', header: '[h]', items, chars: 0 }],
  receipts: [],
  evicted: 0,
});

const archive = archiveOf([
  item('a', 'the quarterly ledger reconciliation finished without errors'),
  item('b', 'supercalifragilisticexpialidocious appears in this output once'),
  item('c', 'nothing to see here'),
]);

describe('recall fuzzy budget', () => {
  it('matches a near spelling while the budget lasts, and exactly once it is spent', () => {
    const generous = new RecallIndex(10, 1_000);
    expect(generous.recall('s', archive, { query: 'ledgr' }, 10_000).map((r) => r.id)).toEqual(['a']);
    const spent = new RecallIndex(10, 0);
    expect(spent.recall('s', archive, { query: 'ledgr' }, 10_000)).toEqual([]);
    expect(spent.recall('s', archive, { query: 'ledger' }, 10_000).map((r) => r.id)).toEqual(['a']);
  });

  it('allows at most two edits, however long the word (a fifth of 34 letters was six)', () => {
    const index = new RecallIndex(10, 1_000);
    // Three letters changed: too far.
    expect(index.recall('s', archive, { query: 'supercalifragilisticexpialidoXXXXs' }, 10_000)).toEqual([]);
    // Two: still found.
    expect(
      index.recall('s', archive, { query: 'supercalifragilisticexpialidocioXX' }, 10_000).map((r) => r.id),
    ).toEqual(['b']);
  });

  it('ranks as one query: documents matching more of the terms first', () => {
    const index = new RecallIndex(10, 1_000);
    const found = index.recall('s', archive, { query: 'ledger errors nothing' }, 10_000).map((r) => r.id);
    expect(found).toEqual(['a', 'c']);
  });
});
