// A provider whose usage_metadata counts a large share the guard never sees (a system prompt or
// tool schemas kept elsewhere), through LangChain's createAgent with the guard's middleware: every
// count within the window is recorded, the estimates carry the hidden share, and the guard compacts
// in time, so no request reaches the provider over the window by its own count.
import { HumanMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/langchain/index.ts';
import { recorder } from '../../helpers.ts';
import { readTool, scriptedReplies, ToolCountingChatModel } from './agent-helpers.ts';

const WINDOW = 32_000;

async function runAgent(hidden: number, steps: number, outputChars = 3_000) {
  const rec = recorder();
  const reply = scriptedReplies({ steps, outputChars });
  const model = new ToolCountingChatModel({ reply: (messages) => reply(messages), overheadTokens: hidden });
  const agent = createAgent({
    model,
    tools: [readTool],
    middleware: [contextGuardMiddleware({ contextWindow: WINDOW, onEvent: rec.onEvent })],
    systemPrompt: 'You are a careful coding agent.',
    checkpointer: new MemorySaver(),
  });
  await (agent as unknown as { invoke(input: unknown, config: unknown): Promise<unknown> }).invoke(
    { messages: [new HumanMessage(`Read parts 1 to ${steps}, each with size 3000.`)] },
    { configurable: { thread_id: 'hidden' }, recursionLimit: 500 },
  );
  return { model, rec };
}

describe('langchain createAgent: usage_metadata with a large hidden share', () => {
  it('20,000 hidden tokens in a 32k window: every count recorded, no request over the window', async () => {
    const { model, rec } = await runAgent(20_000, 30);
    expect(rec.of('usage-ignored')).toEqual([]);
    expect(rec.of('usage-recorded').length).toBe(model.modelCalls.length);
    // The guard knows the prompt is 20k+, not the 1-3k it sees (the first call's estimate, and the
    // middleware's own first look at it, come before any count).
    const estimates = rec.of('estimate');
    expect(estimates.slice(2).every((e) => e.tokens > 20_000)).toBe(true);
    expect(rec.of('compaction-end').length).toBeGreaterThan(0);
    expect(Math.max(...model.requestSizes())).toBeLessThanOrEqual(WINDOW);
  });

  it('a hidden share over the threshold alone: reported once, no compaction on every call', async () => {
    const { model, rec } = await runAgent(27_000, 8);
    expect(rec.of('fixed-over-threshold')).toHaveLength(1);
    expect(rec.of('compaction-end').length).toBeLessThanOrEqual(4);
    expect(Math.max(...model.requestSizes())).toBeLessThanOrEqual(WINDOW);
  });
});
