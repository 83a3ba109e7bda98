// Estimate (call/estimate.ts): the memo re-applied to the host's messages, a stale summary dropped,
// the latest request's edits relaxed when it fits whole, a request still edited although it alone
// would fit, and the tool-pairing progress. Every branch of the decision itself: decide.test.ts.
// A 10k window (threshold 8k) and no real count: a prompt costs chars/4 × 1.5.
import { describe, expect, it } from 'vitest';
import type { Call } from '../../src/call/measure.ts';
import { CallResolver } from '../../src/call/measure.ts';
import { resolveOptions } from '../../src/config.ts';
import { emptyMemo, type CompactionMemo } from '../../src/compaction/memo.ts';
import { PLACEHOLDER } from '../../src/compaction/tool-edits.ts';
import { summaryMessage } from '../../src/compaction/placement.ts';
import type { GuardMessage } from '../../src/index.ts';
import { needsCompaction } from '../../src/call/decide.ts';
import { PairingProgress, prepare } from '../../src/call/estimate.ts';
import { emptySessionState, type SessionState } from '../../src/state/session.ts';
import { PromptMeasurer } from '../../src/tokens/prompt-measure.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

const C = { min: 1, max: 5, default: 1.5 };
const SYS = system('sys');

/** `n` characters of text starting with `label`. */
const text = (label: string, n: number) =>
  (label + ' lorem ipsum dolor sit amet'.repeat(Math.ceil(n / 27))).slice(0, n);

async function callOf(messages: GuardMessage[], contextWindow = 10_000): Promise<Call> {
  const resolver = new CallResolver(resolveOptions({ contextWindow }), () => {});
  return resolver.call(new PromptMeasurer(10), { sessionId: 's', messages });
}

const withMemo = (memo: CompactionMemo, fields: Partial<SessionState> = {}): SessionState => ({
  ...emptySessionState(),
  memo,
  ...fields,
});
const memoOf = (fields: Partial<CompactionMemo>): CompactionMemo => ({ ...emptyMemo(), ...fields });

/** A summary memo covering the host's first `n` messages as `call` measured them. */
function summaryCovering(call: Call, n: number, keep: number[] = [0]): CompactionMemo['summary'] {
  const host = call.measureHost();
  return {
    covers: { messages: n, chars: host.cumChars[n - 1] ?? 0, hash: host.cumHash[n - 1] ?? 0 },
    keep,
    messages: [summaryMessage('what happened')],
    text: 'what happened',
  };
}

describe('prepare', () => {
  it('estimates the host’s messages as they are without a memo', async () => {
    const messages = [SYS, user('hello')];
    const call = await callOf(messages);
    const p = prepare(call, emptySessionState(), C, new PairingProgress(10));
    expect(p.view.messages).toEqual(messages);
    expect(p).toMatchObject({
      memo: undefined,
      summaryApplies: false,
      extendsAnchor: false,
      est: { method: 'default' },
    });
    expect(p.memoChanged).toBeUndefined();
    expect(p.requestEdited).toBeUndefined();
  });

  it('applies the memo: the summary for what it covers, and the tool edits', async () => {
    const messages = [
      SYS,
      user('first'),
      assistant('a1'),
      ...toolStep('c1', { path: 'a.ts' }, text('R', 4_000)),
      user('now'),
    ];
    const call = await callOf(messages);
    const memo = memoOf({ summary: summaryCovering(call, 3), tools: { '4:c1': PLACEHOLDER } });
    const p = prepare(call, withMemo(memo), C, new PairingProgress(10));
    expect(p.summaryApplies).toBe(true);
    expect(p.memo).toBe(memo);
    expect(p.view.messages[0]).toBe(SYS);
    expect(p.view.messages[1]).toEqual(summaryMessage('what happened'));
    expect(p.view.messages.slice(2, 3)).toEqual([messages[3]]);
    expect(JSON.stringify(p.view.messages[3])).toContain('removed to save context');
    expect(p.view.messages[4]).toBe(messages[5]);
    expect(p.memoChanged).toBeUndefined();
  });

  it('drops a summary whose covered messages are no longer the start of the history', async () => {
    const before = await callOf([SYS, user('first'), assistant('a1'), user('now')]);
    const summary = summaryCovering(before, 3);
    const messages = [SYS, user('a new conversation'), assistant('a1'), user('now')];
    const call = await callOf(messages);
    const p = prepare(call, withMemo(memoOf({ summary, tools: { '9:x': PLACEHOLDER } })), C, new PairingProgress(10));
    expect(p.summaryApplies).toBe(false);
    expect(p.memo).not.toHaveProperty('summary');
    expect(p.memo?.tools).toEqual({ '9:x': PLACEHOLDER });
    expect(p.view.messages).toEqual(messages);
  });

  it('tells whether the prompt extends the anchor, and estimates from it', async () => {
    const first = [SYS, user(text('U1', 4_000))];
    const anchorCall = await callOf(first);
    const { chars, mediaTokens, toolChars, prompt } = anchorCall.measure(first);
    const state: SessionState = {
      ...emptySessionState(),
      calibration: { anchor: { chars, mediaTokens, toolChars, prompt, realTokens: 1_200 } },
    };
    const p = prepare(await callOf([...first, assistant('ok'), user('more')]), state, C, new PairingProgress(10));
    expect(p.extendsAnchor).toBe(true);
    expect(p.est.method).toBe('anchored');
    expect(p.est.tokens).toBeGreaterThanOrEqual(1_200);
    const other = prepare(await callOf([SYS, user('something else')]), state, C, new PairingProgress(10));
    expect(other.extendsAnchor).toBe(false);
    expect(other.est.method).toBe('scaled');
  });

  it('repairs tool pairing in the view', async () => {
    const orphan: GuardMessage = {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'gone', toolName: 'read_file', output: { type: 'text', value: 'data' } },
      ],
    };
    const p = prepare(
      await callOf([SYS, user('a'), orphan, user('b')]),
      emptySessionState(),
      C,
      new PairingProgress(10),
    );
    expect(p.view.orphanResults).toBe(1);
    // Attributed to its tool in an assistant note: tool output never takes the user's voice.
    expect(p.view.messages[2]?.role).toBe('assistant');
  });
});

describe('prepare: the latest request’s edits', () => {
  it('sends a cut request whole again once it fits', async () => {
    const request = user(text('REQ', 20_000));
    const call = await callOf([SYS, request]);
    const memo = memoOf({ requestClip: { index: 1, chars: 500 }, compactions: 1 });
    const p = prepare(call, withMemo(memo), C, new PairingProgress(10));
    expect(p.memoChanged).toBe(true);
    expect(p.memo).not.toHaveProperty('requestClip');
    expect(p.memo?.compactions).toBe(1);
    expect(p.view.messages[1]).toBe(request);
    expect(p.est.tokens).toBeLessThanOrEqual(8_000);
  });

  it('keeps the cut while the whole request would not fit', async () => {
    const call = await callOf([SYS, user(text('REQ', 24_000))]);
    const memo = memoOf({ requestClip: { index: 1, chars: 500 } });
    const p = prepare(call, withMemo(memo), C, new PairingProgress(10));
    expect(p.memo).toBe(memo);
    expect(p.memoChanged).toBeUndefined();
    expect(JSON.stringify(p.view.messages[1])).toContain('characters omitted');
  });

  it('drops the cut alone when the request’s images still do not fit', async () => {
    // 19,000 characters are ~7,100 tokens; with its image (1,600) the request is over the threshold.
    const request: GuardMessage = {
      role: 'user',
      content: [
        { type: 'text', text: text('REQ', 19_000) },
        { type: 'image', image: 'https://example.com/a.png' },
      ],
    };
    const call = await callOf([SYS, request]);
    const memo = memoOf({ requestClip: { index: 1, chars: 500 }, media: { '1:1': 1 } });
    const p = prepare(call, withMemo(memo), C, new PairingProgress(10));
    expect(p.memoChanged).toBe(true);
    expect(p.memo).not.toHaveProperty('requestClip');
    expect(p.memo?.media).toEqual({ '1:1': 1 });
    const content = p.view.messages[1]?.content as Array<{ type: string; text: string }>;
    expect(content[0]?.text).toBe(text('REQ', 19_000));
    expect(content[1]?.text).toMatch(/^\[An image was left out/);
  });

  it('drops the media too when the whole request fits', async () => {
    const request: GuardMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', image: 'https://example.com/a.png' },
      ],
    };
    const memo = memoOf({ media: { '1:1': 1, '0:3': 1 } });
    const p = prepare(await callOf([SYS, request]), withMemo(memo), C, new PairingProgress(10));
    expect(p.memoChanged).toBe(true);
    expect(p.memo?.media).toEqual({ '0:3': 1 });
    expect(p.view.messages[1]).toBe(request);
  });

  describe('a request still edited although it alone would fit', () => {
    // The history makes the whole request not fit; the system messages and the request alone do.
    const messages = [SYS, assistant(text('A1', 20_000)), user(text('REQ', 8_000))];
    const memo = memoOf({ requestClip: { index: 2, chars: 500 } });

    it('asks for a compaction to make room for it', async () => {
      const call = await callOf(messages);
      const state = withMemo(memo);
      const p = prepare(call, state, C, new PairingProgress(10));
      expect(p.memoChanged).toBeUndefined();
      expect(p.requestEdited).toBe(true);
      expect(p.est.tokens).toBeLessThanOrEqual(8_000);
      expect(needsCompaction(call, state, p)).toBe(true);
    });

    it('does not ask again for the history and calibration a compaction already decided on', async () => {
      const decided = { ...memo, requestDecided: { request: 2, messages: 3, usage: 4 } };
      const call = await callOf(messages);
      expect(
        prepare(call, withMemo(decided, { usageRecorded: 4 }), C, new PairingProgress(10)).requestEdited,
      ).toBeUndefined();
      // A new real count since: decided again.
      expect(prepare(call, withMemo(decided, { usageRecorded: 5 }), C, new PairingProgress(10)).requestEdited).toBe(
        true,
      );
    });

    it('does not ask when the request alone would not fit either', async () => {
      const call = await callOf([system(text('S', 16_000)), assistant(text('A1', 20_000)), user(text('REQ', 8_000))]);
      expect(prepare(call, withMemo(memo), C, new PairingProgress(10)).requestEdited).toBeUndefined();
    });
  });
});

describe('PairingProgress', () => {
  it('hands out the checked prefix once, 0 when unknown', () => {
    const pairing = new PairingProgress(10);
    expect(pairing.take('s')).toBe(0);
    pairing.set('s', 7);
    expect(pairing.take('s')).toBe(7);
    expect(pairing.take('s')).toBe(0);
  });

  it('forgets a session, and the oldest beyond its bound', () => {
    const pairing = new PairingProgress(2);
    pairing.set('a', 1);
    pairing.set('b', 2);
    pairing.set('c', 3);
    expect(pairing.take('a')).toBe(0);
    expect(pairing.take('c')).toBe(3);
    pairing.forget('b');
    expect(pairing.take('b')).toBe(0);
  });

  it('is advanced by prepare to the last unit of a valid prompt, and not after a repair', async () => {
    const pairing = new PairingProgress(10);
    const messages = [SYS, user('a'), ...toolStep('c1', {}, 'out'), user('b'), ...toolStep('c2', {}, 'out')];
    prepare(await callOf(messages), emptySessionState(), C, pairing);
    expect(pairing.take('s')).toBe(5);
    const orphan: GuardMessage = {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'gone', toolName: 'x', output: { type: 'text', value: 'y' } }],
    };
    prepare(await callOf([SYS, user('a'), orphan]), emptySessionState(), C, pairing);
    expect(pairing.take('s')).toBe(0);
  });
});
