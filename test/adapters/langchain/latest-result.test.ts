// End to end through LangChain v1's createAgent with contextGuardMiddleware and its default options
// (a quarter-window target, paced lower by the session's fast growth, a tool result cap of 800
// tokens): an agent reads one large part per step in an 8k window. Compactions prune and summarize
// what the model has read before; the part it just asked for, which it has not seen yet, reaches
// it whole on every call: a cost target never cuts the latest tool result.
import { type BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/langchain/agent-middleware.ts';
import { recorder } from '../../helpers.ts';
import { ToolCountingChatModel, readTool, requestTokens, scriptedReplies, textOf } from './agent-helpers.ts';

const WINDOW = 8_000;
const STEPS = 14;
/** Each part: 6,000 characters, about 1,800 tokens at the fake's count: over the 800-token result cap. */
const PART_CHARS = 6_000;

describe('the latest tool result through createAgent', () => {
  it('reaches the model whole on every call, compactions or not', async () => {
    const events = recorder();
    const model = new ToolCountingChatModel({
      reply: (() => {
        const script = scriptedReplies({ steps: STEPS, outputChars: PART_CHARS });
        return (messages: BaseMessage[]) => script(messages);
      })(),
      summary: () => '## Task state\nReading the parts one by one; they export value = compute(input).',
    });
    const agent = createAgent({
      model,
      tools: [readTool],
      middleware: [contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent })],
      systemPrompt: 'You are a careful coding agent. Read the parts the user asks for, then answer.',
      checkpointer: new MemorySaver(),
    });
    const result = await agent.invoke(
      { messages: [new HumanMessage(`Read parts 1 to ${STEPS} and tell me what they export.`)] },
      { configurable: { thread_id: 'latest' }, recursionLimit: 200 },
    );
    expect(textOf(result.messages.at(-1) as BaseMessage)).toBe('done');

    const compactions = events.of('compaction-end');
    // The window holds about three parts: the guard compacted several times.
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    expect(model.modelCalls).toHaveLength(STEPS + 1);
    for (const [i, call] of model.modelCalls.entries()) {
      expect(requestTokens(call), `call ${i} by the provider's count`).toBeLessThanOrEqual(WINDOW);
      if (i === 0) continue;
      const last = call.messages.at(-1);
      expect(last, `call ${i}`).toBeInstanceOf(ToolMessage);
      expect((last as ToolMessage).tool_call_id, `call ${i}`).toBe(`call-${i}`);
      const whole = await readTool.invoke({ path: `src/part-${i}.ts`, size: PART_CHARS });
      expect(textOf(last as BaseMessage), `call ${i}: the part the model asked for, whole`).toBe(whole);
    }
    // Compactions took older parts out (pruned or summarized), never the one just read.
    for (const c of compactions) expect(c.strategy).not.toBe('hard-fit');
  });
});
