// The prompt a call sends is measured once: a compacting call measures the prompt it produced while
// rendering it, and neither the compaction's cache accounting nor the call's record measures it again;
// the system messages are measured once per call, apart from the prompts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { hashMessage } from '../../src/tokens/hash.ts';
import { PromptMeasurer } from '../../src/tokens/prompt-measure.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

const contentOf = (messages: readonly GuardMessage[]): string => messages.map(hashMessage).join(',');

/** Every prompt the guard's measurer measured (as-is or in canonical form), by content. */
function measuredPrompts(): string[] {
  const seen: string[] = [];
  const measure = PromptMeasurer.prototype.measure;
  vi.spyOn(PromptMeasurer.prototype, 'measure').mockImplementation(function (this: PromptMeasurer, ...args) {
    seen.push(contentOf(args[1]));
    return measure.apply(this, args);
  });
  const canonical = PromptMeasurer.prototype.measureCanonical;
  vi.spyOn(PromptMeasurer.prototype, 'measureCanonical').mockImplementation(function (this: PromptMeasurer, ...args) {
    seen.push(contentOf(args[1].messages.slice(0, args[1].length)));
    return canonical.apply(this, args);
  });
  return seen;
}

function history(): GuardMessage[] {
  const big = 'x'.repeat(6_000);
  const messages: GuardMessage[] = [system('You are a careful agent.'), user('Fix the failing build.')];
  for (let i = 0; i < 12; i++) {
    messages.push(...toolStep(`c${i}`, { path: `f${i}.ts` }, `${i} ${big}`));
    messages.push(assistant(`Read f${i}.ts.`));
  }
  return messages;
}

describe('the final prompt of a call', () => {
  it('is measured once by a call that compacts', async () => {
    const guard = createContextGuard({ contextWindow: 20_000, summarizer: async () => 'summary of the old turns' });
    const seen = measuredPrompts();
    const r = await guard.beforeModel({ sessionId: 's', messages: history() });
    expect(r.compaction).toBeDefined();
    const sent = contentOf(r.messages);
    expect(seen.filter((p) => p === sent)).toHaveLength(1);
  });

  it('is measured once by a call that does not compact', async () => {
    const guard = createContextGuard({ contextWindow: 200_000 });
    const seen = measuredPrompts();
    const r = await guard.beforeModel({ sessionId: 's', messages: history() });
    expect(r.compaction).toBeUndefined();
    expect(seen.filter((p) => p === contentOf(r.messages))).toHaveLength(1);
  });

  it('has its system messages measured once per compacting call', async () => {
    const guard = createContextGuard({ contextWindow: 20_000, summarizer: async () => 'summary of the old turns' });
    const messages = history();
    const seen = measuredPrompts();
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeDefined();
    const systemOnly = contentOf(messages.filter((m) => m.role === 'system'));
    expect(seen.filter((p) => p === systemOnly)).toHaveLength(1);
  });
});
