// The user's words, verbatim, under every summary: the sentences of the user's own prose (not pasted
// code or logs), each once, the newest within the budget, whoever writes the summary.
import { describe, expect, it } from 'vitest';
import { collectInstructions, instructionsOf, renderInstructions } from '../../src/compaction/instructions.ts';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

const identity = (t: string) => t;
const at = (messages: GuardMessage[]) => messages.map((message, index) => ({ message, index }));

describe('instructionsOf', () => {
  it('takes the sentences of the prose, after a pasted log and outside code', () => {
    const pasted = [
      'Here is the failing build:',
      '```',
      'export function main() { never(); }',
      '```',
      '2026-11-24 10:00:01 ERROR must not happen',
      '    at Object.<anonymous> (src/index.ts:3:9)',
      'TypeError: cannot read properties of undefined',
      'Fix it. Never modify files under vendor-7731/. Always use tabs; do not reformat other files.',
      'Thanks!',
    ].join('\n');
    expect(instructionsOf(user(pasted))).toEqual([
      'Here is the failing build:',
      'Fix it.',
      'Never modify files under vendor-7731/.',
      'Always use tabs; do not reformat other files.',
      'Thanks!',
    ]);
    expect(instructionsOf(assistant('You must never do that.'))).toEqual([]);
    // Plain prose is the user's words too: no keyword decides.
    expect(instructionsOf(user('We should check the scheduler. That path is only hit late.'))).toEqual([
      'We should check the scheduler.',
      'That path is only hit late.',
    ]);
  });

  it('keeps each once, the newest within the budget, through redaction', () => {
    const messages = [
      user('Always run the linter.'),
      user('Keep the API stable, please.'),
      user('always run the linter.'),
      user('Never print the token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789.'),
    ];
    const { notes } = collectInstructions(['Avoid global state.'], at(messages), 10_000, (t) =>
      t.replace(/sk-\S+/, '[key]'),
    );
    expect(notes).toEqual([
      'Avoid global state.',
      'Keep the API stable, please.',
      'always run the linter.',
      'Never print the token [key]',
    ]);
    const header = renderInstructions(['x']).length - '\n- x'.length;
    const small = collectInstructions(['Avoid global state.'], at(messages), header + 130, identity).notes;
    expect(small.at(-1)).toBe('Never print the token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789.');
    expect(small).not.toContain('Avoid global state.');
    expect(renderInstructions([])).toBe('');
  });
});

describe('the instructions footer', () => {
  it('keeps the user constraint under a summary that dropped it (headings only) and under the mechanical digest', async () => {
    for (const summarizer of [() => '## Task state\n(none)\n## User guidance\n(none)', undefined]) {
      const guard = createContextGuard({ contextWindow: 8_000, prune: false, keepUserMessagesTokens: 0, summarizer });
      const log = Array.from({ length: 30 }, (_, i) => `2026-11-24 10:00:${i} INFO step ${i} ok`).join('\n');
      const messages: GuardMessage[] = [
        system('You are a coding agent.'),
        user(`${log}\nThat is the log. Never touch the billing tables in ledger-9921.`),
      ];
      for (let i = 0; i < 12; i++) {
        messages.push(...toolStep(`c${i}`, { i }, 'x'.repeat(2_000)), assistant(`step ${i} done`), user(`next ${i}`));
      }
      const r = await guard.beforeModel({ sessionId: 's', messages });
      expect(r.compaction?.summary).toContain('[What the user wrote, verbatim');
      expect(r.compaction?.summary).toContain('- Never touch the billing tables in ledger-9921.');
      const later = await guard.beforeModel({
        sessionId: 's',
        messages: [
          ...messages,
          ...Array.from({ length: 20 }, (_, i) => assistant(`more ${i} ${'y'.repeat(800)}`)),
          user('Go on.'),
        ],
      });
      // A later compaction builds on the earlier notes.
      expect(later.compaction?.summary ?? JSON.stringify(later.messages)).toContain(
        'Never touch the billing tables in ledger-9921.',
      );
    }
  });
});
