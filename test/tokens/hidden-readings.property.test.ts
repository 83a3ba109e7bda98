// The invisible share's readings after a real count (tokens/calibration.ts, recordRealCount), for
// any kept state: the last two readings kept are read again at the new count's rate where their
// count is stored and stay as they were where it is not (states stored before counts were kept),
// then the new count's reading; the consistent share is the smallest of them; the floors are the
// last two kept and the new one; the counts stay aligned on the readings. Checked against the
// rule written plainly here, so that a faster way of building these arrays keeps every value. A
// stored state with something else in their place (another version, a broken write) is read as
// having none there: the readings and the prices made from them stay numbers.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ResolvedCalibration } from '../../src/config.ts';
import type { CalibrationState, PendingRequest } from '../../src/state/session.ts';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { growthModel, recordRealCount } from '../../src/tokens/calibration.ts';

const C: ResolvedCalibration = { min: 1, max: 5, default: 1.5 };
const CHARS_PER_TOKEN = 4;

type Count = [number, number];
type Hidden = NonNullable<CalibrationState['hidden']>;

const share = fc.double({ min: -50_000, max: 50_000, noNaN: true });
const count = fc.tuple(fc.integer({ min: 0, max: 200_000 }), fc.double({ min: 0, max: 100_000, noNaN: true }));

/** A kept invisible share as any version stored it: readings, perhaps their counts, perhaps floors. */
const keptHidden: fc.Arbitrary<Hidden> = fc
  .record({
    recent: fc.option(fc.array(share, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    last: share,
    counted: fc.nat({ max: 3 }),
    counts: fc.array(count, { minLength: 3, maxLength: 3 }),
    floors: fc.option(fc.array(fc.double({ min: 0, max: 50_000, noNaN: true }), { maxLength: 3 }), { nil: undefined }),
  })
  .map(({ recent, last, counted, counts, floors }) => {
    const readings = recent ?? [last];
    const hidden: Hidden = { last: readings[readings.length - 1] ?? last };
    if (recent) hidden.recent = recent;
    // Counts are kept for the last readings only (none in states stored before they were kept).
    if (counted > 0) hidden.counts = counts.slice(0, Math.min(counted, readings.length)) as Count[];
    if (floors) hidden.floors = floors;
    if (readings.length > 1) hidden.consistent = Math.min(...readings);
    return hidden;
  });

/** The readings after a count, by the rule, at the rate the new state reads shares at. */
function expectedHidden(kept: Hidden, realTokens: number, chars: number, rate: number): Hidden {
  const earlier = kept.recent ?? [kept.last];
  const stored = kept.counts ?? [];
  const known = Math.min(earlier.length, stored.length);
  const unknown = earlier.length - known;
  const newCount: Count = [realTokens, chars / CHARS_PER_TOKEN];
  const last = newCount[0] - newCount[1] * rate;
  const recent: number[] = [];
  const counts: Count[] = [];
  for (let i = Math.max(0, earlier.length - 2); i < earlier.length; i++) {
    if (i >= unknown) {
      const c = stored[stored.length - earlier.length + i] as Count;
      recent.push(c[0] - c[1] * rate);
      counts.push(c);
    } else recent.push(earlier[i] as number);
  }
  recent.push(last);
  counts.push(newCount);
  const sure = Math.max(0, realTokens - (chars / CHARS_PER_TOKEN) * C.max);
  const floors = [...(kept.floors ?? []).slice(-2), sure];
  return recent.length > 1
    ? { last, consistent: Math.min(...recent), recent, floors, counts }
    : { last, recent, floors, counts };
}

describe('the invisible share after a real count', () => {
  it('keeps the last two readings (read again where their count is kept), the new one, their minimum and floors', () => {
    fc.assert(
      fc.property(
        keptHidden,
        fc.integer({ min: 1_000, max: 100_000 }),
        fc.integer({ min: 100, max: 50_000 }),
        (hidden, anchorChars, addedChars) => {
          const chars = anchorChars + addedChars;
          // Growth measured: the shares are read at the growth model's rate (no compaction in between).
          const state: CalibrationState = {
            anchor: {
              chars: anchorChars,
              mediaTokens: 0,
              toolChars: 0,
              prompt: { messages: 4, chars: anchorChars, hash: 1 },
              realTokens: Math.round(anchorChars / 2),
            },
            growth: { realTokens: 4_000, heuristicTokens: 2_000, messages: 4, messageLoad: 0.01, messageReal: 8 },
            hidden,
          };
          const pending: PendingRequest = {
            chars,
            mediaTokens: 0,
            toolChars: 0,
            prompt: { messages: 6, chars, hash: 2 },
            extendsAnchor: true,
            estimatedTokens: 0,
          };
          const realTokens = Math.round(chars / 2) + 300;
          const next = recordRealCount(state, pending, realTokens, undefined, C);
          const rate = growthModel(next, C).rate;
          expect(next.hidden).toStrictEqual(expectedHidden(hidden, realTokens, chars, rate));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("reads a stored share of another shape from the user's store as absent: no error, finite estimates, through a compaction", async () => {
    // Only shapes the guard never writes: a valid reading would be read as one, and may rightly
    // change what the calls decide.
    const notANumber = fc.oneof(fc.string(), fc.boolean(), fc.constant(null), fc.object(), fc.array(fc.integer()));
    const notAnArray = fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null), fc.object());
    /** A few valid entries with one of `bad` among them. */
    const withOne = <T>(valid: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown>) =>
      fc
        .tuple(fc.array(valid, { maxLength: 2 }), bad, fc.nat({ max: 2 }))
        .map(([entries, entry, at]) => [...entries.slice(0, at), entry, ...entries.slice(at)]);
    const broken = fc.oneof(
      fc.tuple(fc.constantFrom('last', 'consistent'), notANumber),
      fc.tuple(fc.constantFrom('recent', 'counts', 'floors'), notAnArray),
      fc.tuple(fc.constantFrom('recent', 'floors'), withOne(fc.integer(), notANumber)),
      // Counts that are not pairs of numbers, among pairs that are.
      fc.tuple(
        fc.constant('counts'),
        withOne(fc.constant([400, 100]), fc.oneof(fc.constant(null), fc.array(fc.string(), { maxLength: 3 }))),
      ),
      // More entries than the guard keeps (three): a spread of them into one call would overflow.
      fc.tuple(
        fc.constantFrom('recent', 'floors'),
        fc.constant(null).map(() => Array.from({ length: 1_000_000 }, (_, i) => i % 7)),
      ),
    );
    await fc.assert(
      fc.asyncProperty(broken, async ([field, value]) => {
        const stored = new Map<string, unknown>();
        const store = {
          get: async (key: string) => stored.get(key),
          set: async (key: string, v: unknown) => void stored.set(key, JSON.parse(JSON.stringify(v))),
          delete: async (key: string) => void stored.delete(key),
        };
        const errors: unknown[] = [];
        const guard = createContextGuard({
          // The fourth turn is over the threshold: compacted prompts are priced with the state read back.
          contextWindow: 10_000,
          store: store as never,
          onEvent: (e) => {
            if (e.type === 'error') errors.push(e.error);
          },
        });
        const messages: GuardMessage[] = [{ role: 'system', content: 'sys' }];
        const turn = async (inputTokens: number, damage?: () => void) => {
          messages.push(
            { role: 'user', content: 'x'.repeat(4_000) },
            { role: 'assistant', content: 'y'.repeat(4_000) },
          );
          damage?.();
          const result = await guard.beforeModel({ sessionId: 's', messages });
          expect(Number.isFinite(result.tokens)).toBe(true);
          await guard.afterModel({ sessionId: 's', usage: { inputTokens } });
          return result.compaction !== undefined;
        };
        const damage = () => {
          for (const [key, state] of stored) {
            const s = state as { calibration?: { hidden?: Record<string, unknown> } };
            if (s.calibration?.hidden) s.calibration.hidden[field] = value;
            stored.set(key, s);
          }
        };
        await turn(2_000);
        await turn(4_000);
        await turn(6_000, damage);
        // Damaged again right before the call that compacts: the compacted prompt is priced with it.
        const compacted = await turn(8_000, damage);
        expect(compacted).toBe(true);
        await turn(3_000);
        expect(errors).toEqual([]);
        for (const state of stored.values()) {
          const hidden = (state as { calibration?: { hidden?: Hidden } }).calibration?.hidden;
          if (!hidden) continue;
          const values = [hidden.last, hidden.consistent ?? 0, ...(hidden.recent ?? []), ...(hidden.floors ?? [])];
          for (const n of [...values, ...(hidden.counts ?? []).flat()]) expect(Number.isFinite(n)).toBe(true);
        }
      }),
      { numRuns: 100 },
    );
  });
});
