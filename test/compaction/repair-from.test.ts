// Tool-pairing repair from where the caller knows the prompt is unchanged and was valid: the unit
// before that point is checked again, since its results follow its call and may be what changed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { repairFrom, repairToolPairing, wellPaired } from '../../src/compaction/structure.ts';
import type { GuardMessage } from '../../src/index.ts';
import { toolStep, user } from '../helpers.ts';

describe('repairToolPairing from an index', () => {
  const a = toolStep('a', {}, 'result a');
  const b = toolStep('b', {}, 'result b');

  it('finds a call whose result was removed right at `from`', () => {
    // Was [call a, result a, call b, result b]; result a removed: index 1 changed.
    const messages = [a[0], b[0], b[1]] as GuardMessage[];
    const r = repairToolPairing(messages, { from: 1 });
    expect(r.unansweredCalls).toBe(1);
    expect(r.messages[1]).toBe(messages[1]);
  });

  it('finds a result moved away from its call', () => {
    const messages = [user('go'), a[0], b[0], a[1], b[1]] as GuardMessage[];
    const r = repairToolPairing(messages, { from: 2 });
    expect(r.unansweredCalls + r.orphanResults).toBeGreaterThan(0);
  });

  it('gives back the very same array when nothing needs repair and no copy is asked for', () => {
    const messages = [user('go'), ...a, ...b] as GuardMessage[];
    expect(repairToolPairing(messages, { from: 3, copy: false }).messages).toBe(messages);
    expect(repairToolPairing(messages, { from: 3 }).messages).not.toBe(messages);
    expect(repairToolPairing(messages, { from: 3 }).messages).toEqual(messages);
  });
});

describe('wellPaired (the per-call check without sets)', () => {
  const id = fc.constantFrom('a', 'b', 'c', 'd');
  const call = id.map((toolCallId) => ({ type: 'tool-call', toolCallId, toolName: 't', input: {} }));
  const result = id.map((toolCallId) => ({
    type: 'tool-result',
    toolCallId,
    toolName: 't',
    output: { type: 'text', value: 'r' },
  }));
  const message = fc.oneof(
    fc.constant(user('go')),
    fc.constant({ role: 'system', content: 's' }),
    fc
      .array(fc.oneof(call, call, result, fc.constant({ type: 'text', text: 'x' })), { maxLength: 4 })
      .map((content) => ({ role: 'assistant', content })),
    fc.constant({ role: 'assistant', content: 'plain' }),
    fc
      .array(fc.oneof(result, result, fc.constant(null)), { maxLength: 3 })
      .map((content) => ({ role: 'tool', content })),
  ) as fc.Arbitrary<GuardMessage>;

  it('is true only where the full repair changes nothing, from any start', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 12 }), fc.nat(), (messages, at) => {
        const start = messages.length === 0 ? 0 : at % (messages.length + 1);
        const full = repairFrom(messages, start, false);
        const unchanged = full.unansweredCalls + full.orphanResults === 0 && full.messages === messages;
        if (wellPaired(messages, start)) expect(unchanged).toBe(true);
        return true;
      }),
      { numRuns: 2_000 },
    );
    // And it does not give up on ordinary histories: well-paired tool steps pass.
    const steps = [user('go'), ...toolStep('a', {}, 'r'), ...toolStep('b', {}, 'r')];
    expect(wellPaired(steps, 0)).toBe(true);
  });
});
