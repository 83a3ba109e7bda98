// A provider that counts a large share the guard never sees (a system prompt or tool schemas the
// host keeps elsewhere), through the real generateText tool loop with MockLanguageModelV4: every
// count within the window is recorded, the estimates carry the hidden share, and the guard compacts
// in time, so no request reaches the provider over the window by its own count.
import { generateText, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware } from '../../../adapters/ai-sdk/index.ts';
import { recorder } from '../../helpers.ts';
import { fileText, readerScript, scriptedModel } from './mock.ts';

const WINDOW = 32_000;

const readTool = tool({
  description: 'Read a file of the repository',
  inputSchema: z.object({ path: z.string() }),
  execute: async ({ path }) => fileText(path, 3_000),
});

async function runAgent(hidden: number, steps: number) {
  const mock = scriptedModel(MockLanguageModelV4, { reply: readerScript(steps), hidden });
  const events = recorder();
  const model = wrapLanguageModel({
    model: mock.model,
    middleware: contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent }),
  });
  await generateText({
    model,
    maxRetries: 0,
    tools: { read: readTool },
    stopWhen: stepCountIs(steps + 2),
    system: 'You are a coding agent.',
    prompt: 'Read every file of the project, one by one.',
    providerOptions: { contextGuard: { sessionId: 'hidden' } },
  });
  return { mock, events };
}

describe('ai-sdk: usage with a large hidden share', () => {
  it('24,000 hidden tokens in a 32k window: every count recorded, no request over the window', async () => {
    const { mock, events } = await runAgent(24_000, 14);
    const agent = mock.agentCalls();
    expect(agent.length).toBe(15);
    expect(events.of('usage-ignored')).toEqual([]);
    expect(events.of('usage-recorded').filter((e) => e.sessionId === 'hidden').length).toBe(agent.length);
    // The guard knows the prompt is 24k+, not the 1-2k it sees.
    const estimates = events.of('estimate').filter((e) => e.sessionId === 'hidden');
    expect(estimates.slice(1).every((e) => e.tokens > 24_000)).toBe(true);
    // ...and compacts in time: the provider never counts a request over the window.
    expect(Math.max(...agent.map((c) => c.tokens))).toBeLessThanOrEqual(WINDOW);
    expect(events.of('compaction-end').length).toBeGreaterThan(0);
  });

  it('a hidden share over the threshold alone: reported once, no compaction on every call', async () => {
    const { mock, events } = await runAgent(27_000, 8);
    expect(events.of('fixed-over-threshold')).toHaveLength(1);
    expect(events.of('compaction-end').length).toBeLessThanOrEqual(4);
    expect(Math.max(...mock.agentCalls().map((c) => c.tokens))).toBeLessThanOrEqual(WINDOW);
  });
});
