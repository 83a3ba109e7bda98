// The context meter for LangChain users: createAgent with contextGuardMiddleware, streamed with
// LangGraph's custom stream mode (`agent.stream(input, { streamMode: 'custom' })`), yields the same
// parts writeContextParts writes for AI SDK UI: the meter after every model call (the provider's
// count, rising) and one compaction entry per compaction, the meter lower after it.
import { HumanMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware, type ContextGuardPart } from '../../../adapters/langchain/index.ts';
import { ToolCountingChatModel, readTool, scriptedReplies } from './agent-helpers.ts';

const WINDOW = 8_000;

function agentOf() {
  const script = scriptedReplies({ steps: 30, outputChars: 1_500 });
  const model = new ToolCountingChatModel({ reply: () => script([]), summary: () => 'Summary: parts read so far.' });
  const middleware = contextGuardMiddleware({ contextWindow: WINDOW });
  const agent = createAgent({
    model,
    tools: [readTool],
    middleware: [middleware],
    systemPrompt: 'Read the parts, then answer.',
    checkpointer: new MemorySaver(),
  });
  return { model, middleware, agent };
}

async function streamCustom(agent: ReturnType<typeof agentOf>['agent'], threadId: string, streamMode: string) {
  const chunks: unknown[] = [];
  const stream = await (
    agent as unknown as { stream(input: unknown, config: unknown): Promise<AsyncIterable<unknown>> }
  ).stream(
    { messages: [new HumanMessage('Read every part.')] },
    { configurable: { thread_id: threadId }, streamMode, recursionLimit: 200 },
  );
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe("createAgent middleware: the context in LangGraph's custom stream mode", () => {
  it('streams the meter after every model call and one entry per compaction', async () => {
    const { model, agent } = agentOf();
    const chunks = (await streamCustom(agent, 'thread-1', 'custom')) as ContextGuardPart[];
    const meters = chunks.flatMap((c) => (c.type === 'data-context-guard' ? [c.data] : []));
    const compactions = chunks.flatMap((c) => (c.type === 'data-context-guard-compaction' ? [c.data] : []));
    const counts = meters.filter((m) => m.source === 'provider');
    // One provider count per model call, equal to what the model reported (prompt + answer).
    expect(counts).toHaveLength(model.modelCalls.length);
    const sizes = model.requestSizes();
    for (const [i, meter] of counts.entries()) {
      expect(meter.tokens).toBeGreaterThanOrEqual(sizes[i]!);
      expect(meter).toMatchObject({ contextWindow: WINDOW, threshold: WINDOW * 0.8 });
      expect(meter.fraction).toBeCloseTo(meter.tokens / WINDOW, 10);
    }
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions) {
      expect(c.tokensAfter).toBeLessThan(c.tokensBefore);
      expect(c.label).toMatch(/→/);
    }
    // Every part keeps the meter's one id; each compaction has its own.
    const ids = chunks.map((c) => c.id);
    expect(new Set(ids.filter((_, i) => chunks[i]!.type === 'data-context-guard'))).toEqual(new Set(['context-guard']));
    expect(new Set(ids.filter((_, i) => chunks[i]!.type !== 'data-context-guard')).size).toBe(compactions.length);
    // The meter falls at the first compaction: the count after it is below the count before it.
    const first = chunks.findIndex((c) => c.type === 'data-context-guard-compaction');
    const before = chunks
      .slice(0, first)
      .findLast((c) => c.type === 'data-context-guard' && c.data.source === 'provider');
    const after = chunks.slice(first).find((c) => c.type === 'data-context-guard' && c.data.source === 'provider');
    expect(before && after).toBeTruthy();
    expect((after as { data: { tokens: number } }).data.tokens).toBeLessThan(
      (before as { data: { tokens: number } }).data.tokens,
    );
    // Rising between compactions.
    expect(counts[1]!.tokens).toBeGreaterThan(counts[0]!.tokens);
  });

  it('other stream modes carry none of it', async () => {
    const { agent } = agentOf();
    const chunks = await streamCustom(agent, 'thread-2', 'updates');
    expect(JSON.stringify(chunks)).not.toContain('data-context-guard');
  });
});
