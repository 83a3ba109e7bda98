// Step 3 alone (compaction/steps/hard-fit.ts): what matters least is cut first, tool outputs, then
// images and files, then assistant text, then the user's earlier messages; the latest request is
// never touched, nor the latest tool results when they fit; the prompt lands near the threshold
// (8,000 in the harness), never pushed down to the target (5,000): a target is a cost, and only
// the threshold justifies a destructive cut.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../../src/index.ts';
import { hardFit } from '../../../src/compaction/steps/hard-fit.ts';
import { fitAim, MIN_KEPT_CHARS } from '../../../src/compaction/work.ts';
import { assistant, system, toolStep, user } from '../../helpers.ts';
import { image, measureOne, outputText, text, toolResultParts, work } from './harness.ts';

const SYS = system('sys');
const FIRST = user('first request');
const REQUEST = user('the latest request: finish it');

/** Characters of each message of a prompt, by the harness's measure. */
const sizes = (messages: readonly GuardMessage[]) => messages.map((m) => measureOne(m).chars);

describe('hardFit: order', () => {
  it('shrinks the largest tool outputs first, leaving the messages whole', () => {
    const A1 = assistant(text('A1', 2_000));
    const messages = [
      SYS,
      FIRST,
      A1,
      ...toolStep('c1', { path: 'a.ts' }, text('R1', 30_000)),
      ...toolStep('c2', { path: 'b.ts' }, text('R2', 4_000)),
      REQUEST,
    ];
    const w = work(messages);
    hardFit(w);
    expect(w.steps).toEqual(['hard-fit']);
    expect(Object.keys(w.memo.tools)).toEqual(['4:c1']);
    expect(w.memo.tools['4:c1']).toBeGreaterThan(4_000);
    expect(outputText(toolResultParts(w.cur.view.messages)[1]!)).toBe(text('R2', 4_000));
    expect(w.cur.view.messages[2]!.content).toEqual(A1.content);
  });

  it('replaces images and files next, oldest first, only as many as needed', () => {
    const shots: GuardMessage = {
      role: 'user',
      content: [{ type: 'text', text: 'screens' }, ...[1, 2, 3, 4, 5, 6].map((i) => image(`s${i}`))],
    };
    const A1 = assistant(text('A1', 18_960));
    const U2 = user(text('U2', 4_000));
    // ~8,740 tokens: two images (1,000 tokens, less their placeholders) bring it under the aim (7,840).
    const w = work([SYS, FIRST, shots, A1, U2, REQUEST]);
    hardFit(w);
    expect(w.memo.media).toEqual({ '2:1': 1, '2:2': 1 });
    const content = w.cur.view.messages[2]!.content as Array<{ type: string; text?: string }>;
    expect(content.map((p) => p.type)).toEqual(['text', 'text', 'text', 'image', 'image', 'image', 'image']);
    expect(content[1]!.text).toMatch(/^\[An image was left out to fit the context window: image\/png/);
    expect(w.memo.clips).toEqual({});
    expect(w.cur.view.messages).toContain(A1);
    expect(w.cur.view.messages).toContain(U2);
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
  });

  it('replaces another image when the placeholders’ text keeps the prompt over the threshold', () => {
    const shots: GuardMessage = {
      role: 'user',
      content: [{ type: 'text', text: 'screens' }, ...[1, 2, 3, 4, 5, 6].map((i) => image(`s${i}`))],
    };
    // 988 tokens over: two images would do, were the placeholders free.
    const w = work([SYS, FIRST, shots, assistant(text('A1', 19_260)), user(text('U2', 4_000)), REQUEST]);
    hardFit(w);
    expect(w.memo.media).toEqual({ '2:1': 1, '2:2': 1, '2:3': 1 });
    expect(w.memo.clips).toEqual({});
  });

  it('clips assistant text before the user’s earlier messages', () => {
    const A1 = assistant(text('A1', 24_000));
    const U1 = user(text('U1', 12_000));
    const w = work([SYS, FIRST, A1, U1, REQUEST]);
    hardFit(w);
    const [, , a1, u1] = sizes(w.cur.view.messages);
    expect(a1).toBeLessThan(20_100);
    expect(u1).toBe(12_000);
    expect(w.cur.view.messages[3]!.content).toBe(U1.content);
  });

  it('clips the user’s earlier messages only when assistant text is not enough', () => {
    const U1 = user(text('U1', 36_000));
    const w = work([SYS, FIRST, assistant(text('A1', 2_000)), U1, REQUEST]);
    hardFit(w);
    const [, , a1, u1] = sizes(w.cur.view.messages);
    expect(a1).toBeLessThan(MIN_KEPT_CHARS + 100);
    expect(u1).toBeLessThan(36_000);
    // The user's message keeps its start and its end.
    const clipped = w.cur.view.messages[3]!.content as string;
    expect(clipped.startsWith(text('U1', 1_000))).toBe(true);
    expect(clipped.endsWith((U1.content as string).slice(-1_000))).toBe(true);
  });

  it('never touches system messages', () => {
    const big = system(text('S', 4_000));
    const w = work([big, FIRST, assistant(text('A1', 20_000)), REQUEST]);
    hardFit(w);
    expect(w.cur.view.messages[0]).toBe(big);
  });

  it('does nothing under the threshold, even over the target', () => {
    const w = work([SYS, FIRST, assistant(text('A1', 28_000)), REQUEST]);
    expect(w.under()).toBe(false);
    hardFit(w);
    expect(w.steps).toEqual([]);
  });
});

describe('hardFit: the latest request', () => {
  it('is never clipped nor stripped of its media, even when the threshold is not reached', () => {
    const request: GuardMessage = { role: 'user', content: [{ type: 'text', text: text('REQ', 32_000) }, image('r1')] };
    const messages = [SYS, FIRST, assistant(text('A1', 12_000)), user(text('U1', 4_000)), request];
    const w = work(messages);
    hardFit(w);
    expect(w.cur.view.messages[w.cur.view.messages.length - 1]).toBe(request);
    expect(w.memo.media ?? {}).toEqual({});
    expect(w.memo.requestClip).toBeUndefined();
    // Everything else is cut down to its floor, and the prompt is still over the threshold.
    expect(
      sizes(w.cur.view.messages)
        .slice(2, 4)
        .every((n) => n < MIN_KEPT_CHARS + 100),
    ).toBe(true);
    expect(w.cur.tokens).toBeGreaterThan(8_000);
  });
});

describe('hardFit: lands near the threshold', () => {
  it('cuts evenly, leaving the prompt at the threshold', () => {
    const messages = [
      SYS,
      FIRST,
      ...[3_000, 14_000, 18_000, 2_000].map((n, i) => assistant(text(`A${i}`, n))),
      user(text('U1', 1_000)),
      REQUEST,
    ];
    const w = work(messages);
    hardFit(w);
    // Within the cost of the clip markers (~10 tokens each) of the aim, just under the threshold.
    expect(fitAim(8_000)).toBe(7_840);
    expect(Math.abs(w.cur.tokens - fitAim(8_000))).toBeLessThanOrEqual(25);
    // The two largest were cut to one level; the smaller ones stayed whole.
    const s = sizes(w.cur.view.messages);
    expect(s[2]).toBe(3_000);
    expect(s[5]).toBe(2_000);
    expect(Math.abs((s[3] as number) - (s[4] as number))).toBeLessThan(50);
  });

  it('shrinks tool outputs evenly to the threshold', () => {
    const messages = [
      SYS,
      FIRST,
      ...[10_000, 20_000, 30_000].flatMap((n, i) => toolStep(`c${i}`, { path: `f${i}` }, text(`R${i}`, n))),
      assistant('read them all'),
      REQUEST,
    ];
    const w = work(messages);
    hardFit(w);
    expect(Math.abs(w.cur.tokens - fitAim(8_000))).toBeLessThanOrEqual(35);
    const kept = Object.values(w.memo.tools);
    expect(new Set(kept).size).toBe(1);
  });
});

describe('hardFit: the latest tool results', () => {
  // Old reads the model has seen, then the step it is waiting for: a call and its result, nothing after.
  const session = (latestChars: number) => [
    SYS,
    FIRST,
    ...[1, 2, 3].flatMap((i) => toolStep(`o${i}`, { path: `old${i}.ts` }, text(`O${i}`, 8_000))),
    assistant(text('A1', 2_000)),
    REQUEST,
    ...toolStep('c1', { path: 'a.ts' }, text('R1', latestChars)),
  ];

  it('are sent whole when they fit with the system messages and the request: older outputs are cut instead', () => {
    const w = work(session(20_000));
    hardFit(w);
    const results = toolResultParts(w.cur.view.messages);
    expect(outputText(results[3]!)).toBe(text('R1', 20_000));
    expect(Object.keys(w.memo.tools).sort()).toEqual(['3:o1', '5:o2', '7:o3']);
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
  });

  it('are cut like any output when they do not fit under the threshold with the request', () => {
    const w = work(session(40_000));
    hardFit(w);
    expect(w.memo.tools['11:c1']).toBeDefined();
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
  });
});

describe('hardFit: the cut markers’ cost', () => {
  it('closes the truncation markers’ overshoot with tool output, not with an image', () => {
    const shot: GuardMessage = { role: 'user', content: [{ type: 'text', text: 'see' }, image('s1')] };
    const w = work([
      SYS,
      FIRST,
      shot,
      ...toolStep('c1', { path: 'a.ts' }, text('R1', 40_000)),
      assistant('read it'),
      REQUEST,
    ]);
    hardFit(w);
    expect(w.memo.media ?? {}).toEqual({});
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
  });

  it('closes the truncation markers’ overshoot with tool output, not with the user’s words', () => {
    const U1 = user(text('U1', 4_000));
    const steps = [1, 2, 3, 4, 5, 6].flatMap((i) => toolStep(`c${i}`, { path: `f${i}` }, text(`R${i}`, 8_000)));
    const w = work([SYS, FIRST, U1, ...steps, assistant('read them all'), REQUEST]);
    hardFit(w);
    expect(w.cur.view.messages[2]!.content).toBe(U1.content);
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
  });

  it('closes the clip markers’ overshoot with assistant text, not with the user’s words', () => {
    const U1 = user(text('U1', 3_000));
    const w = work([SYS, FIRST, U1, ...[1, 2, 3, 4, 5, 6].map((i) => assistant(text(`A${i}`, 6_000))), REQUEST]);
    hardFit(w);
    expect(w.cur.view.messages[2]!.content).toBe(U1.content);
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
  });
});
