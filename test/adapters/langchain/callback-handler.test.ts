import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { LLMResult } from '@langchain/core/outputs';
import { describe, expect, it } from 'vitest';
import { ContextGuardCallbackHandler, usageFromLLMResult } from '../../../adapters/langchain/callback-handler.ts';
import { fromGuardMessages, toGuardMessages } from '../../../adapters/langchain/convert.ts';
import { deriveSessionId } from '../../../adapters/shared/session-id.ts';
import { createContextGuard, type ContextGuard } from '../../../src/index.ts';
import { recorder } from '../../helpers.ts';
import { RecordingChatModel } from './fake-chat-model.ts';

function history(steps: number): BaseMessage[] {
  const messages: BaseMessage[] = [
    new SystemMessage('You are a careful coding agent.'),
    new HumanMessage('Fix the failing test in src/app.ts.'),
  ];
  for (let i = 0; i < steps; i++) {
    messages.push(
      new AIMessage({
        content: `Step ${i}: reading.`,
        tool_calls: [{ id: `c${i}`, name: 'read_file', args: { path: `src/f${i}.ts` } }],
      }),
    );
    messages.push(new ToolMessage({ content: `export const v${i} = ${'1 + '.repeat(150)}1;`, tool_call_id: `c${i}` }));
  }
  return messages;
}

/** One turn of a user's own loop: beforeModel, then the model with the handler. */
async function turn(
  guard: ContextGuard,
  model: RecordingChatModel,
  sessionId: string,
  messages: BaseMessage[],
  handler?: ContextGuardCallbackHandler,
) {
  const before = await guard.beforeModel({ sessionId, modelId: model.model, messages: toGuardMessages(messages) });
  const reply = await model.invoke(fromGuardMessages(before.messages), handler ? { callbacks: [handler] } : {});
  return { before, reply };
}

const llmResult = (message: unknown, llmOutput?: Record<string, unknown>): LLMResult =>
  ({ generations: [[{ text: '', message }]], ...(llmOutput ? { llmOutput } : {}) }) as unknown as LLMResult;

describe('usageFromLLMResult', () => {
  it('reads usage_metadata (input_tokens includes cached tokens), else llmOutput.tokenUsage', () => {
    expect(
      usageFromLLMResult(
        llmResult(
          new AIMessage({
            content: 'x',
            usage_metadata: {
              input_tokens: 1200,
              output_tokens: 30,
              total_tokens: 1230,
              input_token_details: { cache_read: 1000 },
            },
          }),
        ),
      ),
    ).toEqual({
      inputTokens: 1200,
      outputTokens: 30,
    });
    expect(
      usageFromLLMResult(
        llmResult(new AIMessage('x'), { tokenUsage: { promptTokens: 900, completionTokens: 12, totalTokens: 912 } }),
      ),
    ).toEqual({ inputTokens: 900, outputTokens: 12 });
    expect(usageFromLLMResult(llmResult(new AIMessage('x')))).toBeUndefined();
    expect(usageFromLLMResult(undefined)).toBeUndefined();
    expect(usageFromLLMResult({ generations: [] } as unknown as LLMResult)).toBeUndefined();
  });
});

describe('ContextGuardCallbackHandler', () => {
  it('is awaited, so the count is recorded before invoke returns', async () => {
    const guard = createContextGuard({ contextWindow: 128_000 });
    const handler = new ContextGuardCallbackHandler({ guard, sessionId: 'loop' });
    expect(handler.awaitHandlers).toBe(true);
    const model = new RecordingChatModel();
    const messages = history(3);
    await turn(guard, model, 'loop', messages, handler);
    const status = await guard.status('loop');
    expect(status?.source).toBe('provider');
    expect(status?.tokens).toBe(model.inputTokensFor(model.calls[0]!.messages) + 2);
  });

  it('its recorded usage changes the next estimate (calibration)', async () => {
    // The provider counts 0.5 tokens per character plus 400 invisible tokens: chars/4 × 1.5 is low.
    const model = new RecordingChatModel({ tokensPerChar: 0.5, overheadTokens: 400 });
    const calibrated = createContextGuard({ contextWindow: 128_000 });
    const uncalibrated = createContextGuard({ contextWindow: 128_000 });
    const handler = new ContextGuardCallbackHandler({ guard: calibrated, sessionId: 's' });

    const messages = history(4);
    const first = await turn(calibrated, model, 's', messages, handler);
    await turn(uncalibrated, model, 's', messages);
    // Same default estimate before any real count.
    expect((await uncalibrated.status('s'))?.tokens).toBe(first.before.tokens);

    const next = [...messages, first.reply, new HumanMessage('Now run the tests.')];
    const withCount = await calibrated.beforeModel({
      sessionId: 's',
      modelId: model.model,
      messages: toGuardMessages(next),
    });
    const without = await uncalibrated.beforeModel({
      sessionId: 's',
      modelId: model.model,
      messages: toGuardMessages(next),
    });
    const real = model.inputTokensFor(next);
    expect(withCount.tokens).not.toBe(without.tokens);
    expect(Math.abs(withCount.tokens - real) / real).toBeLessThan(0.05);
    expect(Math.abs(without.tokens - real) / real).toBeGreaterThan(0.2);
  });

  it('falls back to llmOutput.tokenUsage', async () => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
    const handler = new ContextGuardCallbackHandler({ guard, sessionId: 'old' });
    await guard.beforeModel({ sessionId: 'old', messages: [{ role: 'user', content: 'hello' }] });
    await handler.handleLLMEnd(
      llmResult(new AIMessage('hi'), { tokenUsage: { promptTokens: 321, completionTokens: 4 } }),
      'run-1',
    );
    expect(events.last('usage-recorded')).toMatchObject({ inputTokens: 321, outputTokens: 4 });
  });

  it('resolves the session from the run: a function, else metadata.thread_id, else the conversation start', async () => {
    const guard = createContextGuard({ contextWindow: 128_000 });
    const seen: string[] = [];
    const messages = [new SystemMessage('sys'), new HumanMessage('task')];
    const sessions = [
      new ContextGuardCallbackHandler({ guard, sessionId: (run) => String(run.metadata['user']) }),
      new ContextGuardCallbackHandler({ guard }),
      new ContextGuardCallbackHandler({ guard }),
    ];
    const metadata = [{ user: 'u-7' }, { thread_id: 'thread-9' }, {}];
    for (const [i, handler] of sessions.entries()) {
      const runId = `run-${i}`;
      handler.handleChatModelStart({} as never, [messages], runId, undefined, undefined, [], metadata[i]);
      const id = i === 0 ? 'u-7' : i === 1 ? 'thread-9' : deriveSessionId(toGuardMessages(messages));
      seen.push(id);
      await guard.beforeModel({ sessionId: id, messages: toGuardMessages(messages) });
      await handler.handleLLMEnd(
        llmResult(
          new AIMessage({
            content: 'ok',
            usage_metadata: { input_tokens: 50 + i, output_tokens: 1, total_tokens: 51 + i },
          }),
        ),
        runId,
      );
    }
    for (const [i, id] of seen.entries()) expect((await guard.status(id))?.tokens).toBe(51 + i);
  });

  it('skips the guard’s own summarizer runs and never throws', async () => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
    const handler = new ContextGuardCallbackHandler({ guard, sessionId: 's' });
    await guard.beforeModel({ sessionId: 's', messages: [{ role: 'user', content: 'hello' }] });
    const usage = new AIMessage({
      content: 'summary',
      usage_metadata: { input_tokens: 9_000, output_tokens: 500, total_tokens: 9_500 },
    });
    await handler.handleLLMEnd(llmResult(usage), 'sum', undefined, ['nostream', 'context-guard-summarizer']);
    expect(events.of('usage-recorded')).toHaveLength(0);

    const broken = { afterModel: () => Promise.reject(new Error('store down')) } as unknown as ContextGuard;
    await expect(
      new ContextGuardCallbackHandler({ guard: broken, sessionId: 's' }).handleLLMEnd(llmResult(usage), 'r'),
    ).resolves.toBeUndefined();
    await expect(handler.handleLLMEnd(null as unknown as LLMResult, 'r2')).resolves.toBeUndefined();
  });

  it('copies (as LangChain copies handlers) keep the guard, the session and the runs', () => {
    const guard = createContextGuard({ contextWindow: 128_000 });
    const handler = new ContextGuardCallbackHandler({ guard, sessionId: () => 'x' });
    const copy = handler.copy() as ContextGuardCallbackHandler;
    expect(copy).toBeInstanceOf(ContextGuardCallbackHandler);
    expect(copy.guard).toBe(guard);
    expect(copy.sessionId).toBe(handler.sessionId);
    expect(copy.runs).toBe(handler.runs);
    expect(copy.awaitHandlers).toBe(true);
  });
});
