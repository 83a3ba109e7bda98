import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../../adapters/shared/bounded-map.ts';

describe('BoundedMap', () => {
  it('forgets the entry written longest ago once over its limit', () => {
    const map = new BoundedMap<string, number>(3);
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) map.set(key, i);
    expect([...map.keys()]).toEqual(['b', 'c', 'd']);
    expect(map.get('a')).toBeUndefined();
  });

  it('a write makes an entry the newest; a read does not', () => {
    const map = new BoundedMap<string, number>(3);
    map.set('a', 1).set('b', 2).set('c', 3);
    map.set('a', 10); // rewritten: newest
    map.get('b'); // read: order unchanged
    map.set('d', 4);
    expect([...map.entries()]).toEqual([
      ['c', 3],
      ['a', 10],
      ['d', 4],
    ]);
  });

  it('stays at its limit over many writes, and is a Map for whoever reads it', () => {
    const map = new BoundedMap<number, number>(100);
    for (let i = 0; i < 10_000; i++) map.set(i, i);
    expect(map.size).toBe(100);
    expect(map.has(9_900)).toBe(true);
    expect(map.has(9_899)).toBe(false);
    expect(map).toBeInstanceOf(Map);
  });

  it('rejects a limit that is not a positive integer', () => {
    for (const max of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => new BoundedMap(max)).toThrow(RangeError);
  });
});
