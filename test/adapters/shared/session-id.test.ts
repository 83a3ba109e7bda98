import { describe, expect, it, vi } from 'vitest';
import { deriveSessionId, hostSessionId, resolveSessionId } from '../../../adapters/shared/session-id.ts';

describe('hostSessionId', () => {
  it('takes non-empty strings as they are and finite numbers as their string', () => {
    expect(hostSessionId('thread-1')).toBe('thread-1');
    expect(hostSessionId(42)).toBe('42');
    expect(hostSessionId(0)).toBe('0');
    expect(hostSessionId(-3.5)).toBe('-3.5');
  });

  it('names no session for anything else', () => {
    for (const value of ['', undefined, null, Number.NaN, Number.POSITIVE_INFINITY, 1n, true, {}, ['a'], () => 'a']) {
      expect(hostSessionId(value), String(value)).toBeUndefined();
    }
  });
});

describe('resolveSessionId', () => {
  const derive = () => 'auto:derived';

  it('the option first: a fixed id, or what its function returns for the context', () => {
    expect(resolveSessionId({ option: 'fixed', hostId: 'thread', derive })).toBe('fixed');
    const option = vi.fn((context: { user: string }) => `user-${context.user}`);
    expect(resolveSessionId({ option, context: { user: 'u7' }, hostId: 'thread', derive })).toBe('user-u7');
    expect(option).toHaveBeenCalledWith({ user: 'u7' });
  });

  it("then the host's id (a string or a number), then the derived id", () => {
    expect(resolveSessionId({ hostId: 'thread', derive })).toBe('thread');
    expect(resolveSessionId({ hostId: 42, derive })).toBe('42');
    expect(resolveSessionId({ hostId: '', derive })).toBe('auto:derived');
    expect(resolveSessionId({ hostId: { id: 1 }, derive })).toBe('auto:derived');
    expect(resolveSessionId({ option: '', hostId: undefined, derive })).toBe('auto:derived');
  });

  it('an option function that names nothing falls through; one that returns a number names its string', () => {
    expect(resolveSessionId({ option: () => undefined, hostId: 'thread' })).toBe('thread');
    expect(resolveSessionId({ option: () => '', hostId: 'thread' })).toBe('thread');
    expect(resolveSessionId({ option: (() => 7) as never, hostId: 'thread' })).toBe('7');
  });

  it('an option function that throws is reported and falls through: no throw at call time', () => {
    const onError = vi.fn();
    const failure = new Error('no user');
    const option = () => {
      throw failure;
    };
    expect(resolveSessionId({ option, hostId: 'thread', derive, onError })).toBe('thread');
    expect(onError).toHaveBeenCalledWith(failure);
    expect(resolveSessionId({ option, derive })).toBe('auto:derived');
  });

  it('undefined only when no source names a session; the derived id is computed only when needed', () => {
    expect(resolveSessionId({})).toBeUndefined();
    expect(resolveSessionId({ derive: () => undefined })).toBeUndefined();
    const lazy = vi.fn(derive);
    resolveSessionId({ hostId: 'thread', derive: lazy });
    expect(lazy).not.toHaveBeenCalled();
  });
});

describe('deriveSessionId', () => {
  const system = { role: 'system', content: 'You are terse.' };
  const first = { role: 'user', content: [{ type: 'text', text: 'Fix the bug.' }] };

  it('the same for every call of one conversation: only its system messages and first user message count', () => {
    const id = deriveSessionId([system, first]);
    expect(id).toMatch(/^auto:[0-9a-f]{16}$/);
    expect(
      deriveSessionId([system, first, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }]),
    ).toBe(id);
    expect(deriveSessionId([system, { ...first, content: [{ type: 'text', text: 'Fix another bug.' }] }])).not.toBe(id);
  });

  it('never throws on what a host may send', () => {
    const cyclic: Record<string, unknown> = { role: 'user' };
    cyclic['content'] = cyclic;
    for (const prompt of [[], [null], [cyclic], 'not an array', [{ role: 'user', content: new Uint8Array(10_000) }]]) {
      expect(deriveSessionId(prompt as never)).toMatch(/^auto:[0-9a-f]{16}$/);
    }
  });
});

describe('deriveSessionId with binary data', () => {
  it('reads a Buffer image by its size and first bytes, as a Uint8Array, never as a JSON array of every byte', () => {
    const bytes = Buffer.alloc(2_000_000, 7);
    const seen: unknown[] = [];
    // Buffer's own toJSON would turn it into an array of two million numbers before any replacer saw it.
    const original = Buffer.prototype.toJSON;
    Buffer.prototype.toJSON = function (this: Buffer) {
      seen.push(this);
      return original.call(this);
    };
    try {
      const asBuffer = deriveSessionId([{ role: 'user', content: [{ type: 'image', image: bytes }] }]);
      const asArray = deriveSessionId([{ role: 'user', content: [{ type: 'image', image: new Uint8Array(bytes) }] }]);
      expect(seen).toEqual([]);
      expect(asBuffer).toBe(asArray);
    } finally {
      Buffer.prototype.toJSON = original;
    }
  });
});
