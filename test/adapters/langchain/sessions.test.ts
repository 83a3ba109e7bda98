// Which session a LangChain call belongs to, the same way in every entry point: the adapter's
// `sessionId` option (a fixed id, or a function of the call), else LangGraph's `thread_id` (a string
// or a number), else an id derived from the conversation's start. A session function that throws
// is reported and falls back to the defaults, as every other failure at call time does.
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/langchain/agent-middleware.ts';
import { ContextGuardCallbackHandler } from '../../../adapters/langchain/callback-handler.ts';
import { compactTool } from '../../../adapters/langchain/compact-tool.ts';
import { withContextGuard } from '../../../adapters/langchain/with-context-guard.ts';
import { createContextGuard } from '../../../src/index.ts';
import { recorder } from '../../helpers.ts';
import { RecordingChatModel } from './fake-chat-model.ts';

type Invokable = { invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }> };

function agentWith(options: Parameters<typeof contextGuardMiddleware>[0]) {
  const model = new RecordingChatModel();
  // No checkpointer: LangGraph's MemorySaver takes string thread ids only, a host's own checkpointer may not.
  const agent = createAgent({ model, tools: [], middleware: [contextGuardMiddleware(options)] as never });
  return agent as unknown as Invokable;
}

const estimateSessions = (events: ReturnType<typeof recorder>) => [
  ...new Set(events.of('estimate').map((e) => e.sessionId)),
];

describe('a numeric thread_id names the session in every entry point', () => {
  it('createAgent middleware', async () => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
    await agentWith({ guard }).invoke({ messages: [new HumanMessage('hi')] }, { configurable: { thread_id: 42 } });
    expect(estimateSessions(events)).toEqual(['42']);
    expect(await guard.status('42')).toMatchObject({ source: 'provider' });
  });

  it('the function option sees it as a string', async () => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
    const seen: unknown[] = [];
    const sessionId = (config: { thread_id?: string }) => {
      seen.push(config.thread_id);
      return `user-${config.thread_id}`;
    };
    await agentWith({ guard, sessionId }).invoke(
      { messages: [new HumanMessage('hi')] },
      { configurable: { thread_id: 7 } },
    );
    expect(new Set(seen)).toEqual(new Set(['7']));
    expect(estimateSessions(events)).toEqual(['user-7']);
  });

  it('withContextGuard', async () => {
    const events = recorder();
    const guarded = withContextGuard(new RecordingChatModel(), {
      guard: createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent }),
    });
    await guarded.invoke([new HumanMessage('hi')], { configurable: { thread_id: 42 } });
    expect(estimateSessions(events)).toEqual(['42']);
  });

  it('the callback handler', async () => {
    const guard = createContextGuard({ contextWindow: 128_000 });
    const handler = new ContextGuardCallbackHandler({ guard });
    await guard.beforeModel({ sessionId: '42', messages: [{ role: 'user', content: 'hi' }] });
    await new RecordingChatModel().invoke([new HumanMessage('hi')], {
      callbacks: [handler],
      metadata: { thread_id: 42 },
    });
    expect(await guard.status('42')).toMatchObject({ source: 'provider' });
  });

  it('the compact tool', async () => {
    const guard = createContextGuard({ contextWindow: 128_000 });
    await guard.beforeModel({ sessionId: '42', messages: [{ role: 'user', content: 'x'.repeat(400_000) }] });
    const answer = await compactTool(guard).invoke({ focus: 'tests' }, { configurable: { thread_id: 42 } });
    expect(answer).toMatch(/^Compaction scheduled/);
  });
});

describe('a session function that throws', () => {
  it('falls back to the thread in the createAgent middleware, and is reported', async () => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
    const failing = () => {
      throw new Error('no user');
    };
    const result = await agentWith({ guard, sessionId: failing }).invoke(
      { messages: [new HumanMessage('hi')] },
      { configurable: { thread_id: 'thread-1' } },
    );
    expect(result.messages.at(-1)).toBeInstanceOf(AIMessage);
    expect(estimateSessions(events)).toEqual(['thread-1']);
    expect(events.of('error').map((e) => (e.error as Error).message)).toContain('no user');
  });

  it('falls back to the thread in the callback handler: the usage is still recorded', async () => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
    const handler = new ContextGuardCallbackHandler({
      guard,
      sessionId: () => {
        throw new Error('no user');
      },
    });
    await guard.beforeModel({ sessionId: 'thread-2', messages: [{ role: 'user', content: 'hi' }] });
    await new RecordingChatModel().invoke([new HumanMessage('hi')], {
      callbacks: [handler],
      metadata: { thread_id: 'thread-2' },
    });
    expect(await guard.status('thread-2')).toMatchObject({ source: 'provider' });
    expect(events.of('error').map((e) => (e.error as Error).message)).toContain('no user');
  });
});
