// One task of a key at a time (KeyedLock.run): at once, without a promise, for a synchronous task of
// an idle key (the guard's common call); after the tasks before it otherwise.
import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../src/state/lock.ts';

describe('KeyedLock.run', () => {
  it('answers a synchronous task of an idle key at once, with its value', () => {
    const lock = new KeyedLock();
    expect(lock.run('a', () => 42)).toBe(42);
    // Nothing held afterwards: the next one runs at once too.
    expect(lock.run('a', () => 43)).toBe(43);
  });

  it('runs a task after the asynchronous one before it, and answers it as a promise', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    let finish = (): void => {};
    const first = lock.run('a', () => new Promise<string>((resolve) => (finish = () => resolve('first'))));
    const second = lock.run('a', () => {
      order.push('second');
      return 'second';
    });
    expect(second).toBeInstanceOf(Promise);
    await Promise.resolve();
    expect(order).toEqual([]);
    finish();
    expect(await first).toBe('first');
    expect(await second).toBe('second');
    expect(order).toEqual(['second']);
    // The key is idle again: synchronous at once.
    expect(lock.run('a', () => 'third')).toBe('third');
  });

  it('starts a task of the same key queued from inside a synchronous one after it', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    let inner: unknown;
    lock.run('a', () => {
      inner = lock.run('a', () => order.push('inner'));
      order.push('outer');
      return undefined;
    });
    expect(order).toEqual(['outer']);
    await inner;
    expect(order).toEqual(['outer', 'inner']);
  });

  it('runs another key from inside a synchronous task at once, as a promise', async () => {
    const lock = new KeyedLock();
    let inner: unknown;
    lock.run('a', () => {
      inner = lock.run('b', () => 'b');
      return undefined;
    });
    expect(inner).toBeInstanceOf(Promise);
    expect(await inner).toBe('b');
  });

  it('lets a synchronous throw through and holds nothing after it', () => {
    const lock = new KeyedLock();
    expect(() =>
      lock.run('a', () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(lock.run('a', () => 'next')).toBe('next');
  });

  it('keeps different keys apart: one waiting does not hold the other', async () => {
    const lock = new KeyedLock();
    let finish = (): void => {};
    const a = lock.run('a', () => new Promise<void>((resolve) => (finish = resolve)));
    expect(lock.run('b', () => 'b now')).toBe('b now');
    finish();
    await a;
  });
});
