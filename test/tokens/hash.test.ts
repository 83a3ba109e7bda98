// The message hash sees every character of a text (long texts through their UTF-8 bytes, in four
// lanes), and the text hash keeps its FNV-1a values, which are stored with the guard's own messages.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../src/index.ts';
import { hashMessage, hashText } from '../../src/tokens/hash.ts';

const tool = (value: string): GuardMessage => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'text', value } }],
});

/** `text` with the character at `i` replaced. */
const changedAt = (text: string, i: number): string =>
  text.slice(0, i) + (text[i] === 'x' ? 'y' : 'x') + text.slice(i + 1);

describe('hashText', () => {
  it('is FNV-1a, character by character (stored hashes of earlier versions still match)', () => {
    expect(hashText('')).toBe(0x811c9dc5);
    expect(hashText('a')).toBe(0xe40c292c);
    expect(hashText('foobar')).toBe(0xbf9cf968);
  });
});

describe('hashMessage', () => {
  const long = Array.from({ length: 300 }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join('');

  it('is the same for the same content, in another object', () => {
    expect(hashMessage(tool(long))).toBe(hashMessage(structuredClone(tool(long))));
  });

  it('changes with any one character of a long text, in every lane and the tail', () => {
    const base = hashMessage(tool(long));
    const seen = new Set([base]);
    for (let i = 0; i < long.length; i++) {
      const h = hashMessage(tool(changedAt(long, i)));
      expect(h).not.toBe(base);
      seen.add(h);
    }
    expect(seen.size).toBe(long.length + 1);
  });

  it('changes with a character past a chunk of the byte encoding, and with the length alone', () => {
    const huge = long.repeat(200); // 60,000 characters: several chunks
    const base = hashMessage(tool(huge));
    for (const i of [0, 16_383, 16_384, 30_000, huge.length - 1])
      expect(hashMessage(tool(changedAt(huge, i)))).not.toBe(base);
    expect(hashMessage(tool(`${huge} `))).not.toBe(base);
    expect(hashMessage(tool(`${long}\u0000`))).not.toBe(hashMessage(tool(long)));
  });

  it('tells non-ASCII texts and lone surrogates apart', () => {
    const text = `${'é'.repeat(40)}漢字 🙂 ${long}`;
    expect(hashMessage(tool(changedAt(text, 45)))).not.toBe(hashMessage(tool(text)));
    // A lone surrogate and the replacement character UTF-8 would encode it as.
    expect(hashMessage(tool(`${long}\ud800`))).not.toBe(hashMessage(tool(`${long}\ufffd`)));
    expect(hashMessage(tool(`${long}\ud800`))).not.toBe(hashMessage(tool(`${long}\udbff`)));
  });

  it('tells a text from the same characters moved between fields', () => {
    const a: GuardMessage = {
      role: 'assistant',
      content: [
        { type: 'text', text: long },
        { type: 'text', text: '' },
      ],
    };
    const b: GuardMessage = {
      role: 'assistant',
      content: [
        { type: 'text', text: '' },
        { type: 'text', text: long },
      ],
    };
    expect(hashMessage(a)).not.toBe(hashMessage(b));
  });
});
