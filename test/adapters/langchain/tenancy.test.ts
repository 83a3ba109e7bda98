// Many threads, one createAgent, one guard: a thread's recall never gives it another thread's
// originals (issue 22). The threads open alike ("hi" under one system prompt) and their models reuse
// the same tool-call ids; the recall tool finds its session from the run that calls it (its
// thread_id), never from the call id. On the in-memory store and on a real Redis.
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware, recallTool } from '../../../adapters/langchain/index.ts';
import { RedisStore } from '../../../adapters/redis/index.ts';
import type { ContextGuardOptions } from '../../../src/index.ts';
import { deletePrefix, skipRedisTests, startRedis, uniquePrefix, type RedisHandle } from '../redis/server.ts';
import { ToolCountingChatModel, textOf } from './agent-helpers.ts';

const WINDOW = 8_000;
const SYSTEM = 'You are the support assistant of a bank. Look up what you need, then answer.';
const FACT = 'Account holder Alice Zebra-Pelican, payout ledger QUOKKA-77341 at the Lisbon branch.';

function record(path: string): string {
  const line = (i: number) => `export const value${i} = compute(${i}, '${path}');\n`;
  let half = `// ${path}\n`;
  for (let i = 0; half.length < 1_200; i++) half += line(i);
  return path === 'alice' ? `${half}${FACT}\n${half}` : `${half}${half}`;
}

const lookup = tool(async ({ path }: { path: string }) => record(path), {
  name: 'lookup',
  description: 'Look a record up',
  schema: z.object({ path: z.string() }),
});

const call = (name: string, args: object, id: string) =>
  new AIMessage({ content: '', tool_calls: [{ id, name, args, type: 'tool_call' }] });

function toolAnswer(messages: readonly BaseMessage[], toolCallId: string): string {
  const m = messages.find((x) => x.type === 'tool' && (x as { tool_call_id?: string }).tool_call_id === toolCallId);
  return m ? textOf(m) : '';
}

type StoreKind = 'memory' | 'redis';
const skipRedis = skipRedisTests('test/adapters/langchain/tenancy.test.ts');

describe.each<StoreKind>(['memory', 'redis'])('tenancy through createAgent (%s store)', (kind) => {
  let redis: RedisHandle | undefined;
  const prefix = uniquePrefix('tenancy-lc');
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    if (kind === 'redis' && !skipRedis) redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    if (redis) await deletePrefix(redis, prefix);
    await redis?.close();
  });

  it.skipIf(kind === 'redis' && skipRedis)(
    "threads that open alike and reuse call ids never recall each other's originals",
    async () => {
      const options: ContextGuardOptions = { contextWindow: WINDOW, target: 0.5 };
      if (kind === 'redis') {
        const store = new RedisStore({ url: (redis as RedisHandle).url, prefix });
        stores.push(store);
        options.store = store;
      }
      const middleware = contextGuardMiddleware(options);
      // Thread A: looks Alice up (call_0), looks up more (call_1...) until the fact is out of its
      // messages, then recalls it (call_99). Thread B: at once recalls with the same ids.
      let readsA = 0;
      const model = new ToolCountingChatModel({
        reply: (messages) => {
          if (toolAnswer(messages, 'call_99')) return new AIMessage('done');
          if (!messages.some((m) => m.type === 'ai')) return call('lookup', { path: 'alice' }, 'call_0');
          if (messages.some((m) => textOf(m).includes('QUOKKA-77341')) && readsA < 15)
            return call('lookup', { path: `other-${++readsA}` }, `call_${readsA}`);
          return call('recall_context', { query: 'QUOKKA ledger' }, 'call_99');
        },
      });
      const agent = createAgent({
        model,
        tools: [lookup, recallTool(middleware)],
        middleware: [middleware],
        systemPrompt: SYSTEM,
        checkpointer: new MemorySaver(),
      });
      const invoke = (threadId: string) =>
        (agent as unknown as { invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }> }).invoke(
          { messages: [new HumanMessage('hi')] },
          { configurable: { thread_id: threadId }, recursionLimit: 100 },
        );
      const a = await invoke('thread-A');
      // A's own recall finds the fact compaction took out of its messages.
      expect(toolAnswer(a.messages, 'call_99')).toContain(FACT);
      expect((await middleware.guard.recall('thread-A', { id: 'call_0' }))[0]?.text).toContain(FACT);

      // B opens alike and asks with A's ids and words: nothing of A's comes back.
      const bModel = new ToolCountingChatModel({
        reply: (messages) =>
          toolAnswer(messages, 'call_99')
            ? new AIMessage('done')
            : new AIMessage({
                content: '',
                tool_calls: [
                  { id: 'call_99', name: 'recall_context', args: { query: 'QUOKKA ledger' }, type: 'tool_call' },
                  { id: 'call_0', name: 'recall_context', args: { id: 'call_0' }, type: 'tool_call' },
                ],
              }),
      });
      const agentB = createAgent({
        model: bModel,
        tools: [lookup, recallTool(middleware)],
        middleware: [middleware],
        systemPrompt: SYSTEM,
        checkpointer: new MemorySaver(),
      });
      const b = await (
        agentB as unknown as { invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }> }
      ).invoke({ messages: [new HumanMessage('hi')] }, { configurable: { thread_id: 'thread-B' }, recursionLimit: 20 });
      expect(toolAnswer(b.messages, 'call_99')).toMatch(/^Nothing in the archive matches/);
      expect(toolAnswer(b.messages, 'call_0')).toMatch(/^Nothing in the archive matches/);
      expect(JSON.stringify(b.messages.map(textOf))).not.toContain('QUOKKA-77341');
    },
  );
});
