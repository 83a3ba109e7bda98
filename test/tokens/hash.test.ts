// The message hash sees every character of a text (long texts through their UTF-8 bytes, in four
// lanes) and every field messages are compared by, and the text hash keeps its FNV-1a values, which
// are stored with the guard's own messages.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GuardMessage, ToolResultPart } from '../../src/index.ts';
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

  it('tells a text from the same characters split differently between two fields', () => {
    const call = (toolCallId: string, toolName: string): GuardMessage => ({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId, toolName, input: {} }],
    });
    expect(hashMessage(call('ab', 'c'))).not.toBe(hashMessage(call('a', 'bc')));
    expect(hashMessage(call('a', 'b'))).not.toBe(hashMessage(call('b', 'a')));
  });

  it('tells a string from a value that prints the same', () => {
    const call = (input: unknown): GuardMessage => ({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 't', input }],
    });
    expect(hashMessage(call('{"a":1}'))).not.toBe(hashMessage(call({ a: 1 })));
    expect(hashMessage(call('1'))).not.toBe(hashMessage(call(1)));
    expect(hashMessage(call(undefined))).not.toBe(hashMessage(call('undefined')));
  });

  it('changes with every field messages are compared by, options included', () => {
    const part: ToolResultPart = {
      type: 'tool-result',
      toolCallId: 'c1',
      toolName: 'read_file',
      output: { type: 'text', value: long },
    };
    const h = hashMessage({ role: 'tool', content: [part] });
    expect(hashMessage(tool(long))).toBe(h);
    const variants: GuardMessage[] = [
      { role: 'tool', content: [part], providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } },
      { role: 'tool', content: [{ ...part, toolCallId: 'c2' }] },
      { role: 'tool', content: [{ ...part, toolName: 'write_file' }] },
      { role: 'tool', content: [{ ...part, output: { type: 'error-text', value: long } }] },
      { role: 'tool', content: [{ ...part, providerOptions: { x: { y: 1 } } }] },
      { role: 'tool', content: [part, part] },
      { role: 'user', content: long },
    ];
    for (const v of variants) expect(hashMessage(v)).not.toBe(h);
    const image = (mediaType: string): GuardMessage => ({
      role: 'user',
      content: [{ type: 'image', image: 'aGk=', mediaType }],
    });
    expect(hashMessage(image('image/png'))).not.toBe(hashMessage(image('image/jpeg')));
    const file = (filename: string): GuardMessage => ({
      role: 'user',
      content: [{ type: 'file', data: 'aGk=', mediaType: 'text/plain', filename }],
    });
    expect(hashMessage(file('a.txt'))).not.toBe(hashMessage(file('b.txt')));
  });

  it('ignores fields the guard does not compare messages by, and walks parts of unknown types whole', () => {
    const part = { type: 'text' as const, text: long };
    const h = hashMessage({ role: 'assistant', content: [part] });
    // An unknown field on a known part: the same message for the guard (see sameMessage).
    expect(hashMessage({ role: 'assistant', content: [{ ...part, id: 'msg_1' } as typeof part] })).toBe(h);
    const unknown = (value: string): GuardMessage => ({
      role: 'assistant',
      content: [{ type: 'citation', source: { url: value } } as unknown as typeof part],
    });
    expect(hashMessage(unknown('https://a.example'))).not.toBe(hashMessage(unknown('https://b.example')));
  });

  it('gives a message the same hash when a getter hashes another one meanwhile', () => {
    const plain = tool(long);
    let inner = 0;
    const sneaky = {
      role: 'tool',
      get content() {
        inner = hashMessage(tool(long.slice(1)));
        return plain.content;
      },
    } as unknown as GuardMessage;
    expect(hashMessage(sneaky)).toBe(hashMessage(plain));
    expect(inner).toBe(hashMessage(tool(long.slice(1))));
  });

  describe('values of unknown shape (tool inputs, JSON outputs)', () => {
    const call = (input: unknown): GuardMessage => ({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 't', input }],
    });
    const json = (value: unknown): GuardMessage => ({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 't', output: { type: 'json', value } }],
    });

    it('tells strings split differently, keys from values, and types that print the same', () => {
      const pairs: Array<[unknown, unknown]> = [
        [{ x: ['ab', 'c'] }, { x: ['a', 'bc'] }],
        [{ ab: 'c' }, { a: 'bc' }],
        [{ x: [null] }, { x: ['null'] }],
        [[{}], ['{}']],
        [[[]], ['[]']],
        [{ x: 1 }, { x: '1' }],
        [{ x: 1 }, { x: 1n }],
        [{ x: 1n }, { x: 2n }],
        [{ x: true }, { x: 'true' }],
        [
          ['a', ['b']],
          [['a'], 'b'],
        ],
      ];
      for (const [a, b] of pairs)
        expect(
          hashMessage(call(a)),
          JSON.stringify([a, b], (_, v) => String(v)),
        ).not.toBe(hashMessage(call(b)));
    });

    it('sees every character of a long string under a `data` key, unless it is media data', () => {
      const text = 'x'.repeat(200);
      const edited = `${text.slice(0, 100)}y${text.slice(101)}`;
      expect(hashMessage(call({ data: text }))).not.toBe(hashMessage(call({ data: edited })));
      expect(hashMessage(json({ rows: [{ data: text }] }))).not.toBe(hashMessage(json({ rows: [{ data: edited }] })));
      // Media data (an object with a media type, as in a `content` output) is sampled: length and head.
      const media = (data: string): GuardMessage => ({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 't',
            output: { type: 'content', value: [{ type: 'image-data', data, mediaType: 'image/png' }] },
          },
        ],
      });
      expect(hashMessage(media(text))).toBe(hashMessage(media(edited)));
      expect(hashMessage(media(text))).not.toBe(hashMessage(media(`y${text.slice(1)}`)));
    });
  });

  it("sees a character of a surrogate pair split by the boundary of the byte encoding's chunks", () => {
    const pad = 'a'.repeat(16_383);
    expect(hashMessage(tool(`${pad}\u{1F600} tail`))).not.toBe(hashMessage(tool(`${pad}\u{1F601} tail`)));
    expect(hashMessage(tool(`${pad}\u{1F600}${pad}\u{1F600}`))).not.toBe(
      hashMessage(tool(`${pad}\u{1F600}${pad}\u{1F601}`)),
    );
  });

  describe('properties', () => {
    const str = fc.string({ maxLength: 60 });
    const json = fc.jsonValue({ maxDepth: 3 });
    const part = fc.oneof(
      fc.record({ type: fc.constant('text'), text: str }),
      fc.record({ type: fc.constant('tool-call'), toolCallId: str, toolName: str, input: json }),
      fc.record({
        type: fc.constant('tool-result'),
        toolCallId: str,
        toolName: str,
        output: fc.record({ type: fc.constantFrom('text', 'json'), value: json }),
      }),
    );
    const message = fc.record({
      role: fc.constantFrom('user', 'assistant', 'tool'),
      content: fc.array(part, { maxLength: 3 }),
    }) as fc.Arbitrary<GuardMessage>;

    it('the same content in other objects hashes the same', () => {
      fc.assert(
        fc.property(message, (m) => {
          expect(hashMessage(structuredClone(m))).toBe(hashMessage(m));
        }),
        { numRuns: 500 },
      );
    });

    it('one character changed in any string (a text, an id, a JSON key or value) changes the hash', () => {
      fc.assert(
        fc.property(message, fc.nat(), fc.nat(), (m, pick, at) => {
          const strings: Array<{ get: () => string; set: (s: string) => void }> = [];
          const walk = (o: Record<string, unknown>) => {
            for (const k of Object.keys(o)) {
              const v = o[k];
              if (typeof v === 'string' && v.length > 0)
                strings.push({ get: () => o[k] as string, set: (s) => (o[k] = s) });
              else if (typeof v === 'object' && v !== null) walk(v as Record<string, unknown>);
            }
          };
          const copy = structuredClone(m) as unknown as Record<string, unknown>;
          walk(copy);
          fc.pre(strings.length > 0);
          const s = strings[pick % strings.length] as (typeof strings)[number];
          const old = s.get();
          const i = at % old.length;
          s.set(old.slice(0, i) + (old[i] === 'A' ? 'B' : 'A') + old.slice(i + 1));
          expect(hashMessage(copy as unknown as GuardMessage)).not.toBe(hashMessage(m));
        }),
        { numRuns: 500 },
      );
    });
  });
});
