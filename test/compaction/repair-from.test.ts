// Tool-pairing repair from where the caller knows the prompt is unchanged and was valid: the unit
// before that point is checked again, since its results follow its call and may be what changed.
import { describe, expect, it } from 'vitest';
import { repairToolPairing } from '../../src/compaction/structure.ts';
import type { GuardMessage } from '../../src/index.ts';
import { toolStep, user } from '../helpers.ts';

describe('repairToolPairing from an index', () => {
  const a = toolStep('a', {}, 'result a');
  const b = toolStep('b', {}, 'result b');

  it('finds a call whose result was removed right at `from`', () => {
    // Was [call a, result a, call b, result b]; result a removed: index 1 changed.
    const messages = [a[0], b[0], b[1]] as GuardMessage[];
    const r = repairToolPairing(messages, 1);
    expect(r.unansweredCalls).toBe(1);
    expect(r.messages[1]).toBe(messages[1]);
  });

  it('finds a result moved away from its call', () => {
    const messages = [user('go'), a[0], b[0], a[1], b[1]] as GuardMessage[];
    const r = repairToolPairing(messages, 2);
    expect(r.unansweredCalls + r.orphanResults).toBeGreaterThan(0);
  });

  it('gives back the very same array when nothing needs repair and no copy is asked for', () => {
    const messages = [user('go'), ...a, ...b] as GuardMessage[];
    expect(repairToolPairing(messages, 3, false).messages).toBe(messages);
    expect(repairToolPairing(messages, 3).messages).not.toBe(messages);
    expect(repairToolPairing(messages, 3).messages).toEqual(messages);
  });
});
