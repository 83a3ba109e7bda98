import { describe, expect, it, vi } from 'vitest';
import { guardOf, requestCompaction } from '../../../adapters/shared/compact-reply.ts';
import { createContextGuard } from '../../../src/index.ts';

describe('guardOf', () => {
  it('a guard, or the guard an adapter carries', () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    expect(guardOf(guard)).toBe(guard);
    expect(guardOf({ guard })).toBe(guard);
  });
});

describe('requestCompaction', () => {
  it('under minFraction of the window: no compaction, and the answer says how full the window is', async () => {
    const guard = createContextGuard({ contextWindow: 100_000 });
    await guard.beforeModel({ sessionId: 's', messages: [{ role: 'user', content: 'x'.repeat(4_000) }] });
    const compact = vi.spyOn(guard, 'compact');
    expect(await requestCompaction(guard, 's', 'tests', 0.2)).toMatch(
      /^No compaction needed: the conversation uses \d+% of the context window \(\d+ tokens\)\.$/,
    );
    expect(compact).not.toHaveBeenCalled();
  });

  it('otherwise (or for a session the guard has not seen): schedules it with the focus and says what will happen', async () => {
    const guard = createContextGuard({ contextWindow: 100_000 });
    await guard.beforeModel({ sessionId: 's', messages: [{ role: 'user', content: 'x'.repeat(200_000) }] });
    const compact = vi.spyOn(guard, 'compact');
    const answer = await requestCompaction(guard, 's', 'the failing tests', 0.2);
    expect(answer).toMatch(/^Compaction scheduled \(the conversation uses \d+% of the context window\)\. /);
    expect(answer).toContain('focused on "the failing tests"');
    expect(compact).toHaveBeenCalledWith('s', { focus: 'the failing tests' });
    expect(await requestCompaction(guard, 'unseen', undefined, 0.2)).toMatch(
      /^Compaction scheduled\. Before your next step/,
    );
    expect(compact).toHaveBeenLastCalledWith('unseen', {});
  });
});
