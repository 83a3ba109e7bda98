// Step 1 alone (compaction/steps/prune.ts): oversized tool results truncated, then old ones
// replaced by placeholders, only when that reaches the target, outside the protected tail, never
// errors or protected tools, and never on a manual compaction (it summarizes instead).
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../../src/index.ts';
import { PLACEHOLDER } from '../../../src/compaction/tool-edits.ts';
import { prune } from '../../../src/compaction/steps/prune.ts';
import { Work } from '../../../src/compaction/work.ts';
import { assistant, system, toolStep, user } from '../../helpers.ts';
import { SETTINGS, outputText, pipelineInput, text, toolResultParts, work } from './harness.ts';

/** [system, start, (optionally a user message of `userChars`), 6 tool steps of 3,600 characters, a short request]. */
function steps(
  userChars = 0,
  edit: (i: number) => Partial<{ name: string; error: boolean }> = () => ({}),
): GuardMessage[] {
  const messages: GuardMessage[] = [system('sys'), user('start')];
  if (userChars > 0) messages.push(user(text('BIG', userChars)));
  for (let i = 1; i <= 6; i++) {
    const { name = 'read_file', error = false } = edit(i);
    const [call, result] = toolStep(`c${i}`, { path: `f${i}.ts` }, text(`R${i}`, 3_600), name) as [
      GuardMessage,
      GuardMessage,
    ];
    if (error && result.role === 'tool') {
      const part = result.content[0] as { output: unknown };
      part.output = { type: 'error-text', value: text(`E${i}`, 3_600) };
    }
    messages.push(call, result);
  }
  messages.push(user('continue'));
  return messages;
}

/** Which of the six results (1-based) are placeholders in the rendered prompt. */
function placeholders(w: Work): number[] {
  return toolResultParts(w.cur.view.messages)
    .map((p, i) => (outputText(p).startsWith('[Output of tool') ? i + 1 : 0))
    .filter((i) => i > 0);
}

describe('prune: truncation', () => {
  // The model has seen the result (an assistant message follows it): not one of the latest results.
  const big = (size: number, name = 'read_file') => [
    system('sys'),
    user('start'),
    ...toolStep('c1', { path: 'a.ts' }, text('R1', size), name),
    assistant('read it'),
    user('go on'),
  ];

  it('truncates a result over the cap to the cap, head and tail kept', () => {
    const w = work(big(20_000));
    prune(w);
    expect(w.memo.tools).toEqual({ '3:c1': 4_000 });
    expect(w.stats.truncated).toBe(1);
    expect(w.steps).toEqual(['prune']);
    const out = outputText(toolResultParts(w.cur.view.messages)[0]!);
    expect(out).toMatch(/^R1 lorem/);
    expect(out).toContain('characters omitted');
    expect(out.length).toBeLessThan(4_100);
    expect(w.under()).toBe(true);
  });

  it('leaves a result barely over the cap alone (the marker would cost more than it saves)', () => {
    const w = work(big(4_150), { threshold: 1_000, settings: { ...SETTINGS, target: 900 } });
    prune(w);
    expect(w.stats.truncated).toBe(0);
  });

  it('never truncates a tool on the never-prune list (any case)', () => {
    const settings = {
      ...SETTINGS,
      prune: { maxToolResultTokens: 1_000, protectRecentTokens: 2_000, neverPrune: ['READ_FILE'] },
    };
    const w = work(big(20_000), { settings });
    prune(w);
    expect(w.memo.tools).toEqual({});
    expect(w.steps).toEqual([]);
  });

  it('does not edit again a result an earlier compaction edited', () => {
    const { input } = pipelineInput(big(20_000));
    const w = new Work({ ...input, memo: { ...input.memo, tools: { '3:c1': 6_000 } } });
    prune(w);
    expect(w.memo.tools).toEqual({ '3:c1': 6_000 });
    expect(w.stats.truncated).toBe(0);
  });

  it('does nothing when pruning is turned off', () => {
    const w = work(big(20_000), { settings: { ...SETTINGS, prune: false } });
    prune(w);
    expect(w.steps).toEqual([]);
    expect(w.memo.tools).toEqual({});
  });

  it('truncates on a manual compaction too', () => {
    const w = work(big(20_000), { reason: 'manual' });
    prune(w);
    expect(w.stats.truncated).toBe(1);
  });
});

describe('prune: the latest tool results', () => {
  // The result the model asked for and has not seen yet: nothing after its call but tool messages.
  const latest = (size: number) => [
    system('sys'),
    user('start'),
    ...[1, 2, 3].flatMap((i) => toolStep(`o${i}`, { path: `old${i}.ts` }, text(`O${i}`, 3_600))),
    ...toolStep('c1', { path: 'a.ts' }, text('R1', size)),
  ];

  it('leaves them whole when they fit with the system messages and the request, over the cap and the target', () => {
    // ~7,800 tokens: the 20,000-character result is 5 times the cap; replacing the old results
    // reaches the 5,000 target only with it cut, so only the old ones are edited.
    const w = work(latest(20_000));
    prune(w);
    expect(outputText(toolResultParts(w.cur.view.messages)[3]!)).toBe(text('R1', 20_000));
    expect(Object.keys(w.memo.tools).some((k) => k.endsWith(':c1'))).toBe(false);
  });

  it('truncates them to the cap when they do not fit under the threshold anyway', () => {
    const w = work(latest(40_000));
    prune(w);
    expect(w.memo.tools['9:c1']).toBe(4_000);
  });
});

describe('prune: placeholders', () => {
  it('replaces the oldest results, only as many as the target needs, in one batch', () => {
    // ~5,700 tokens: one placeholder (~870 tokens saved) reaches the 5,000 target.
    const w = work(steps());
    expect(w.under()).toBe(false);
    prune(w);
    expect(placeholders(w)).toEqual([1]);
    expect(w.memo.tools['3:c1']).toBe(PLACEHOLDER);
    expect(w.stats.pruned).toBe(1);
    expect(w.steps).toEqual(['prune']);
    expect(w.under()).toBe(true);
  });

  it('never replaces results in the protected recent tail', () => {
    // 2,000 more tokens (~2,700 over): every result outside the ~2k tail is needed, the two newest are protected.
    const w = work(steps(8_000));
    prune(w);
    expect(placeholders(w)).toEqual([1, 2, 3, 4]);
    expect(w.under()).toBe(true);
  });

  it('protects everything within a larger tail', () => {
    const settings = {
      ...SETTINGS,
      prune: { maxToolResultTokens: 1_000, protectRecentTokens: 100_000, neverPrune: [] },
    };
    const w = work(steps(), { settings });
    prune(w);
    expect(placeholders(w)).toEqual([]);
    expect(w.steps).toEqual([]);
  });

  it('replaces nothing when all it could replace would not reach the target', () => {
    // 3,000 more tokens: the four results outside the tail save ~3,500 of the ~3,700 needed.
    const w = work(steps(12_000));
    prune(w);
    expect(placeholders(w)).toEqual([]);
    expect(w.steps).toEqual([]);
    expect(w.stats.pruned).toBe(0);
  });

  it('keeps errors for the summary and replaces the next result instead', () => {
    const w = work(steps(0, (i) => ({ error: i === 1 })));
    prune(w);
    expect(placeholders(w)).toEqual([2]);
    expect(outputText(toolResultParts(w.cur.view.messages)[0]!)).toMatch(/^E1 lorem/);
  });

  it('keeps tools on the never-prune list', () => {
    const settings = {
      ...SETTINGS,
      prune: { maxToolResultTokens: 1_000, protectRecentTokens: 2_000, neverPrune: ['todo_read'] },
    };
    const w = work(
      steps(0, (i) => ({ name: i === 1 ? 'todo_read' : 'read_file' })),
      { settings },
    );
    prune(w);
    expect(placeholders(w)).toEqual([2]);
  });

  it('does not replace results on a manual compaction (it summarizes them)', () => {
    const w = work(steps(), { reason: 'manual' });
    prune(w);
    expect(placeholders(w)).toEqual([]);
    expect(w.steps).toEqual([]);
  });

  it('does nothing under the target', () => {
    const w = work(steps(), { settings: { ...SETTINGS, target: 7_000 } });
    prune(w);
    expect(w.steps).toEqual([]);
  });

  it('names what a placeholder removed', () => {
    const w = work(steps());
    prune(w);
    expect(outputText(toolResultParts(w.cur.view.messages)[0]!)).toMatch(
      /^\[Output of tool read_file removed to save context \(3,600 characters\)/,
    );
  });
});
