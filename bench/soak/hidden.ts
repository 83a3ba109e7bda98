// The soak's hidden-share class: a provider that counts a large constant part the guard never sees
// (a system prompt or tool schemas the host keeps elsewhere: 40-90% of the window), and in some
// runs a host that reports the sum of one, two or three steps as one count (within the window).
// What bench/soak.ts checks on them:
// - `real-count-ignored` (every class): a count of the fake provider within the window is never
//   rejected as implausible;
// - `hidden-not-estimated`: once two counts were recorded (and the host does not sum steps), every
//   estimate holds at least 60% of the hidden share: the guard knows the prompt is 28k, not 2k (two
//   counts cannot tell a lower rate per character from a larger hidden part);
// - `fixed-over-not-reported`: when the hidden share alone is over the threshold (and under the
//   window), a call over the threshold after two recorded counts has seen a `fixed-over-threshold`
//   event;
// - counted, not judged: compactions on consecutive calls (`hidden share: consecutive compactions`).
import fc from 'fast-check';

export interface HiddenShareSpec {
  /** The hidden part, as a share of the window. */
  share: number;
  /** The host reports the sum of 1, 2 or 3 steps (in turn) as one count. */
  sums: boolean;
}

export const hiddenShareArb: fc.Arbitrary<HiddenShareSpec> = fc.record({
  share: fc.double({ min: 0.4, max: 0.9, noNaN: true }),
  // One run in three.
  sums: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
});

/** The hidden part in tokens for a window. */
export function hiddenTokens(spec: HiddenShareSpec, window: number): number {
  return Math.round(spec.share * window);
}

/** What the host reports for call `call` (1-based): the real count, or the sum of 1-3 steps' counts. */
export function reportedCount(spec: HiddenShareSpec, real: number, call: number): number {
  return spec.sums ? real * (1 + (call % 3)) : real;
}
