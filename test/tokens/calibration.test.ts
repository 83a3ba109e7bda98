// The calibration maths on plain state (tokens/calibration.ts): the estimate's three methods and
// the response floor, how a real count is folded in (growth sums and their decay, steps far off
// their prediction), the growth model (a rate and a cost per added message), the reset after
// a compaction and the pricing that follows it, the plausible ranges of a provider's counts, and
// the offset a compaction carries. Default calibration: min 1, max 5, default 1.5.
import { describe, expect, it } from 'vitest';
import type { ResolvedCalibration } from '../../src/config.ts';
import type { CalibrationState, PendingRequest, RequestMeasure } from '../../src/state/session.ts';
import {
  compactionCalibration,
  estimate,
  growthModel,
  plausibleInputRange,
  plausibleOutputMax,
  priceAfterReset,
  recordRealCount,
  resetCalibration,
  shortfallMargin,
  tokensPerCharAfterReset,
} from '../../src/tokens/calibration.ts';

const C: ResolvedCalibration = { min: 1, max: 5, default: 1.5 };

/** A request of `chars` heuristic characters (chars/4 tokens) and `mediaTokens`. */
function request(chars: number, mediaTokens = 0, messages = 2): RequestMeasure {
  return { chars, mediaTokens, toolChars: 0, prompt: { messages, chars, hash: chars * 31 + messages } };
}

function pending(chars: number, extendsAnchor: boolean, mediaTokens = 0): PendingRequest {
  return { ...request(chars, mediaTokens), extendsAnchor, estimatedTokens: 0 };
}

/** A state anchored on a request of `chars` characters that really cost `realTokens`. */
function anchored(
  chars: number,
  realTokens: number,
  extra: Partial<NonNullable<CalibrationState['anchor']>> = {},
): CalibrationState {
  return { anchor: { ...request(chars), realTokens, ...extra } };
}

describe('estimate', () => {
  it('uses the default correction without any real count', () => {
    const e = estimate(request(400, 10), {}, C, undefined);
    // 100 heuristic tokens × 1.5, media not calibrated.
    expect(e).toEqual({ tokens: 160, heuristicTokens: 110, correction: 1.5, method: 'default' });
  });

  it('scales by the anchor’s real / heuristic ratio when the request does not extend it', () => {
    const e = estimate(request(800), anchored(4_000, 2_000), C, undefined);
    expect(e).toMatchObject({ tokens: 400, correction: 2, method: 'scaled' });
  });

  it('clamps the ratio to the calibration’s bounds', () => {
    expect(estimate(request(800), anchored(4_000, 100_000), C, undefined)).toMatchObject({
      tokens: 1_000,
      correction: 5,
    });
    expect(estimate(request(800), anchored(4_000, 100), C, undefined)).toMatchObject({ tokens: 200, correction: 1 });
  });

  it('leaves the anchor’s media tokens out of its ratio', () => {
    const state: CalibrationState = { anchor: { ...request(4_000, 500), realTokens: 1_500 } };
    expect(estimate(request(800, 40), state, C, undefined)).toMatchObject({ tokens: 240, correction: 1 });
  });

  it('prices an extension as the anchor’s real count plus the addition at the prior marginal rate', () => {
    // Ratio 2, but the prior marginal rate is capped at the default: 100 added tokens × 1.5.
    const e = estimate(request(4_400), anchored(4_000, 2_000), C, { responseChars: undefined });
    expect(e).toMatchObject({ tokens: 2_150, correction: 1.5, method: 'anchored' });
  });

  it('takes the prior marginal rate from a ratio below the default', () => {
    const e = estimate(request(4_400), anchored(4_000, 1_200), C, { responseChars: undefined });
    expect(e).toMatchObject({ tokens: 1_320, correction: 1.2 });
  });

  it('uses the measured growth for what was added', () => {
    const state: CalibrationState = { ...anchored(4_000, 2_000), growth: { realTokens: 300, heuristicTokens: 100 } };
    expect(estimate(request(4_400), state, C, { responseChars: undefined })).toMatchObject({
      tokens: 2_300,
      correction: 3,
    });
  });

  it('never estimates an extension below the anchor’s real count', () => {
    const e = estimate(request(3_000), anchored(4_000, 2_000), C, { responseChars: undefined });
    expect(e.tokens).toBe(2_000);
  });

  it('adds the added media at face value', () => {
    const state: CalibrationState = { anchor: { ...request(4_000, 100), realTokens: 2_100 } };
    expect(estimate(request(4_000, 350), state, C, { responseChars: undefined }).tokens).toBe(2_350);
  });

  describe('the response floor', () => {
    const state = anchored(4_000, 2_000, { outputTokens: 500 });

    it('counts the reported output tokens when they exceed the response’s estimate', () => {
      // The response (400 characters, 150 tokens at 1.5) is part of the 100 added tokens; the
      // provider said it cost 500: 350 more.
      const e = estimate(request(4_400), state, C, { responseChars: 400 });
      expect(e.tokens).toBe(2_500);
    });

    it('is only a floor: a response estimated above its output count adds nothing', () => {
      const e = estimate(request(4_400), anchored(4_000, 2_000, { outputTokens: 50 }), C, { responseChars: 400 });
      expect(e.tokens).toBe(2_150);
    });

    it('needs both the response’s size and the output count', () => {
      expect(estimate(request(4_400), state, C, { responseChars: undefined }).tokens).toBe(2_150);
      expect(estimate(request(4_400), anchored(4_000, 2_000), C, { responseChars: 400 }).tokens).toBe(2_150);
    });

    it('does not apply to a request that does not extend the anchor', () => {
      expect(estimate(request(4_400), state, C, undefined)).toMatchObject({ tokens: 2_200, method: 'scaled' });
    });
  });

  it('prices from the reference after a reset, offset included', () => {
    const state: CalibrationState = { reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0, offset: 50 } };
    const e = estimate(request(800, 10), state, C, undefined);
    // ratio 2 × 200 + media 10 + offset 50.
    expect(e).toMatchObject({ tokens: 460, method: 'scaled', heuristicTokens: 210 });
    expect(e.correction).toBeCloseTo(450 / 200);
  });

  it('reports the default correction for an empty request priced from a reference', () => {
    const state: CalibrationState = { reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0 } };
    expect(estimate(request(0), state, C, undefined)).toMatchObject({ tokens: 0, correction: 1.5 });
  });
});

describe('recordRealCount', () => {
  it('makes the first real count the anchor, without growth', () => {
    const next = recordRealCount({ pending: pending(4_000, false) }, pending(4_000, false), 2_000, 300, C);
    // The share beyond the visible prompt at the prior rate (1.5 × 1,000): one count, nothing consistent yet.
    expect(next).toEqual({
      anchor: { ...request(4_000), realTokens: 2_000, outputTokens: 300 },
      hidden: { last: 500, recent: [500], floors: [0], counts: [[2_000, 1_000]] },
    });
  });

  it('leaves the output count out when none was reported', () => {
    const next = recordRealCount({}, pending(4_000, false), 2_000, undefined, C);
    expect(next.anchor).not.toHaveProperty('outputTokens');
  });

  it('starts the growth sums from the prior as pseudo-counts', () => {
    // Prior: min(ratio 2, default 1.5) over 1,000 heuristic tokens. Growth: 1,000 heuristic, 2,000 real.
    const next = recordRealCount(anchored(4_000, 2_000), pending(8_000, true), 4_000, undefined, C);
    expect(next.growth?.realTokens).toBeCloseTo(1_500 * 0.7 + 2_000);
    expect(next.growth?.heuristicTokens).toBeCloseTo(1_000 * 0.7 + 1_000);
    expect(next.anchor).toMatchObject({ chars: 8_000, realTokens: 4_000 });
  });

  it('decays older growth at each new real count', () => {
    const state: CalibrationState = {
      ...anchored(8_000, 5_000),
      growth: { realTokens: 4_050, heuristicTokens: 1_700 },
    };
    const next = recordRealCount(state, pending(12_000, true), 7_000, undefined, C);
    expect(next.growth?.realTokens).toBeCloseTo(4_050 * 0.7 + 2_000);
    expect(next.growth?.heuristicTokens).toBeCloseTo(1_700 * 0.7 + 1_000);
  });

  it('takes added media out of the real growth', () => {
    const state: CalibrationState = { anchor: { ...request(4_000, 100), realTokens: 2_000 } };
    const next = recordRealCount(state, pending(8_000, true, 600), 4_500, undefined, C);
    expect(next.growth?.realTokens).toBeCloseTo(1_500 * 0.7 + 2_000);
  });

  it('learns at most 1.5 times the predicted growth: a jump of the hidden part stays in the anchor', () => {
    // Rate 1.5 measured; 1,000 heuristic tokens were added and the real count grew by 10,000 (a
    // host's hidden attachment, a hook's output): the rates learn 2,250, the anchor has it all.
    const state: CalibrationState = {
      ...anchored(4_000, 2_000),
      growth: { realTokens: 1_500, heuristicTokens: 1_000 },
    };
    const next = recordRealCount(state, pending(8_000, true), 12_000, undefined, C);
    expect(next.growth?.realTokens).toBeCloseTo(1_500 * 0.7 + 2_250);
    expect(next.anchor?.realTokens).toBe(12_000);
    // The next addition is priced near the provider's rate, not at the clamp (5).
    expect(estimate(request(12_000), next, C, { responseChars: undefined }).correction).toBeLessThan(2.5);
  });

  it('learns at least half the predicted growth: a provider dropping earlier reasoning is no cheaper rate', () => {
    // Rate 1.5 measured; 1,000 heuristic tokens were added, but the provider dropped earlier
    // reasoning from this prompt: the real count grew by 200 only.
    const state: CalibrationState = {
      ...anchored(4_000, 2_000),
      growth: { realTokens: 1_500, heuristicTokens: 1_000 },
    };
    const next = recordRealCount(state, pending(8_000, true), 2_200, undefined, C);
    expect(next.growth?.realTokens).toBeCloseTo(1_500 * 0.7 + 750);
    expect(next.anchor?.realTokens).toBe(2_200);
  });

  it('adds the messages of each step to the message sums', () => {
    const next = recordRealCount(anchored(4_000, 2_000), grown(8_000, 4), 4_000, undefined, C);
    // 1,000 heuristic tokens in 2 messages, 2,000 real (within 1.5 times the 1,500 predicted).
    expect(next.growth).toMatchObject({ messages: 2 });
    expect(next.growth?.messageLoad).toBeCloseTo(4 / 1_000);
    expect(next.growth?.messageReal).toBeCloseTo((2 * 2_000) / 1_000);
  });

  it('keeps the growth as it was when the request did not extend the anchor', () => {
    const growth = { realTokens: 400, heuristicTokens: 100 };
    const next = recordRealCount({ ...anchored(4_000, 2_000), growth }, pending(8_000, false), 5_000, undefined, C);
    expect(next.growth).toEqual(growth);
    expect(next.anchor?.realTokens).toBe(5_000);
  });

  it('ignores growth that is not growth (fewer real tokens or no added text)', () => {
    const state = anchored(4_000, 2_000);
    expect(recordRealCount(state, pending(8_000, true), 1_900, undefined, C).growth).toBeUndefined();
    expect(recordRealCount(state, pending(4_000, true), 2_500, undefined, C).growth).toBeUndefined();
  });

  it('drops the pending request and any reference', () => {
    const state: CalibrationState = {
      reference: { realTokens: 1, chars: 4, mediaTokens: 0 },
      pending: pending(400, false),
    };
    const next = recordRealCount(state, pending(400, false), 150, undefined, C);
    expect(Object.keys(next)).toEqual(['anchor', 'hidden']);
  });
});

/** A request of `chars` characters in `messages` messages that extends the anchor. */
const grown = (chars: number, messages: number): PendingRequest => ({
  ...request(chars, 0, messages),
  extendsAnchor: true,
  estimatedTokens: 0,
});

/**
 * Folds growth steps into `start` (by default anchored on 2,000 real tokens for 4,000 characters
 * in 2 messages): each step adds [heuristic tokens, messages] that really cost `cost` of them.
 */
function grow(
  steps: ReadonlyArray<readonly [number, number]>,
  cost: (tokens: number, messages: number) => number,
  start: CalibrationState = anchored(4_000, 2_000),
): CalibrationState {
  let state = start;
  for (const [tokens, messages] of steps) {
    const a = state.anchor as NonNullable<CalibrationState['anchor']>;
    const next = grown(a.chars + tokens * 4, a.prompt.messages + messages);
    state = recordRealCount(state, next, a.realTokens + cost(tokens, messages), undefined, C);
  }
  return state;
}

/** A tool-using session: large tool outputs, then small steps (a call and a short result each). */
const SESSION: ReadonlyArray<readonly [number, number]> = [
  [3_000, 2],
  [50, 2],
  [60, 2],
  [2_000, 2],
  [40, 2],
  [80, 2],
  [50, 2],
  [70, 2],
];

describe('growthModel', () => {
  it('is the prior marginal rate, without a cost per message, before any growth', () => {
    expect(growthModel(anchored(4_000, 2_000), C)).toEqual({ rate: 1.5, perMessage: 0 });
  });

  it('is the plain ratio, without a cost per message, for growth stored without the message sums', () => {
    expect(growthModel({ ...anchored(4_000, 2_000), growth: { realTokens: 300, heuristicTokens: 100 } }, C)).toEqual({
      rate: 3,
      perMessage: 0,
    });
  });

  it('fits a cost per added message beside the rate', () => {
    // The provider wraps each message (a tool call, a tool result) in 30 tokens of its own.
    const m = growthModel(
      grow(SESSION, (tokens, messages) => 1.4 * tokens + 30 * messages),
      C,
    );
    expect(m.rate).toBeCloseTo(1.4, 1);
    expect(m.perMessage).toBeGreaterThan(25);
    expect(m.perMessage).toBeLessThan(32);
  });

  it('finds no cost per message where the provider counts none', () => {
    const m = growthModel(
      grow([...SESSION, ...SESSION], (tokens) => 2 * tokens),
      C,
    );
    // What is left of the prior (rate 1.5, no cost per message) after sixteen steps.
    expect(m.rate).toBeCloseTo(2, 2);
    expect(m.perMessage).toBeLessThan(0.5);
  });

  it('takes a negative cost per message as none: the rate is then the plain ratio', () => {
    // Small steps cheaper per token than large ones.
    const state = grow(SESSION, (tokens, messages) => 1.5 * tokens - 10 * messages);
    const g = state.growth as NonNullable<CalibrationState['growth']>;
    expect(growthModel(state, C)).toEqual({ rate: g.realTokens / g.heuristicTokens, perMessage: 0 });
  });

  it('holds the rate at its bounds and fits the cost per message to it', () => {
    const m = growthModel(
      grow(SESSION, (tokens, messages) => 0.8 * tokens + 20 * messages),
      C,
    );
    expect(m.rate).toBe(1);
    expect(m.perMessage).toBeGreaterThan(0);
  });
});

describe('estimate with a cost per message', () => {
  const cost = (tokens: number, messages: number) => 1.4 * tokens + 30 * messages;
  const state = grow(SESSION, cost);
  const a = state.anchor as NonNullable<CalibrationState['anchor']>;

  it('prices a large addition after small steps at the rate, not at the small steps’ ratio', () => {
    // Ten thousand heuristic tokens of tool output in two messages: the ratio of the growth sums,
    // inflated by the per-message cost of the small steps, would price it 60% too high.
    const e = estimate(grown(a.chars + 40_000, a.prompt.messages + 2), state, C, { responseChars: undefined });
    const real = a.realTokens + cost(10_000, 2);
    expect(Math.abs(e.tokens - real) / real).toBeLessThan(0.01);
  });

  it('adds the cost of each added message', () => {
    const m = growthModel(state, C);
    const e = estimate(grown(a.chars + 400, a.prompt.messages + 3), state, C, { responseChars: undefined });
    expect(e.tokens).toBe(Math.ceil(a.realTokens + 100 * m.rate + 3 * m.perMessage));
  });

  it('counts the response’s message in the estimate its output count is a floor for', () => {
    const m = growthModel(state, C);
    // The response: 400 characters in one message; the output count matches its estimate.
    const response = 100 * m.rate + m.perMessage;
    const at = (outputTokens: number) =>
      estimate(grown(a.chars + 800, a.prompt.messages + 2), { ...state, anchor: { ...a, outputTokens } }, C, {
        responseChars: 400,
      }).tokens;
    const without = Math.ceil(a.realTokens + 200 * m.rate + 2 * m.perMessage);
    expect(at(Math.floor(response))).toBe(without);
    expect(at(Math.floor(response) + 50)).toBeGreaterThanOrEqual(without + 49);
  });
});

describe('the shortfall margin', () => {
  /** A request extending the anchor of `grow(SESSION, …)` by `tokens` heuristic tokens in 2 messages, sent with `estimatedTokens`. */
  const sent = (state: CalibrationState, tokens: number, estimatedTokens: number): PendingRequest => {
    const a = state.anchor as NonNullable<CalibrationState['anchor']>;
    return { ...grown(a.chars + tokens * 4, a.prompt.messages + 2), estimatedTokens };
  };
  const cost = (tokens: number, messages: number) => 1.4 * tokens + 30 * messages;
  const base = grow(SESSION, cost);
  const at = (state: CalibrationState, tokens: number) => {
    const a = state.anchor as NonNullable<CalibrationState['anchor']>;
    return estimate(grown(a.chars + tokens * 4, a.prompt.messages + 2), state, C, { responseChars: undefined }).tokens;
  };

  it('is none where the estimates keep up with the real counts', () => {
    // Every step sent with its own estimate and really costing exactly that: nothing fell short.
    let state = base;
    for (const tokens of [500, 40, 3_000, 60]) {
      const e = at(state, tokens);
      state = recordRealCount(state, sent(state, tokens, e), e, undefined, C);
    }
    expect(state).not.toHaveProperty('shortfall');
    expect(shortfallMargin(state)).toBe(0);
  });

  it('remembers how far an anchored estimate fell short of the real count', () => {
    // A host added 3,000 tokens the guard never saw (a hook's output) to a 500-token step.
    const e = at(base, 500);
    const next = recordRealCount(base, sent(base, 500, e), e + 3_000, undefined, C);
    expect(next.shortfall).toBe(3_000);
    expect(next.anchor?.realTokens).toBe(e + 3_000);
  });

  it('keeps a share of it as headroom on the next anchored estimates, fading at each real count', () => {
    const e = at(base, 500);
    let state = recordRealCount(base, sent(base, 500, e), e + 3_000, undefined, C);
    const margins: number[] = [];
    for (let i = 0; i < 4; i++) {
      const plain = at({ ...state, shortfall: 0 }, 100);
      const withMargin = at(state, 100);
      margins.push(withMargin - plain);
      expect(shortfallMargin(state)).toBeCloseTo(withMargin - plain, -1);
      // The step costs what the model predicts: no new shortfall.
      state = recordRealCount(state, sent(state, 100, withMargin), plain, undefined, C);
    }
    expect(margins[0]).toBeCloseTo(0.2 * 3_000, -1);
    for (let i = 1; i < margins.length; i++) expect(margins[i]).toBeLessThan(margins[i - 1] as number);
    expect(margins[3]).toBeCloseTo(0.2 * 3_000 * 0.8 ** 3, -1);
  });

  it('counts the shortfall against the estimate sent, margin included', () => {
    const state: CalibrationState = { ...base, shortfall: 1_000 };
    const e = at(state, 500);
    // The same hidden jump again, 200 tokens of which the margin covered.
    const next = recordRealCount(state, sent(state, 500, e), e + 800, undefined, C);
    expect(next.shortfall).toBeCloseTo(800);
  });

  it('learns nothing from a request that did not extend the anchor, nor from one sent without an estimate', () => {
    const e = at(base, 500);
    const notExtending = { ...sent(base, 500, e), extendsAnchor: false };
    expect(recordRealCount(base, notExtending, e + 3_000, undefined, C)).not.toHaveProperty('shortfall');
    expect(recordRealCount(base, sent(base, 500, 0), e + 3_000, undefined, C)).not.toHaveProperty('shortfall');
  });

  it('is kept through a reset, and priced only on anchored estimates (a compaction plans without it)', () => {
    const state: CalibrationState = { ...base, shortfall: 1_000 };
    const reset = resetCalibration(state);
    expect(reset.shortfall).toBe(1_000);
    const price = priceAfterReset(reset, C);
    expect(estimate(request(8_000), reset, C, undefined).tokens).toBe(Math.ceil(price(8_000, 0)));
  });
});

describe('resetCalibration', () => {
  it('turns the anchor into the reference and keeps the growth', () => {
    const growth = { realTokens: 300, heuristicTokens: 100 };
    const state: CalibrationState = {
      ...anchored(4_000, 2_000, { outputTokens: 9 }),
      growth,
      pending: pending(5_000, true),
    };
    expect(resetCalibration(state)).toEqual({ growth, reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0 } });
  });

  it('records an offset only when positive', () => {
    expect(resetCalibration(anchored(4_000, 2_000), 120).reference).toMatchObject({ offset: 120 });
    expect(resetCalibration(anchored(4_000, 2_000), 0).reference).not.toHaveProperty('offset');
  });

  it('keeps a reference through a second reset, with the new offset', () => {
    const state: CalibrationState = { reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0, offset: 80 } };
    expect(resetCalibration(state).reference).toEqual({ realTokens: 2_000, chars: 4_000, mediaTokens: 0 });
    expect(resetCalibration(state, 30).reference?.offset).toBe(30);
  });

  it('is empty without any real count', () => {
    expect(resetCalibration({ pending: pending(400, false) })).toEqual({});
  });
});

describe('priceAfterReset', () => {
  it('uses the default correction without a reference', () => {
    expect(priceAfterReset({}, C)(400, 7)).toBe(157);
  });

  it('prices by the reference’s ratio when no growth was measured (a dense tokenizer is not a hidden prompt)', () => {
    // 3 tokens per 4 characters: from one real count, indistinguishable from a hidden prompt.
    const price = priceAfterReset({ reference: { realTokens: 3_000, chars: 4_000, mediaTokens: 0 } }, C);
    expect(price(400, 0)).toBe(300);
  });

  it('adds the invisible part once a marginal rate was measured', () => {
    // A 26k hidden prompt over 1,000 heuristic tokens of conversation counted at 1 token each.
    const state: CalibrationState = {
      reference: { realTokens: 27_000, chars: 4_000, mediaTokens: 0 },
      growth: { realTokens: 1_000, heuristicTokens: 1_000 },
    };
    expect(priceAfterReset(state, C)(400, 0)).toBe(26_100);
    // The ratio (clamped at 5) wins for a prompt large enough.
    expect(priceAfterReset(state, C)(40_000, 0)).toBe(50_000);
  });

  it('adds the offset to a prompt priced from the reference, never from an anchor', () => {
    const ref = { realTokens: 2_000, chars: 4_000, mediaTokens: 0, offset: 70 };
    expect(priceAfterReset({ reference: ref }, C)(800, 5)).toBe(475);
    expect(priceAfterReset({ reference: ref, ...anchored(4_000, 2_000) }, C)(800, 5)).toBe(405);
  });
});

describe('the invisible share', () => {
  it('a single count far beyond calibration.max × the visible text: the rest is invisible for sure', () => {
    // 12,000 tokens for 20 heuristic tokens (Claude Code's system prompt kept out of the transcript).
    const state = recordRealCount({ pending: pending(80, false) }, pending(80, false), 12_000, undefined, C);
    expect(state.hidden?.floors).toEqual([12_000 - 5 * 20]);
    // A compacted prompt of 100 heuristic tokens is priced with it, not as 5 × its text.
    expect(priceAfterReset(resetCalibration(state), C)(400, 0)).toBeGreaterThanOrEqual(11_900 + 100);
  });

  it('the consistent share is the smallest of the last three counts: a one-off jump does not raise it', () => {
    let state: CalibrationState = {};
    const counts = [10_000, 10_200, 30_000];
    counts.forEach((real, i) => {
      const p = pending(400 + 40 * i, i > 0);
      state = recordRealCount({ ...state, pending: p }, p, real, undefined, C);
    });
    expect(state.hidden?.recent).toHaveLength(3);
    expect(state.hidden?.consistent).toBeLessThan(10_000);
    expect(state.hidden?.last).toBeGreaterThan(29_000);
  });
});

describe('the invisible share across a compaction, no growth measured', () => {
  /** A count of `before` characters, the guard's compaction, then a count of `after` characters. */
  function across(before: [number, number], after: [number, number]): CalibrationState {
    const first = pending(before[0], false);
    const state = resetCalibration(recordRealCount({ pending: first }, first, before[1], undefined, C));
    const second = pending(after[0], false);
    return recordRealCount({ ...state, pending: second }, second, after[1], undefined, C);
  }

  it('reads both counts at the rate their difference shows: the share is the same on both sides', () => {
    // 6,000 hidden tokens at 1 token per heuristic token, 20,000 visible then 1,000. At the prior rate
    // (the first count's ratio 1.3) the first share read 0, and the compacted prompt's a jump over it.
    const state = across([80_000, 26_000], [4_000, 7_000]);
    expect(state.hidden?.recent).toEqual([6_000, 6_000]);
    expect(state.hidden?.consistent).toBe(6_000);
    expect(priceAfterReset(resetCalibration(state), C)(4_000, 0)).toBeGreaterThanOrEqual(7_000);
  });

  it('a difference under calibration.min reads both at the minimum: the jump over the first stays one-off', () => {
    // The soak's provider counting 0.4 tokens per token measured (seed 937377671, conversation 6794).
    const state = across([24_616, 9_358], [3_032, 7_353]);
    expect(state.hidden?.recent).toEqual([9_358 - 6_154, 7_353 - 758]);
    expect(state.hidden?.consistent).toBe(9_358 - 6_154);
  });

  it('prompts of close sizes, or a rate above the prior, leave the reading as it was', () => {
    expect(across([8_000, 9_000], [6_000, 8_000]).hidden?.recent).toEqual([9_000 - 2_000 * 1.5, 8_000 - 1_500 * 1.5]);
    // 2 tokens per token removed, priced at the prior 1.5: no more share read than before.
    expect(across([80_000, 40_000], [4_000, 2_000]).hidden?.recent).toEqual([10_000, 500]);
  });
});

describe('the invisible share read again when the rate it is read at is revised', () => {
  // The soak's conversation 3498 (seed 2046551328): calibration.default 2, a provider counting 1 token
  // per heuristic token plus 1,618 hidden ones; the guard compacted before each count.
  const D: ResolvedCalibration = { min: 1, max: 5, default: 2 };
  const counted = (state: CalibrationState, p: PendingRequest, real: number) =>
    resetCalibration(recordRealCount({ ...state, pending: p }, p, real, undefined, D));

  it('every kept count is read at the latest rate: an early reading at a dearer prior does not hold the share down', () => {
    let state: CalibrationState = {};
    state = counted(state, pending(6_199, false), 3_168);
    state = counted(state, pending(6_064, false), 3_135);
    // Same-sized prompts: read at the prior 2, ~70 and ~100 hidden tokens.
    expect(state.hidden?.consistent).toBeLessThan(200);
    // The compacted prompt's count shows the rate (1 per heuristic token): all three read again at it.
    state = counted(state, pending(1_769, false), 2_061);
    for (const share of state.hidden?.recent ?? []) expect(share).toBeCloseTo(1_618, -1);
    expect(state.hidden?.consistent).toBeCloseTo(1_618, -1);
  });

  it('the output count of a response the guard measured shows the rate before any growth is measured', () => {
    let state: CalibrationState = {};
    state = counted(state, pending(6_199, false), 3_168);
    // The next request held the response (2,438 characters) the provider reported 610 output tokens for.
    state = counted(
      state,
      { ...pending(6_064, false), response: { heuristicTokens: 2_438 / 4, outputTokens: 610 } },
      3_135,
    );
    expect(state.hidden?.consistent).toBeCloseTo(1_618, -1);
    // The compacted prompt (1,769 characters, counted 2,061) is priced with the share.
    expect(priceAfterReset(state, D)(1_769, 0)).toBeGreaterThanOrEqual(2_061);
  });

  it('a small response, or one whose output count is dearer than the prior, leaves the reading at the prior', () => {
    let state: CalibrationState = {};
    state = counted(state, pending(6_199, false), 3_168);
    const small = counted(
      state,
      { ...pending(6_064, false), response: { heuristicTokens: 53, outputTokens: 54 } },
      3_135,
    );
    expect(small.hidden?.consistent).toBeCloseTo(3_168 - 2 * 1_549.75);
    // Reasoning tokens the response does not show: the output count is only an upper bound of the rate.
    const dear = counted(
      state,
      { ...pending(6_064, false), response: { heuristicTokens: 600, outputTokens: 3_000 } },
      3_135,
    );
    expect(dear.hidden?.consistent).toBeCloseTo(3_168 - 2 * 1_549.75);
  });

  it('a state stored before the counts were kept goes on from its readings', () => {
    const stored: CalibrationState = {
      reference: { realTokens: 3_135, chars: 6_064, mediaTokens: 0 },
      hidden: { last: 103, consistent: 68.5, recent: [68.5, 103], floors: [0, 0] },
    };
    const p = pending(1_769, false);
    const next = recordRealCount({ ...stored, pending: p }, p, 2_061, undefined, D);
    // The previous count is the reference: read again across the compaction; the oldest as it was.
    expect(next.hidden?.recent?.[0]).toBe(68.5);
    expect(next.hidden?.recent?.[1]).toBeCloseTo(1_618, -1);
    expect(next.hidden?.counts).toHaveLength(1);
  });
});

describe('tokensPerCharAfterReset', () => {
  it('is the default per character without a reference', () => {
    expect(tokensPerCharAfterReset({}, C)).toBeCloseTo(1.5 / 4);
  });

  it('is the larger of the ratio and the marginal rate, per character', () => {
    expect(tokensPerCharAfterReset(anchored(4_000, 2_000), C)).toBeCloseTo(2 / 4);
    const state: CalibrationState = {
      reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0 },
      growth: { realTokens: 300, heuristicTokens: 100 },
    };
    expect(tokensPerCharAfterReset(state, C)).toBeCloseTo(3 / 4);
  });
});

describe('plausible counts', () => {
  it('bounds the input by calibration.max, twice the media and an allowance of half the window', () => {
    // 10,000 heuristic tokens: at most 5 × 10,000 + 2 × 300 + 50,000; at least a fiftieth.
    expect(plausibleInputRange(request(40_000, 300), C, 100_000)).toEqual({ min: 200, max: 100_600 });
  });

  it('checks no minimum on small prompts', () => {
    expect(plausibleInputRange(request(3_996), C, 100_000).min).toBe(1);
    expect(plausibleInputRange(request(4_000), C, 100_000).min).toBe(20);
  });

  it('never allows more than twice the window plus the allowance', () => {
    expect(plausibleInputRange(request(4_000_000), C, 100_000).max).toBe(250_000);
  });

  it('allows at least 8k invisible tokens on a small window (and any count within the window), 100k without one', () => {
    expect(plausibleInputRange(request(400), C, 10_000).max).toBe(10_000);
    expect(plausibleInputRange(request(400), C, 4_000).max).toBe(8_500);
    expect(plausibleInputRange(request(400), C, undefined).max).toBe(100_500);
    expect(plausibleInputRange(request(4_000_000), C, undefined).max).toBe(5_100_000);
  });

  it('keeps media that alone exceed the window’s bound', () => {
    // 2 × 200,000 media + 8,000 allowance, over 2 × 10,000 + 8,000.
    expect(plausibleInputRange(request(400, 200_000), C, 10_000).max).toBe(408_000);
  });

  it('bounds the output by twice the window (at least 200k), 1M when unknown', () => {
    expect(plausibleOutputMax(128_000)).toBe(256_000);
    expect(plausibleOutputMax(8_000)).toBe(200_000);
    expect(plausibleOutputMax(undefined)).toBe(1_000_000);
  });
});

describe('compactionCalibration', () => {
  it('carries what the estimate knew beyond the reset pricing as an offset', () => {
    // Reset pricing: ratio 2 → 2,200 for 4,400 characters; the estimate said 2,500.
    const next = compactionCalibration(anchored(4_000, 2_000), C, 2_500, 4_400, 0);
    expect(next).toEqual({ reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0, offset: 300 } });
    // The next call prices the measured prompt exactly as the current estimate did.
    expect(priceAfterReset(next, C)(4_400, 0)).toBe(2_500);
  });

  it('carries no offset when the reset pricing is already higher', () => {
    expect(compactionCalibration(anchored(4_000, 2_000), C, 1_000, 4_400, 0).reference).not.toHaveProperty('offset');
  });

  it('replaces an earlier offset instead of adding to it', () => {
    const state: CalibrationState = { reference: { realTokens: 2_000, chars: 4_000, mediaTokens: 0, offset: 300 } };
    // The current estimate already includes the old offset: 2,200 + 300.
    expect(compactionCalibration(state, C, 2_500, 4_400, 0).reference?.offset).toBe(300);
  });
});
