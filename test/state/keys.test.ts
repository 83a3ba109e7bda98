// Store keys: any session id, any string, is encoded so that no id stands for another id or for
// another kind of record. The mapping is checked as a property (one-to-one, read back exactly),
// and through the guard on a shared in-memory store: a crafted session id (the archive's own key
// form) neither overwrites another session's archive and receipts nor reads them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStore, parseRecordKey, recordKey, type StateStore } from '../../src/index.ts';
import { expectIsolated } from './isolation.ts';

const KINDS = ['state', 'archive'] as const;
const anyId = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('\u001f', 'a', 'r', 'c', 'h', 'i', 'v', 'e', 's', 't', '\u0000', '{', '}') }),
  fc.constantFrom('', '\u001f', '\u001farchive\u001f', '\u001fstate\u001f', '\u001farchive\u001fx', 'x'),
);

describe('record keys', () => {
  it('are one-to-one over (kind, session id), and read back exactly', () => {
    fc.assert(
      fc.property(fc.constantFrom(...KINDS), anyId, fc.constantFrom(...KINDS), anyId, (k1, id1, k2, id2) => {
        expect(parseRecordKey(recordKey(k1, id1))).toEqual({ kind: k1, sessionId: id1 });
        if (k1 !== k2 || id1 !== id2) expect(recordKey(k1, id1)).not.toBe(recordKey(k2, id2));
      }),
      { numRuns: 2_000 },
    );
  });

  it("keep a session's state under its id when the id does not start with the mark (stores written before keep working)", () => {
    expect(recordKey('state', 'chat-42')).toBe('chat-42');
    expect(recordKey('archive', 'chat-42')).toBe('\u001farchive\u001fchat-42');
  });

  it('read back as nothing any string recordKey never makes', () => {
    for (const key of ['\u001f', '\u001fjunk\u001fx', '\u001fstate\u001fx', '\u001farchive']) {
      expect(parseRecordKey(key), JSON.stringify(key)).toBeUndefined();
    }
  });
});

describe('session isolation on a shared store, whatever the session id', () => {
  it("a crafted session id neither overwrites nor reads another session's archive and receipts (in-memory store)", async () => {
    await expectIsolated({ store: new MemoryStore() as StateStore<never> });
  });

  it('the same with the default store', async () => {
    await expectIsolated({});
  });
});
