// Session isolation through LangChain (createAgent with the middleware): a thread id chosen by a
// caller, whatever string it is, never reaches another session's archive, receipts or state, on a
// shared in-memory store.
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/langchain/agent-middleware.ts';
import { createContextGuard, type GuardMessage, MemoryStore, type StateStore } from '../../../src/index.ts';
import { conversation, craftedIds } from '../../state/isolation.ts';
import { RecordingChatModel } from './fake-chat-model.ts';

/** The shared conversation as LangChain messages. */
function langchainMessages(messages: GuardMessage[]): BaseMessage[] {
  return messages.map((m) => {
    const text = (content: unknown) =>
      typeof content === 'string' ? content : (content as Array<{ text?: string }>).map((p) => p.text ?? '').join('');
    if (m.role === 'system') return new SystemMessage(m.content);
    if (m.role === 'user') return new HumanMessage(text(m.content));
    if (m.role === 'tool') {
      const part = m.content[0] as { toolCallId: string; output: { value: string } };
      return new ToolMessage({ content: part.output.value, tool_call_id: part.toolCallId });
    }
    const parts = typeof m.content === 'string' ? [] : m.content;
    const calls = parts.flatMap((p) =>
      p.type === 'tool-call' ? [{ id: p.toolCallId, name: p.toolName, args: p.input as Record<string, unknown> }] : [],
    );
    return new AIMessage({ content: text(parts.filter((p) => p.type === 'text')), tool_calls: calls });
  });
}

describe('LangChain: a crafted thread id reaches no other session', () => {
  it("neither overwrites nor reads another session's archive and receipts", async () => {
    const guard = createContextGuard({ contextWindow: 8_000, store: new MemoryStore() as StateStore<never> });
    const agent = createAgent({
      model: new RecordingChatModel(),
      tools: [],
      middleware: [contextGuardMiddleware({ guard })] as never,
    }) as unknown as { invoke(input: unknown, config: unknown): Promise<unknown> };
    const send = (threadId: string, fact: string) =>
      agent.invoke({ messages: langchainMessages(conversation(fact)) }, { configurable: { thread_id: threadId } });
    await send('victim', 'IBAN DE44 5001 0517 5407 3249 31');
    const receipts = await guard.compactions('victim');
    expect(receipts).toHaveLength(1);
    for (const id of craftedIds('victim')) {
      await send(id, 'nothing to see');
      expect(await guard.compactions(id), JSON.stringify(id)).toHaveLength(1);
      expect(JSON.stringify(await guard.recall(id, { query: 'IBAN DE44' }))).not.toContain('DE44');
    }
    expect(await guard.compactions('victim')).toEqual(receipts);
    expect((await guard.recall('victim', { query: 'IBAN DE44' }))[0]?.text).toContain('DE44 5001');
  });
});
