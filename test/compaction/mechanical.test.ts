import { describe, it, expect } from 'vitest';
import type { GuardMessage } from '../../src/messages.ts';

/** Deterministic bytes that look like compressed image data. */
function noise(length: number): Buffer {
  let x = 2463534242;
  return Buffer.from(Array.from({ length }, () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x & 0xff)));
}
import { MECHANICAL_SUMMARY_PREFIX, mechanicalSummary } from '../../src/compaction/mechanical.ts';

const messages: GuardMessage[] = [
  { role: 'user', content: 'Please fix   the\nbuild' },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'secret thoughts' },
      { type: 'text', text: 'Looking.' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'src/a.ts' } },
    ],
  },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'text', value: 'x'.repeat(500) } }] },
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c2', toolName: 'bash', input: { command: 'npm run build' } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c2', toolName: 'bash', output: { type: 'error-text', value: 'TS2304: Cannot find name foo' } }] },
  { role: 'assistant', content: 'Found it.' },
];

describe('mechanicalSummary', () => {
  it('lists each message by role, cut to its first 200 characters', () => {
    const s = mechanicalSummary(messages);
    expect(s.split('\n')).toEqual([
      `${MECHANICAL_SUMMARY_PREFIX} the summarizer was unavailable, so the earlier messages are listed by role, each cut to its first 200 characters.]`,
      '',
      'Messages:',
      '- user: Please fix the build',
      '- assistant: Looking.',
      '- assistant called read_file({"path":"src/a.ts"})',
      `- tool read_file returned: ${'x'.repeat(200)}…`,
      '- assistant called bash({"command":"npm run build"})',
      '- tool bash returned an error: TS2304: Cannot find name foo',
      '- assistant: Found it.',
    ]);
    expect(s).not.toContain('secret thoughts');
  });

  it('is deterministic', () => {
    expect(mechanicalSummary(messages, { previousSummary: 'p', maxChars: 400 })).toBe(
      mechanicalSummary(structuredClone(messages), { previousSummary: 'p', maxChars: 400 }),
    );
  });

  it('honours charsPerMessage', () => {
    const s = mechanicalSummary(messages, { charsPerMessage: 10 });
    expect(s).toContain(`- tool read_file returned: ${'x'.repeat(10)}…`);
    expect(s).toContain('first 10 characters');
  });

  it('keeps the previous summary at the top', () => {
    const previous = '## Task state\nMigrating the DB.\n\n## Files\n- db/schema.sql';
    const s = mechanicalSummary(messages, { previousSummary: previous });
    const lines = s.split('\n');
    expect(lines[0]!.startsWith(MECHANICAL_SUMMARY_PREFIX)).toBe(true);
    expect(s).toContain(`Previous summary:\n${previous}\n\nMessages since then:\n- user: Please fix the build`);
  });

  it('is unchanged when it already fits maxChars', () => {
    expect(mechanicalSummary(messages, { maxChars: 10_000 })).toBe(mechanicalSummary(messages));
  });

  it('labels media and strips inline base64', () => {
    const base64 = noise(3000).toString('base64');
    const s = mechanicalSummary([
      { role: 'user', content: [{ type: 'image', image: base64, mediaType: 'image/png' }, { type: 'text', text: 'see' }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'get', output: { type: 'text', value: base64 } }] },
    ]);
    expect(s).toContain('- user: [image: image/png] see');
    expect(s).toContain('- tool get returned: [base64 data: 4,000 characters]');
    expect(s).not.toContain(base64.slice(0, 100));
  });

  it('handles no messages', () => {
    expect(mechanicalSummary([]).split('\n').slice(1)).toEqual(['', 'Messages:']);
  });
});
