// The invariants of DESIGN.md, checkable on any beforeModel output. Tests call
// `expectInvariants(input, result, { overflow })` after every step.
import { expect } from 'vitest';
import type { BeforeModelResult, GuardMessage } from '../../src/index.ts';
import { pairingProblems, prefillProblem } from './pairing.ts';

export { pairingProblems, prefillProblem };

/** Text of a user message (string content or its text parts). */
export function userText(message: GuardMessage): string {
  if (message.role !== 'user') return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

export interface InvariantOptions {
  /** An `overflow` event fired for this call: the threshold may be exceeded. */
  overflow?: boolean;
  /** A snapshot of the input taken before the call (structuredClone), to prove it was not mutated. */
  snapshot?: unknown;
}

/** Asserts every invariant of DESIGN.md on one beforeModel call. */
export function expectInvariants(
  input: readonly GuardMessage[],
  result: BeforeModelResult,
  options: InvariantOptions = {},
): void {
  const out = result.messages;
  expect(pairingProblems(out)).toEqual([]);
  // A prompt that ended on a user or tool message is never made to end on an assistant message.
  expect(prefillProblem(input, out)).toBeUndefined();

  // System messages first and unchanged.
  const leading = [];
  for (const m of input) {
    if (m.role !== 'system') break;
    leading.push(m);
  }
  expect(out.slice(0, leading.length)).toEqual(leading);
  // Every system message of the input is still there, unchanged (later ones may move up front).
  for (const m of input) if (m.role === 'system') expect(out).toContainEqual(m);

  // The latest user request is present: verbatim, or quoted (possibly clipped) by a continuation.
  const latest = [...input].reverse().find((m) => m.role === 'user');
  if (latest) {
    const text = userText(latest);
    const present =
      out.includes(latest) ||
      out.some((m) => m.role === 'user' && (text.length === 0 || userText(m).includes(text.slice(0, 100))));
    expect(present, 'latest user request missing from the output').toBe(true);
  }

  if (!options.overflow) expect(result.tokens).toBeLessThanOrEqual(result.threshold);
  if (options.snapshot !== undefined) expect(input).toEqual(options.snapshot);
}
