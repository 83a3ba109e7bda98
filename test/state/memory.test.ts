import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/index.ts';

describe('MemoryStore', () => {
  it('gets, sets and deletes', async () => {
    const store = new MemoryStore<number>();
    expect(await store.get('a')).toBeUndefined();
    await store.set('a', 1);
    expect(await store.get('a')).toBe(1);
    await store.delete('a');
    expect(await store.get('a')).toBeUndefined();
  });

  it('evicts the least recently used session beyond its bound', async () => {
    const store = new MemoryStore<number>({ maxSessions: 2 });
    await store.set('a', 1);
    await store.set('b', 2);
    await store.get('a'); // a is now the most recently used
    await store.set('c', 3);
    expect(await store.get('b')).toBeUndefined();
    expect(await store.get('a')).toBe(1);
    expect(await store.get('c')).toBe(3);
    expect(store.size).toBe(2);
  });

  it('rejects a bound that is not a whole positive number', () => {
    expect(() => new MemoryStore({ maxSessions: 0 })).toThrow(/maxSessions/);
  });
});
