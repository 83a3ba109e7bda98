// Decide (call/decide.ts): every branch of the decision to compact, and whether a state loaded again
// moved on. A 10k window (threshold 8k): the decision measures nothing, it reads the prepared estimate.
import { describe, expect, it } from 'vitest';
import { needsCompaction, stateMovedOn } from '../../src/call/decide.ts';
import type { Prepared } from '../../src/call/estimate.ts';
import type { Call } from '../../src/call/measure.ts';
import { emptyMemo, type CompactionMemo, type View } from '../../src/compaction/memo.ts';
import { summaryMessage } from '../../src/compaction/placement.ts';
import { requestIndex } from '../../src/compaction/request.ts';
import type { GuardMessage } from '../../src/index.ts';
import { emptySessionState, type SessionState } from '../../src/state/session.ts';
import { assistant, system, user } from '../helpers.ts';

const SYS = system('sys');
const memoOf = (fields: Partial<CompactionMemo>): CompactionMemo => ({ ...emptyMemo(), ...fields });

/** A call of a 10k window (threshold 8k) over `hostMessages`, for the decision alone. */
function decisionCall(hostMessages: GuardMessage[] = [SYS, user('r')]): Call {
  const unused = (): never => {
    throw new Error('the decision measures nothing');
  };
  return {
    sessionId: 's',
    hostMessages,
    tools: undefined,
    contextWindow: 10_000,
    threshold: 8_000,
    measure: unused,
    measureHostPrompt: unused,
    measureHost: unused,
    hashOf: unused,
    measureApart: unused,
    measureSystem: unused,
  };
}

function prepared(
  tokens: number,
  memo?: CompactionMemo,
  view?: View,
  requestEdited?: boolean,
  host: GuardMessage[] = [SYS, user('r')],
): Prepared {
  return {
    memo,
    request: memo ? requestIndex(host, memo.own) : -1,
    summaryApplies: false,
    view: view ?? { messages: [], origin: [], headLength: 0, unansweredCalls: 0, orphanResults: 0 },
    est: { tokens, heuristicTokens: tokens, correction: 1, method: 'default' },
    extendsAnchor: false,
    ...(requestEdited ? { requestEdited } : {}),
  } as Prepared;
}

describe('needsCompaction', () => {
  const state = emptySessionState();
  const asked: SessionState = { ...state, compactRequest: {} };

  it('compacts on request, under the threshold too', () => {
    expect(needsCompaction(decisionCall(), asked, prepared(10))).toBe(true);
  });

  it('compacts to send an edited request whole', () => {
    expect(needsCompaction(decisionCall(), state, prepared(10, undefined, undefined, true))).toBe(true);
  });

  it('compacts over the threshold only', () => {
    expect(needsCompaction(decisionCall(), state, prepared(8_000))).toBe(false);
    expect(needsCompaction(decisionCall(), state, prepared(8_001))).toBe(true);
  });

  describe('after an overflow', () => {
    const host = [SYS, user('old'), assistant('a'), user('request')];
    const overflowed = memoOf({ overflowed: true });
    /** The smallest prompt of the last compaction: the system message and request `request` (origins). */
    const smallest = (origins: number[]): View => ({
      messages: origins.map((o) => (o < 0 ? summaryMessage('digest') : (host[o] as GuardMessage))),
      origin: origins,
      headLength: origins.length,
      unansweredCalls: 0,
      orphanResults: 0,
    });

    it('does not compact the same smallest prompt again', () => {
      expect(
        needsCompaction(decisionCall(host), state, prepared(9_000, overflowed, smallest([0, 3]), false, host)),
      ).toBe(false);
    });

    it('compacts again once something was added that a compaction could remove', () => {
      expect(
        needsCompaction(decisionCall(host), state, prepared(9_000, overflowed, smallest([0, 2, 3]), false, host)),
      ).toBe(true);
    });

    it('compacts again when the prompt is over the window itself', () => {
      expect(
        needsCompaction(decisionCall(host), state, prepared(10_001, overflowed, smallest([0, 3]), false, host)),
      ).toBe(true);
    });

    it('compacts again when the request was cut', () => {
      const cut = memoOf({ overflowed: true, requestClip: { index: 3, chars: 500 } });
      expect(needsCompaction(decisionCall(host), state, prepared(9_000, cut, smallest([0, 3]), false, host))).toBe(
        true,
      );
      // A cut of an older request is not this request's.
      const older = memoOf({ overflowed: true, requestClip: { index: 1, chars: 500 } });
      expect(needsCompaction(decisionCall(host), state, prepared(9_000, older, smallest([0, 3]), false, host))).toBe(
        false,
      );
    });
  });
});

describe('stateMovedOn', () => {
  const state: SessionState = { ...emptySessionState(), calls: 3, usageRecorded: 2, startedAt: '2026-01-01T00:00:00Z' };

  it('is false for the same state, or one loaded again with the same progress and request', () => {
    expect(stateMovedOn(state, state)).toBe(false);
    expect(stateMovedOn(state, structuredClone(state))).toBe(false);
    const asked = { ...state, compactRequest: { focus: 'tests' } };
    expect(stateMovedOn(asked, structuredClone(asked))).toBe(false);
  });

  it('is true once a call or a real count was recorded, a compaction requested, or the session reset', () => {
    expect(stateMovedOn(state, { ...state, calls: 4 })).toBe(true);
    expect(stateMovedOn(state, { ...state, usageRecorded: 3 })).toBe(true);
    expect(stateMovedOn(state, { ...state, compactRequest: {} })).toBe(true);
    expect(stateMovedOn({ ...state, compactRequest: {} }, { ...state, compactRequest: { focus: 'x' } })).toBe(true);
    expect(stateMovedOn(state, { ...state, startedAt: undefined })).toBe(true);
  });
});
