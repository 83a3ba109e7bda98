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

  it('keeps the most recent messages that fit maxChars and counts the rest', () => {
    const many: GuardMessage[] = Array.from({ length: 100 }, (_, i) => ({ role: 'user', content: `message number ${i} ${'y'.repeat(50)}` }));
    const s = mechanicalSummary(many, { maxChars: 1000, previousSummary: 'PREVIOUS' });
    expect(s.length).toBeLessThanOrEqual(1000);
    expect(s).toContain('Previous summary:\nPREVIOUS');
    expect(s).toContain('message number 99 ');
    const omitted = /- \((\d+) earlier messages omitted\)/.exec(s);
    expect(omitted).not.toBeNull();
    const kept = s.split('\n').filter((l) => l.startsWith('- user:')).length;
    expect(Number(omitted![1]) + kept).toBe(100);
    // The kept lines are the most recent ones, in order.
    const first = 100 - kept;
    expect(s).toContain(`- user: message number ${first} `);
    expect(s).not.toContain(`- user: message number ${first - 1} `);
  });

  it('is unchanged when it already fits maxChars', () => {
    expect(mechanicalSummary(messages, { maxChars: 10_000 })).toBe(mechanicalSummary(messages));
  });

  it('never drops the previous summary, even when it alone exceeds maxChars', () => {
    const previous = 'p'.repeat(2000);
    const s = mechanicalSummary(messages, { maxChars: 1000, previousSummary: previous });
    expect(s).toContain(previous);
    expect(s).toContain('- (6 earlier messages omitted)');
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
