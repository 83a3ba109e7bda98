// The latest tool results (those after the last assistant message: the model asked for them and has
// not seen them yet) reach the model whole whenever they fit with the system messages and the latest
// request, whatever the cost settings: a low target, a pace that aims lower still, a tiny tool result
// cap or recent tail, summarize-all, a summarizer that fails. Cost targets may steer pruning and
// summaries (lossless: the archive keeps the originals) but never force a cut of what the model is
// waiting for. Random conversations, replayed by a stateless host over several calls.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createContextGuard,
  type ContextGuardOptions,
  type GuardMessage,
  type ToolResultPart,
} from '../../src/index.ts';
import { realTokens, text } from './builders.ts';
import { expectInvariants } from './invariants.ts';

/** Sizes in thousandths of the window (chars/4 tokens). */
const small = fc.integer({ min: 0, max: 80 });
const latestSize = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 20, max: 250 }) },
  { weight: 1, arbitrary: fc.integer({ min: 250, max: 500 }) },
);

type Segment =
  | { kind: 'user'; size: number }
  | { kind: 'assistant'; size: number }
  | { kind: 'tools'; sizes: number[] };

const older: fc.Arbitrary<Segment> = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), size: small }),
  fc.record({ kind: fc.constant('assistant' as const), size: small }),
  fc.record({
    kind: fc.constant('tools' as const),
    sizes: fc.array(fc.oneof(small, fc.integer({ min: 80, max: 300 })), { minLength: 1, maxLength: 3 }),
  }),
);

const call = fc.record({
  segments: fc.array(older, { maxLength: 8 }),
  // A new request before the latest tool step (else the step continues the previous request).
  request: fc.option(small, { nil: undefined }),
  latest: fc.array(latestSize, { minLength: 1, maxLength: 3 }),
  separate: fc.boolean(),
  ratio: fc.option(fc.double({ min: 1, max: 1.4, noNaN: true }), { nil: undefined }),
});

const settings = fc.record({
  window: fc.integer({ min: 4_000, max: 64_000 }),
  target: fc.double({ min: 0.03, max: 0.6, noNaN: true }),
  minCallsBetween: fc.integer({ min: 0, max: 30 }),
  keepRecentTokens: fc.double({ min: 0.005, max: 0.4, noNaN: true }),
  maxToolResult: fc.option(fc.double({ min: 0.005, max: 0.2, noNaN: true }), { nil: undefined }),
  protectRecent: fc.option(fc.double({ min: 0.001, max: 0.3, noNaN: true }), { nil: undefined }),
  retention: fc.constantFrom('keep-recent' as const, 'summarize-all' as const),
  summarizer: fc.constantFrom('ok', 'throws', 'none'),
  system: small,
});

/** A generous stand-in for the guard's estimate: JSON characters / 4, at the uncalibrated correction 1.5. */
const estimate = (messages: readonly GuardMessage[]) => (JSON.stringify(messages).length / 4) * 1.5;

describe('the latest tool results under cost targets', () => {
  it('reach the model whole whenever they fit with the system messages and the latest request', async () => {
    // Calls where the results fit and the prompt was compacted: the cases this property is about.
    let exercised = 0;
    await fc.assert(
      fc.asyncProperty(settings, fc.array(call, { minLength: 1, maxLength: 4 }), async (s, calls) => {
        const options: ContextGuardOptions = {
          contextWindow: s.window,
          target: s.target,
          keepRecentTokens: s.keepRecentTokens,
          cost: { minCallsBetween: s.minCallsBetween },
          retention: s.retention,
          prune: {
            ...(s.maxToolResult !== undefined ? { maxToolResultTokens: s.maxToolResult } : {}),
            ...(s.protectRecent !== undefined ? { protectRecentTokens: s.protectRecent } : {}),
          },
          ...(s.summarizer === 'ok' ? { summarizer: () => '## Task state\nreading files' } : {}),
          ...(s.summarizer === 'throws'
            ? {
                summarizer: () => {
                  throw new Error('down');
                },
              }
            : {}),
        };
        const guard = createContextGuard(options);
        const chars = (size: number) => Math.floor((size / 1000) * s.window * 4);
        let n = 0;
        const systemMessage: GuardMessage = { role: 'system', content: text('SYS', chars(s.system)) };
        let history: GuardMessage[] = [systemMessage, { role: 'user', content: text('U-first', 200) }];
        const toolStep = (sizes: number[], separate: boolean) => {
          const id = n++;
          const calls = sizes.map((_, i) => ({
            type: 'tool-call' as const,
            toolCallId: `c${id}-${i}`,
            toolName: 'read_file',
            input: { path: `src/f${id}-${i}.ts` },
          }));
          const results: ToolResultPart[] = sizes.map((size, i) => ({
            type: 'tool-result',
            toolCallId: `c${id}-${i}`,
            toolName: 'read_file',
            output: { type: 'text', value: text(`T${id}.${i}`, chars(size)) },
          }));
          const messages: GuardMessage[] = [{ role: 'assistant', content: calls }];
          if (separate) for (const r of results) messages.push({ role: 'tool', content: [r] });
          else messages.push({ role: 'tool', content: results });
          return messages;
        };
        for (const c of calls) {
          for (const seg of c.segments) {
            if (seg.kind === 'user') history.push({ role: 'user', content: text(`U${n++}`, chars(seg.size)) });
            else if (seg.kind === 'assistant')
              history.push({ role: 'assistant', content: [{ type: 'text', text: text(`A${n++}`, chars(seg.size)) }] });
            else history.push(...toolStep(seg.sizes, false));
          }
          if (c.request !== undefined) history.push({ role: 'user', content: text(`R${n++}`, chars(c.request)) });
          const latestStep = toolStep(c.latest, c.separate);
          history = [...history, ...latestStep];

          const r = await guard.beforeModel({ sessionId: 's', messages: history });
          expectInvariants(history, r, { overflow: r.overflow === true });

          const request = history.findLast((m) => m.role === 'user') as GuardMessage;
          const fits = estimate([systemMessage, request, ...latestStep]) <= 0.85 * r.threshold;
          if (fits) {
            if (r.compaction) exercised++;
            const latestResults = latestStep.flatMap((m) =>
              m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result') : [],
            );
            const sent = r.messages.flatMap((m) =>
              m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result') : [],
            );
            for (const result of latestResults) {
              const got = sent.find((p) => p.toolCallId === result.toolCallId);
              expect(got, `latest result ${result.toolCallId} missing (${r.compaction?.strategy})`).toBeDefined();
              expect(got?.output, `latest result ${result.toolCallId} cut (${r.compaction?.strategy})`).toEqual(
                result.output,
              );
            }
          }
          if (c.ratio !== undefined)
            await guard.afterModel({ sessionId: 's', usage: { inputTokens: realTokens(r.messages, c.ratio) } });
          // The model answers with its next step (seen by the next call as an old assistant message).
          history = [...history, { role: 'assistant', content: [{ type: 'text', text: text(`A${n++}`, 300) }] }];
        }
      }),
      { numRuns: 150 },
    );
    expect(exercised).toBeGreaterThan(50);
  });
});
