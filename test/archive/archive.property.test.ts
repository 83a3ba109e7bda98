// Nothing is destroyed (DESIGN.md): over random agent sessions, whatever a compaction took out of
// the prompt or shrank in it can be recalled: every tool output that is no longer sent whole comes
// back whole by its tool-call id, and every user message no longer sent verbatim comes back by query.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { toolStep, user, assistant } from '../helpers.ts';

const word = fc.stringMatching(/^[a-z]{3,9}$/);
const sentence = fc.array(word, { minLength: 3, maxLength: 40 }).map((w) => w.join(' '));

const step = fc.record({
  userText: fc.option(sentence, { nil: undefined }),
  outputWords: fc.integer({ min: 10, max: 1_500 }),
  seed: word,
  reply: sentence,
});

describe('archive property', () => {
  it('every tool output and user message that leaves the prompt is recallable', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 5, maxLength: 40 }),
        fc.constantFrom(2_000, 4_000, 8_000),
        fc.boolean(),
        async (steps, contextWindow, withSummarizer) => {
          const guard = createContextGuard({
            contextWindow,
            redact: false,
            ...(withSummarizer ? { summarizer: () => '## Task state\nworking' } : {}),
          });
          let history: GuardMessage[] = [user('begin the task')];
          const outputs = new Map<string, string>();
          const users: string[] = ['begin the task'];
          for (const [i, s] of steps.entries()) {
            if (s.userText) {
              const text = `u${i} ${s.userText}`;
              history = [...history, user(text)];
              users.push(text);
            }
            const id = `t${i}`;
            const output = `${s.seed}${i} `.repeat(s.outputWords);
            outputs.set(id, output);
            history = [...history, ...toolStep(id, { i }, output), assistant(s.reply)];
            const r = await guard.beforeModel({ sessionId: 's', messages: history });
            await guard.afterModel({ sessionId: 's', usage: { inputTokens: Math.ceil(r.tokens) } });
            if (!r.compaction) continue;
            const sent = JSON.stringify(r.messages);
            for (const [tid, out] of outputs) {
              if (sent.includes(JSON.stringify(out))) continue;
              const items = await guard.recall('s', { id: tid, maxChars: 10_000_000 });
              expect(
                items.some((item) => item.text.includes(out)),
                `tool output ${tid}`,
              ).toBe(true);
            }
            for (const text of users) {
              if (sent.includes(JSON.stringify(text))) continue;
              const items = await guard.recall('s', { query: text, limit: 50, maxChars: 10_000_000 });
              expect(
                items.some((item) => item.text === text),
                `user message ${text.slice(0, 30)}`,
              ).toBe(true);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
