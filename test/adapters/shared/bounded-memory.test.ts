// What an adapter remembers per session, run or tool call lives in lru-cache maps bounded by count
// (`new LRUCache(atMostEntries(n))`). The adapters read them with `peek`, so the order is the order of writes:
// every adapter writes on each call it sees. These are the properties they rely on.
import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { atMostEntries } from '../../../adapters/shared/bounded.ts';

describe('the adapters’ bounded memory (lru-cache, read with peek)', () => {
  it('forgets the entry written longest ago once over its limit', () => {
    const map = new LRUCache<string, number>(atMostEntries(3));
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) map.set(key, i);
    expect([...map.rkeys()]).toEqual(['b', 'c', 'd']);
    expect(map.peek('a')).toBeUndefined();
  });

  it('a write makes an entry the newest; a read does not', () => {
    const map = new LRUCache<string, number>(atMostEntries(3));
    map.set('a', 1).set('b', 2).set('c', 3);
    map.set('a', 10); // rewritten: newest
    map.peek('b'); // read: order unchanged
    map.set('d', 4);
    expect([...map.rentries()]).toEqual([
      ['c', 3],
      ['a', 10],
      ['d', 4],
    ]);
  });

  it('takes memory as it fills, not all at once (no arrays of `max` entries made up front)', () => {
    const map = new LRUCache<string, number>(atMostEntries(1_000_000_000));
    map.set('a', 1);
    expect(map.size).toBe(1);
  });

  it('stays at its limit over many writes', () => {
    const map = new LRUCache<number, number>(atMostEntries(100));
    for (let i = 0; i < 10_000; i++) map.set(i, i);
    expect(map.size).toBe(100);
    expect(map.has(9_900)).toBe(true);
    expect(map.has(9_899)).toBe(false);
  });

  it('rejects a limit that is not a positive integer', () => {
    for (const max of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => new LRUCache(atMostEntries(max))).toThrow(TypeError);
  });
});
