// The short soak of CI: ~200 random conversations (fixed seed) through the guard with a flaky
// summarizer, every call checked against the invariants (bench/soak.ts; `npm run soak` runs 10,000).
import { describe, expect, it } from 'vitest';
import { formatResult, runSoak } from '../bench/soak.ts';

describe('soak (short)', () => {
  it('200 random conversations: no violation, throw, unexplained overflow or error event', async () => {
    const result = await runSoak({ conversations: 200, seed: 20_260_611 });
    const report = `${formatResult(result)}\n${result.details.map((d) => `[${d.kind}] conversation ${d.conversation} call ${d.call}: ${d.message}`).join('\n')}`;
    // The run must have exercised what it is about.
    expect(result.calls, report).toBeGreaterThan(600);
    expect(result.compactions, report).toBeGreaterThan(50);
    expect(result.summarizerCalls, report).toBeGreaterThan(20);
    expect(result.violationsByKind, report).toEqual({});
    expect(result.violations, report).toBe(0);
    expect(result.throws, report).toBe(0);
    expect(result.unexplainedOverflows, report).toBe(0);
    expect(result.errorEvents, report).toBe(0);
  });
});
