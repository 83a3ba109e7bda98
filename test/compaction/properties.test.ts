import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import type { GuardMessage } from '../../src/messages.ts';
import { renderTranscript } from '../../src/compaction/prompt.ts';
import { mechanicalSummary } from '../../src/compaction/mechanical.ts';
import { extractFileOps } from '../../src/compaction/file-ops.ts';
import { clipMiddle } from '../../src/compaction/text.ts';

const text = fc.string({ unit: 'grapheme', maxLength: 400 });
const anyText = fc.oneof(fc.string({ maxLength: 400 }), fc.string({ unit: 'binary', maxLength: 400 }), text);

const message: fc.Arbitrary<GuardMessage> = fc.oneof(
  anyText.map((t): GuardMessage => ({ role: 'user', content: t })),
  anyText.map((t): GuardMessage => ({ role: 'assistant', content: [{ type: 'text', text: t }] })),
  fc.record({ id: anyText, name: anyText, input: fc.jsonValue() }).map(
    ({ id, name, input }): GuardMessage => ({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: id, toolName: name, input }],
    }),
  ),
  fc.record({ id: anyText, name: anyText, value: anyText, error: fc.boolean() }).map(
    ({ id, name, value, error }): GuardMessage => ({
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: id, toolName: name, output: { type: error ? 'error-text' : 'text', value } },
      ],
    }),
  ),
  fc.record({ id: anyText, name: anyText, value: fc.jsonValue() }).map(
    ({ id, name, value }): GuardMessage => ({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: id, toolName: name, output: { type: 'json', value } }],
    }),
  ),
);

describe('compaction text properties', () => {
  it('renderTranscript and mechanicalSummary never throw; the digest respects maxChars ≥ 1000', () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 30 }),
        fc.integer({ min: 1000, max: 20_000 }),
        fc.integer({ min: 0, max: 5000 }),
        fc.option(fc.string({ maxLength: 200 }), { nil: undefined }),
        (messages, maxChars, maxToolResultChars, previousSummary) => {
          const transcript = renderTranscript(messages, { maxToolResultChars });
          // Exactly one opening and one closing delimiter, at the ends.
          expect(transcript.match(/<\s*\/?\s*conversation/gi)).toEqual(['<conversation', '</conversation']);
          const digest = mechanicalSummary(messages, { maxChars, previousSummary });
          expect(digest.length).toBeLessThanOrEqual(maxChars);
          expect(mechanicalSummary(messages, { maxChars, previousSummary })).toBe(digest);
          extractFileOps(messages);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('clipMiddle keeps at most maxChars of the text and reports the exact remainder', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 3000 }), fc.integer({ min: 0, max: 3000 }), (s, max) => {
        const clipped = clipMiddle(s, max);
        if (s.length <= max) {
          expect(clipped).toBe(s);
          return;
        }
        const m = /\n\[\.\.\. ([\d,]+) characters omitted \.\.\.\]\n/.exec(clipped);
        expect(m).not.toBeNull();
        const kept = clipped.length - m![0].length;
        expect(kept).toBeLessThanOrEqual(max);
        expect(kept + Number(m![1]!.replace(/,/g, ''))).toBe(s.length);
        expect(s.startsWith(clipped.slice(0, m!.index))).toBe(true);
        expect(s.endsWith(clipped.slice(m!.index + m![0].length))).toBe(true);
      }),
    );
  });
});
