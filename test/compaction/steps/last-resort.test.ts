// Step 4 alone (compaction/steps/last-resort.ts): the smallest prompt (system messages and the
// latest request), a digest of what leaves it kept for the next summary, then only as far as
// needed the request's own media, and its text only when it alone exceeds the window; the
// overflow flag and what the compaction's result and memo say of it.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../../src/index.ts';
import { lastResort } from '../../../src/compaction/steps/last-resort.ts';
import { Work } from '../../../src/compaction/work.ts';
import { assistant, system, toolStep, user } from '../../helpers.ts';
import { image, memo, pipelineInput, text, work } from './harness.ts';

const SYS = system('sys');
const FIRST = user('first request: migrate billing');
const REQUEST = user('the latest request: finish it');

function history(request: GuardMessage = REQUEST, sys: GuardMessage = SYS): GuardMessage[] {
  return [sys, FIRST, assistant(text('A1', 4_000)), user(text('U1', 4_000)), assistant(text('A2', 4_000)), request];
}

/** A request with `images` images after its text. */
function withImages(images: number, words = 'look at these'): GuardMessage {
  return {
    role: 'user',
    content: [{ type: 'text', text: words }, ...Array.from({ length: images }, (_, i) => image(`r${i}`))],
  };
}

describe('lastResort: the smallest prompt', () => {
  it('sends the system messages and the latest request, nothing else', () => {
    const h = pipelineInput(history());
    const w = new Work(h.input);
    expect(lastResort(w)).toBe(false);
    expect(w.cur.view.messages).toEqual([SYS, REQUEST]);
    expect(w.memo.summary).toMatchObject({ covers: { messages: 6 }, keep: [0, 5], messages: [] });
    expect(w.steps).toEqual(['hard-fit']);
    expect(h.starts()).toBe(1);
  });

  it('keeps the latest tool step when its results fit beside the request', () => {
    const step = toolStep('c1', { path: 'a.ts' }, text('R1', 12_000));
    const h = pipelineInput([...history(), ...step]);
    const w = new Work(h.input);
    expect(lastResort(w)).toBe(false);
    expect(w.cur.view.messages).toEqual([SYS, REQUEST, ...step]);
    expect(w.memo.summary).toMatchObject({ covers: { messages: 6 }, keep: [0, 5], messages: [] });
    // Too large to fit with them: the smallest prompt is the system messages and the request.
    const huge = toolStep('c1', { path: 'a.ts' }, text('R1', 40_000));
    const w2 = work([...history(), ...huge]);
    lastResort(w2);
    expect(w2.cur.view.messages).toEqual([SYS, REQUEST]);
  });

  it('keeps a digest of what left the prompt for the next summary, without sending it', () => {
    const h = pipelineInput(history());
    const w = new Work(h.input);
    lastResort(w);
    const digest = w.memo.summary?.text ?? '';
    expect(digest).toMatch(/^\[Mechanical digest:/);
    for (const label of ['first request: migrate billing', 'A1 lorem', 'U1 lorem', 'A2 lorem'])
      expect(digest).toContain(label);
    expect(digest).not.toContain('the latest request');
    expect(w.stats.summary).toBe(digest);
    expect(w.stats.summaryTokens).toBe(Math.ceil(digest.length * 0.25));
    expect(h.digestLosses).toEqual([[0, 0]]);
  });

  it('builds on the summary that stood for the older messages', () => {
    const previous = memo({
      summary: {
        covers: { messages: 2, chars: 0, hash: 0 },
        keep: [0],
        messages: [user('[Context Summary]\nEARLIER WORK')],
        text: 'EARLIER WORK',
      },
    });
    const w = work(history(), { memo: previous, summaryApplies: true });
    lastResort(w);
    expect(w.memo.summary?.text).toContain('EARLIER WORK');
    expect(w.memo.summary?.text).toContain('A2 lorem');
  });

  it('redacts the digest', () => {
    const w = work([SYS, user('my key is sk-SECRET'), assistant('ok'), REQUEST], {
      redact: (t) => t.replaceAll('sk-SECRET', '[redacted]'),
    });
    lastResort(w);
    expect(w.memo.summary?.text).toContain('my key is [redacted]');
    expect(w.memo.summary?.text).not.toContain('sk-SECRET');
  });

  it('keeps the system messages alone when there is no request', () => {
    const w = work([SYS, assistant(text('A1', 4_000))]);
    lastResort(w);
    expect(w.cur.view.messages).toEqual([SYS]);
    expect(w.memo.summary?.keep).toEqual([0]);
  });
});

describe('lastResort: the request', () => {
  // A system prompt of 6,250 tokens: with a request of four images (2,000 tokens), over the 8k threshold.
  const BIG_SYS = system(text('S', 25_000));

  it('keeps the request’s media when the smallest prompt fits with them', () => {
    const request = withImages(2);
    const w = work(history(request, BIG_SYS));
    expect(lastResort(w)).toBe(false);
    expect(w.memo.media ?? {}).toEqual({});
    expect(w.cur.view.messages[1]).toBe(request);
  });

  it('replaces the request’s images, oldest first, only as many as needed', () => {
    const w = work(history(withImages(4), BIG_SYS));
    expect(lastResort(w)).toBe(false);
    expect(w.memo.media).toEqual({ '5:1': 1 });
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
    const content = w.cur.view.messages[1]!.content as Array<{ type: string }>;
    expect(content.map((p) => p.type)).toEqual(['text', 'text', 'image', 'image', 'image']);
  });

  it('sends a request over the threshold but within the window whole, as an overflow', () => {
    const request = user(text('REQ', 36_000));
    const w = work(history(request));
    expect(lastResort(w)).toBe(true);
    expect(w.memo.requestClip).toBeUndefined();
    expect(w.cur.view.messages[1]).toBe(request);
    expect(w.cur.tokens).toBeGreaterThan(8_000);
  });

  it('cuts a request that alone exceeds the window, head and tail kept, down to the threshold', () => {
    const words = text('REQ', 48_000);
    const w = work(history(user(words)));
    expect(lastResort(w)).toBe(true);
    expect(w.memo.requestClip).toMatchObject({ index: 5 });
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
    expect(w.cur.tokens).toBeGreaterThan(7_000);
    const sent = w.cur.view.messages[1]!.content as string;
    expect(sent.startsWith(words.slice(0, 1_000))).toBe(true);
    expect(sent.endsWith(words.slice(-1_000))).toBe(true);
    expect(sent).toContain('characters omitted');
  });

  it('replaces the request’s media before cutting its text', () => {
    const request: GuardMessage = {
      role: 'user',
      content: [
        { type: 'text', text: text('REQ', 36_000) },
        image('r0'),
        image('r1'),
        image('r2'),
        image('r3'),
        image('r4'),
      ],
    };
    const w = work(history(request));
    expect(lastResort(w)).toBe(true);
    expect(Object.keys(w.memo.media ?? {})).toHaveLength(5);
    // 9,000 tokens of text: within the window once the images are gone, so sent whole.
    expect(w.memo.requestClip).toBeUndefined();
  });
});

describe('lastResort: the result', () => {
  it('reports an overflow in the result and the memo', () => {
    const w = work(history(user(text('REQ', 36_000))));
    const out = w.finish(lastResort(w));
    expect(out.result).toMatchObject({ overflow: true, strategy: 'hard-fit', steps: ['hard-fit'], messagesAfter: 2 });
    expect(out.result?.summary).toMatch(/^\[Mechanical digest:/);
    expect(out.memo).toMatchObject({ overflowed: true, compactions: 1 });
  });

  it('clears an earlier overflow once the smallest prompt fits', () => {
    const w = work(history(), { memo: memo({ overflowed: true, compactions: 2 }) });
    const out = w.finish(lastResort(w));
    expect(out.result?.overflow).toBe(false);
    expect(out.memo.overflowed).toBeUndefined();
    expect(out.memo.compactions).toBe(3);
  });
});
