import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  MECHANICAL_SUMMARY_PREFIX,
  MECHANICAL_USER_FLOOR_CHARS,
  mechanicalDigest,
  mechanicalSummary,
} from '../../src/compaction/mechanical.ts';
import type { GuardMessage } from '../../src/messages.ts';
import { filler, turn } from './builders.ts';

/** Deterministic bytes that look like compressed image data. */
function noise(length: number): Buffer {
  let x = 2463534242;
  return Buffer.from(Array.from({ length }, () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x & 0xff)));
}

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
  {
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: 'c1',
        toolName: 'read_file',
        output: { type: 'text', value: 'x'.repeat(500) },
      },
    ],
  },
  {
    role: 'assistant',
    content: [{ type: 'tool-call', toolCallId: 'c2', toolName: 'bash', input: { command: 'npm run build' } }],
  },
  {
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: 'c2',
        toolName: 'bash',
        output: { type: 'error-text', value: 'TS2304: Cannot find name foo' },
      },
    ],
  },
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
      {
        role: 'user',
        content: [
          { type: 'image', image: base64, mediaType: 'image/png' },
          { type: 'text', text: 'see' },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'get', output: { type: 'text', value: base64 } }],
      },
    ]);
    expect(s).toContain('- user: [image: image/png] see');
    expect(s).toContain('- tool get returned: [base64 data: 4,000 characters]');
    expect(s).not.toContain(base64.slice(0, 100));
  });

  it('handles no messages', () => {
    expect(mechanicalSummary([]).split('\n').slice(1)).toEqual(['', 'Messages:']);
  });
});

// ---------------------------------------------------------------------------------------------
// A digest over its budget: what it keeps of each entry shrinks, tool output
// and assistant text go before anything the user said, and the start of every user message
// survives; when even that cannot fit, the digest counts the user messages it lost.
// ---------------------------------------------------------------------------------------------

const userLines = (digest: string) => digest.split('\n').filter((l) => l.startsWith('- user: '));
const toolLines = (digest: string) => digest.split('\n').filter((l) => l.startsWith('- tool '));
const assistantLines = (digest: string) => digest.split('\n').filter((l) => l.startsWith('- assistant'));

/** 400 user messages, each with a unique fact at its start, between assistant steps with tool output: 801 messages. */
function factSession(): GuardMessage[] {
  const out: GuardMessage[] = [{ role: 'assistant', content: 'Hello, what can I do?' }];
  for (let i = 0; i < 400; i++) {
    out.push({
      role: 'user',
      content: `fact-${i}: the deploy key of service ${i} lives in vault path kv/${i}. ${filler(250)}`,
    });
    out.push({
      role: 'assistant',
      content: [
        { type: 'text', text: `Noted fact ${i}. ${filler(200)}` },
        { type: 'tool-call', toolCallId: `v${i}`, toolName: 'vault_read', input: { path: `kv/${i}` } },
        {
          type: 'tool-result',
          toolCallId: `v${i}`,
          toolName: 'vault_read',
          output: { type: 'text', value: filler(1500) },
        },
      ],
    });
  }
  return out;
}

const factsIn = (digest: string) =>
  Array.from({ length: 400 }, (_, i) => i).filter((i) => digest.includes(`- user: fact-${i}: `));

describe('mechanicalDigest over its budget', () => {
  it('the issue scenario at a 4k window: 17 messages, every user request kept whole, tool output shrunk first', () => {
    const history = [0, 1, 2, 3]
      .flatMap((i) => turn(i, 120, 3000))
      .concat({ role: 'user', content: `request-4: ${filler(120)}` });
    expect(history).toHaveLength(17);
    // What the summarizer's fallback gets at a 4k window: 1.5 × the 400-token summary budget at 0.375 tokens a
    // character.
    const maxChars = 1600;
    const d = mechanicalDigest(history, { maxChars });
    expect(d.text.length).toBeLessThanOrEqual(maxChars);
    for (let i = 0; i <= 4; i++) expect(d.text).toContain(`- user: request-${i}: ${filler(120)}`);
    expect(d.lostUserMessages).toBe(0);
    expect(d.text).not.toContain('could not be kept');
    // The tool output went first: no file content is left while the user's words are whole.
    expect(d.text).not.toMatch(/- tool read_file returned: file/);
    expect(d.text.startsWith(MECHANICAL_SUMMARY_PREFIX)).toBe(true);
    expect(mechanicalSummary(history, { maxChars })).toBe(d.text);
  });

  it('the issue scenario at a 16k window: 801 messages, the most recent user facts kept, the lost ones counted', () => {
    const history = factSession();
    expect(history).toHaveLength(801);
    // The budget of a fallback at a 16k window (the room under the target, in characters).
    const maxChars = 9257;
    const d = mechanicalDigest(history, { maxChars });
    expect(d.text.length).toBeLessThanOrEqual(maxChars);
    const kept = factsIn(d.text);
    // 400 starts of 60 characters need ~28k characters: not all fit, but far more than the 41 whole messages kept
    // before.
    expect(kept.length).toBeGreaterThan(100);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, k) => 400 - kept.length + k));
    expect(d.lostUserMessages).toBe(400 - kept.length);
    expect(d.lostMessages).toBeGreaterThanOrEqual(d.lostUserMessages);
    expect(d.text).toContain(`- (${400 - kept.length} earlier user messages could not be kept)`);
    // Everything else went before any user message did.
    expect(toolLines(d.text)).toEqual([]);
    expect(assistantLines(d.text)).toEqual([]);
    // Each kept user message keeps at least its start.
    for (const line of userLines(d.text))
      expect(line.length).toBeGreaterThanOrEqual('- user: '.length + MECHANICAL_USER_FLOOR_CHARS);
  });

  it('keeps every one of 400 user facts whenever their starts fit the budget', () => {
    const history = factSession();
    // Each user line at its floor: the label, the start, an ellipsis and a line break.
    const floorCost = 400 * ('- user: '.length + MECHANICAL_USER_FLOOR_CHARS + 2);
    for (const maxChars of [floorCost + 600, floorCost + 5_000, floorCost * 2, floorCost * 4, 400_000]) {
      const d = mechanicalDigest(history, { maxChars });
      expect(d.text.length, `maxChars ${maxChars}`).toBeLessThanOrEqual(maxChars);
      expect(factsIn(d.text), `maxChars ${maxChars}`).toHaveLength(400);
      expect(d.lostUserMessages).toBe(0);
    }
  });

  it('drops tool output, then assistant text, before it shortens what the user said', () => {
    const history = [...turn(0, 150, 2000), ...turn(1, 150, 2000), ...turn(2, 150, 2000)];
    const whole = mechanicalDigest(history).text;
    let sawToolsGone = false;
    let sawAssistantGone = false;
    for (let maxChars = whole.length; maxChars >= 600; maxChars -= 25) {
      const d = mechanicalDigest(history, { maxChars });
      expect(d.text.length).toBeLessThanOrEqual(maxChars);
      const users = userLines(d.text);
      const usersWhole = users.length === 3 && users.every((l, i) => l === `- user: request-${i}: ${filler(150)}`);
      const toolContent = toolLines(d.text).some((l) => l.includes('returned: '));
      // While any tool output is left, every user line is whole; while any assistant line is left, too.
      if (toolContent) expect(usersWhole, `maxChars ${maxChars}`).toBe(true);
      if (assistantLines(d.text).length > 0) expect(usersWhole, `maxChars ${maxChars}`).toBe(true);
      if (!toolContent) sawToolsGone = true;
      if (assistantLines(d.text).length === 0) sawAssistantGone = true;
      // The start of each user message survives at every budget tried here.
      for (let i = 0; i < 3; i++)
        expect(d.text).toContain(`- user: request-${i}: ${filler(150).slice(0, MECHANICAL_USER_FLOOR_CHARS - 12)}`);
      expect(d.lostUserMessages).toBe(0);
    }
    expect(sawToolsGone && sawAssistantGone).toBe(true);
  });

  it('shortens tool output to a size label before it drops the line', () => {
    const history = [...turn(0, 50, 30_000), ...turn(1, 50, 12_345)];
    const plain = mechanicalDigest(history).text;
    // Room for everything but the tool output's text.
    const d = mechanicalDigest(history, { maxChars: plain.length - 300 });
    expect(d.text).toMatch(/- tool read_file returned \([\d,]+ characters\)/);
    expect(d.lostMessages).toBe(0);
  });

  it('keeps a previous summary whole when it and the user messages fit, and clips its middle when it does not', () => {
    const history = [...turn(0, 150, 2000), ...turn(1, 150, 2000)];
    const previous = `## Task state\nMigrating the DB. ${filler(2000)}\n## User guidance\nNever touch prod.`;
    const fits = mechanicalDigest(history, { maxChars: 3000, previousSummary: previous });
    expect(fits.text.length).toBeLessThanOrEqual(3000);
    expect(fits.text).toContain(previous);
    expect(userLines(fits.text)).toHaveLength(2);

    const huge = `## Task state\nMigrating the DB. ${filler(50_000)}\n## User guidance\nNever touch prod.`;
    const clipped = mechanicalDigest(history, { maxChars: 3000, previousSummary: huge });
    expect(clipped.text.length).toBeLessThanOrEqual(3000);
    expect(clipped.text).toContain('## Task state\nMigrating the DB.');
    expect(clipped.text).toContain('Never touch prod.');
    expect(clipped.text).toMatch(/characters omitted/);
    for (let i = 0; i < 2; i++) expect(clipped.text).toContain(`- user: request-${i}: `);
  });

  it('folds a previous mechanical digest into one list, so a chain of fallbacks keeps the older user lines first', () => {
    const first = [...turn(0, 150, 2000), ...turn(1, 150, 2000)];
    const second = [...turn(2, 150, 2000), ...turn(3, 150, 2000)];
    const earlier = mechanicalDigest(first, { previousSummary: 'MODEL SUMMARY' }).text;
    const whole = mechanicalDigest(second, { previousSummary: earlier });
    // One header and the model-written summary once: not a digest nested in a digest.
    expect(whole.text.split(MECHANICAL_SUMMARY_PREFIX)).toHaveLength(2);
    expect(whole.text).toContain('Previous summary:\nMODEL SUMMARY\n\nMessages since then:\n- user: request-0');
    for (let i = 0; i < 4; i++) expect(whole.text).toContain(`- user: request-${i}: ${filler(150)}`);

    // Over budget, the older digest's tool and assistant lines go before any user line.
    const tight = mechanicalDigest(second, { previousSummary: earlier, maxChars: 1200 });
    expect(tight.text.length).toBeLessThanOrEqual(1200);
    for (let i = 0; i < 4; i++) expect(tight.text).toContain(`- user: request-${i}: `);
    expect(tight.lostUserMessages).toBe(0);
    // Stable: the same input gives the same bytes.
    expect(mechanicalDigest(structuredClone(second), { previousSummary: earlier, maxChars: 1200 }).text).toBe(
      tight.text,
    );
  });

  it('carries the count of user messages an earlier digest lost', () => {
    const history = factSession();
    const earlier = mechanicalDigest(history, { maxChars: 9257 });
    expect(earlier.lostUserMessages).toBeGreaterThan(0);
    const later = mechanicalDigest([{ role: 'user', content: 'one more request' }], {
      previousSummary: earlier.text,
      maxChars: 9257,
    });
    expect(later.text).toContain('- user: one more request');
    const lost = Number(/- \((\d+) earlier user messages could not be kept\)/.exec(later.text)?.[1]);
    // At least the earlier loss, and only what this digest dropped is reported as new.
    expect(lost).toBeGreaterThanOrEqual(earlier.lostUserMessages);
    expect(later.lostUserMessages).toBe(lost - earlier.lostUserMessages);
    expect(later.text.length).toBeLessThanOrEqual(9257);
  });

  it('never exceeds a budget that can hold its header, and reports every user message it leaves out', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ role: fc.constantFrom('user', 'assistant', 'tool'), chars: fc.integer({ min: 0, max: 3000 }) }),
          { maxLength: 60 },
        ),
        fc.integer({ min: 600, max: 20_000 }),
        fc.option(fc.integer({ min: 0, max: 8000 }), { nil: undefined }),
        (spec, maxChars, previousChars) => {
          const history: GuardMessage[] = spec.map(({ role, chars }, i): GuardMessage => {
            if (role === 'user') return { role, content: `u${i}: ${filler(chars)}` };
            if (role === 'assistant') return { role, content: `a${i}: ${filler(chars)}` };
            const output = { type: 'text' as const, value: `t${i}: ${filler(chars)}` };
            return { role, content: [{ type: 'tool-result', toolCallId: `t${i}`, toolName: 'run', output }] };
          });
          const previousSummary = previousChars === undefined ? undefined : `PREV ${filler(previousChars)} END`;
          const d = mechanicalDigest(history, { maxChars, previousSummary });
          expect(d.text.length).toBeLessThanOrEqual(maxChars);
          const users = history.flatMap((m, i) => (m.role === 'user' ? [i] : []));
          const present = users.filter((i) => d.text.includes(`- user: u${i}:`));
          expect(present.length + d.lostUserMessages).toBe(users.length);
          // The ones kept are the most recent.
          expect(present).toEqual(users.slice(users.length - present.length));
          if (d.lostUserMessages > 0) {
            expect(toolLines(d.text)).toEqual([]);
            expect(assistantLines(d.text)).toEqual([]);
          }
          expect(mechanicalDigest(history, { maxChars, previousSummary }).text).toBe(d.text);
        },
      ),
      { numRuns: 200 },
    );
  });
});
