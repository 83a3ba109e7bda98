// BoundedMap keeps the entry touched last in a slot in front of lru-cache (src/state/bounded.ts):
// whatever the sequence of reads, writes and deletes, it must answer exactly as a plain
// least-recently-used map of the same bound would, evicting the same keys in the same order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../src/state/bounded.ts';

/** The reference: keys in order of use, the least recently used first. */
class ReferenceLru {
  private readonly order: string[] = [];
  private readonly values = new Map<string, number>();
  private readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  get size(): number {
    return this.values.size;
  }
  private touch(key: string): void {
    const at = this.order.indexOf(key);
    if (at >= 0) this.order.splice(at, 1);
    this.order.push(key);
  }
  get(key: string): number | undefined {
    if (this.values.has(key)) this.touch(key);
    return this.values.get(key);
  }
  peek(key: string): number | undefined {
    return this.values.get(key);
  }
  has(key: string): boolean {
    return this.values.has(key);
  }
  set(key: string, value: number): void {
    this.values.set(key, value);
    this.touch(key);
    while (this.order.length > this.max) this.values.delete(this.order.shift() as string);
  }
  delete(key: string): void {
    this.values.delete(key);
    const at = this.order.indexOf(key);
    if (at >= 0) this.order.splice(at, 1);
  }
}

const key = fc.constantFrom('a', 'b', 'c', 'd', 'e');
const operation = fc.oneof(
  fc.record({ op: fc.constant('get' as const), key }),
  fc.record({ op: fc.constant('peek' as const), key }),
  fc.record({ op: fc.constant('has' as const), key }),
  fc.record({ op: fc.constant('set' as const), key, value: fc.integer() }),
  fc.record({ op: fc.constant('delete' as const), key }),
);

describe('BoundedMap', () => {
  it('answers every read as a least-recently-used map of the same bound, after any sequence of operations', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(operation, { maxLength: 60 }), (max, operations) => {
        const map = new BoundedMap<string, number>(max);
        const reference = new ReferenceLru(max);
        for (const o of operations) {
          if (o.op === 'set') {
            map.set(o.key, o.value);
            reference.set(o.key, o.value);
          } else if (o.op === 'delete') {
            map.delete(o.key);
            reference.delete(o.key);
          } else expect(map[o.op](o.key)).toEqual(reference[o.op](o.key));
          expect(map.size).toBe(reference.size);
        }
        // Every key, read without changing any order: the same entries survived.
        for (const k of ['a', 'b', 'c', 'd', 'e']) expect(map.peek(k)).toEqual(reference.peek(k));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the cache a value replaced in the slot before another key can evict or read it', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('a', 2); // held in the slot
    map.set('b', 1); // the slot's value goes to the cache first
    expect(map.peek('a')).toBe(2);
    map.get('a'); // a is the most recently used again: b goes when c comes
    map.set('c', 1);
    expect(map.has('b')).toBe(false);
    expect(map.get('a')).toBe(2);
  });
});
