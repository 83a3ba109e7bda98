// The session id inside Redis keys (adapters/redis/keys.ts): one-to-one over any string, never a
// brace (the hash tag is the whole id), readable when plain, bounded when long.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeSessionId, redisKey } from '../../../adapters/redis/keys.ts';

const anyId = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({
    unit: fc.constantFrom('%', '{', '}', '~', '-', 'u', '2', '5', 'D', '8', '\ud800', '\udc00', 'x', '\u0000'),
  }),
  fc.string({ unit: fc.constantFrom('x', '%', '{'), minLength: 95, maxLength: 260 }),
);

describe('encodeSessionId', () => {
  it('is one-to-one and never contains a brace', () => {
    fc.assert(
      fc.property(anyId, anyId, (a, b) => {
        const ea = encodeSessionId(a);
        expect(ea).not.toMatch(/[{}]/);
        expect(ea.length).toBeGreaterThan(0);
        expect(ea.length).toBeLessThanOrEqual(200);
        if (a !== b) expect(ea).not.toBe(encodeSessionId(b));
      }),
      { numRuns: 5_000 },
    );
  });

  it('keeps plain ids as they are, escapes only what must be, and ends long ids in a hash', () => {
    expect(encodeSessionId('chat-42')).toBe('chat-42');
    expect(encodeSessionId('user:7/thread é 😀')).toBe('user:7/thread é 😀');
    expect(encodeSessionId('a{b}%c\u001f')).toBe('a%7Bb%7D%25c%1F');
    expect(encodeSessionId('\ud800x')).toBe('%uD800x');
    expect(encodeSessionId('')).toBe('%-');
    expect(encodeSessionId('x'.repeat(200))).toBe('x'.repeat(200));
    expect(encodeSessionId('x'.repeat(201))).toMatch(/^x{100}%~[0-9a-f]{32}$/);
    expect(redisKey('cg:', 'chat-42', 'state')).toBe('cg:{chat-42}:state');
  });
});
