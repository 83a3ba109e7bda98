// Overflow recovery in the LangChain adapters: when the provider rejects a prompt for its
// length, withContextGuard (invoke, stream, batch) and the createAgent middleware's wrapModelCall
// record the count it reports, compact, and retry the call exactly once; a second rejection reaches
// the caller. The fake chat models throw what LangChain's provider packages throw: @langchain/openai
// and @langchain/anthropic wrap the SDK's BadRequestError in a ContextOverflowError (the original as
// its `cause`; Anthropic's text only in the JSON of its message and in `error.error.message`), older
// integrations the SDK's error itself.
import Anthropic from '@anthropic-ai/sdk';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { addLangChainErrorFields, ContextOverflowError } from '@langchain/core/errors';
import {
  AIMessage,
  AIMessageChunk,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  type BaseMessage,
} from '@langchain/core/messages';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/langchain/agent-middleware.ts';
import { ContextGuardCallbackHandler } from '../../../adapters/langchain/callback-handler.ts';
import { fromGuardMessages, toGuardMessages } from '../../../adapters/langchain/convert.ts';
import { withContextGuard } from '../../../adapters/langchain/with-context-guard.ts';
import { createContextGuard } from '../../../src/index.ts';
import { pairingProblems } from '../../compaction/invariants.ts';
import { recorder } from '../../helpers.ts';
import { ToolCountingChatModel, isSummary, readTool, scriptedReplies, textOf } from './agent-helpers.ts';
import { RecordingChatModel } from './fake-chat-model.ts';

const WINDOW = 8_000;
const LATEST = 'What did you find?';

/** @langchain/openai: wrapOpenAIClientError turns OpenAI's rejection into a ContextOverflowError. */
function openaiOverflow(tokens: number): Error {
  const body = {
    message: `This model's maximum context length is ${WINDOW} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  };
  return ContextOverflowError.fromError(new OpenAI.BadRequestError(400, body, undefined, new Headers()));
}

/** @langchain/anthropic: wrapAnthropicClientError, with its `CONTEXT_OVERFLOW` code and troubleshooting link. */
function anthropicOverflow(tokens: number): Error {
  const body = {
    type: 'error',
    error: { type: 'invalid_request_error', message: `prompt is too long: ${tokens} tokens > ${WINDOW} maximum` },
  };
  return addLangChainErrorFields(
    ContextOverflowError.fromError(new Anthropic.BadRequestError(400, body, undefined, new Headers())),
    'CONTEXT_OVERFLOW',
  );
}

/** An integration that passes the SDK's error on as it is. */
function sdkOverflow(tokens: number): Error {
  const body = {
    type: 'error',
    error: { type: 'invalid_request_error', message: `prompt is too long: ${tokens} tokens > ${WINDOW} maximum` },
  };
  return new Anthropic.BadRequestError(400, body, undefined, new Headers());
}

const shapes = [
  ['@langchain/openai', openaiOverflow],
  ['@langchain/anthropic', anthropicOverflow],
  ['the SDK error itself', sdkOverflow],
] as const;

/** A coding session of `steps` tool calls, under the guard's threshold but with history to compact. */
function history(steps = 6, outputChars = 2_000): BaseMessage[] {
  const messages: BaseMessage[] = [
    new SystemMessage('You are a careful coding agent.'),
    new HumanMessage('Find where the config is parsed and fix the bug.'),
  ];
  for (let i = 0; i < steps; i++) {
    messages.push(
      new AIMessage({
        content: `Reading file ${i}.`,
        tool_calls: [{ id: `call-${i}`, name: 'read_file', args: { path: `src/module-${i}.ts` }, type: 'tool_call' }],
      }),
      new ToolMessage({
        content: `// module ${i}\n${'const x = parse(config);\n'.repeat(outputChars / 25)}`,
        tool_call_id: `call-${i}`,
        name: 'read_file',
      }),
    );
  }
  messages.push(new HumanMessage(LATEST));
  return messages;
}

/** A chat model that rejects the calls `reject` names (by call index or prompt) with `error(its own count)`. */
function rejecting(
  reject: (call: number, messages: BaseMessage[]) => boolean,
  error: (tokens: number) => Error = openaiOverflow,
) {
  const model: RecordingChatModel = new RecordingChatModel({
    reply: (messages, call) => {
      if (reject(call, messages)) throw error(model.inputTokensFor(messages));
      return new AIMessage('ok');
    },
  });
  return model;
}

function expectRetryCompacted(model: RecordingChatModel): void {
  const [first, retry] = model.modelCalls;
  expect(model.modelCalls).toHaveLength(2);
  expect(model.inputTokensFor(retry!.messages)).toBeLessThan(model.inputTokensFor(first!.messages));
  expect(retry!.messages.some(isSummary)).toBe(true);
  expect(textOf(retry!.messages.at(-1)!)).toBe(LATEST);
  expect(pairingProblems(toGuardMessages(retry!.messages))).toEqual([]);
}

describe('withContextGuard: an overflow is recovered with one retry', () => {
  it.each(shapes)('invoke, with the error %s throws', async (_shape, error) => {
    const model = rejecting((call) => call === 0, error);
    const rec = recorder();
    const guarded = withContextGuard(model, { contextWindow: WINDOW, onEvent: rec.onEvent });
    const reply = await guarded.invoke(history(), { configurable: { thread_id: 'invoke' } });

    expect(reply.text).toBe('ok');
    expectRetryCompacted(model);
    const reported = model.inputTokensFor(model.modelCalls[0]!.messages);
    expect(rec.of('overflow-retry')).toEqual([
      expect.objectContaining({ sessionId: 'invoke', reportedTokens: reported }),
    ]);
    // The provider's count of the rejected prompt, then the retry's own.
    expect(rec.of('usage-recorded').map((e) => e.inputTokens)).toEqual([
      reported,
      model.inputTokensFor(model.modelCalls[1]!.messages),
    ]);
  });

  it('invoke: a second rejection reaches the caller as the model threw it, without a third call', async () => {
    const errors: Error[] = [];
    const model = rejecting(
      () => true,
      (tokens) => errors[errors.push(openaiOverflow(tokens)) - 1]!,
    );
    const guarded = withContextGuard(model, { contextWindow: WINDOW });
    const thrown = await guarded
      .invoke(history(), { configurable: { thread_id: 'twice' } })
      .catch((error: unknown) => error);
    expect(errors).toHaveLength(2);
    expect(thrown).toBe(errors[1]);
    expect(model.modelCalls).toHaveLength(2);
  });

  it('invoke: other errors are not retried', async () => {
    const body = { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' };
    const rateLimit = new OpenAI.RateLimitError(429, body, undefined, new Headers());
    const model = new RecordingChatModel({
      reply: () => {
        throw rateLimit;
      },
    });
    const rec = recorder();
    await expect(
      withContextGuard(model, { contextWindow: WINDOW, onEvent: rec.onEvent }).invoke(history()),
    ).rejects.toBe(rateLimit);
    expect(model.modelCalls).toHaveLength(1);
    expect(rec.of('overflow-retry')).toEqual([]);
  });

  it('invoke: a provider that counts denser than the guard guessed; the retry fits its real window', async () => {
    // 0.6 real tokens per character: the guard's first guess (0.375) lets a prompt through that the
    // provider counts at more than its 8,000 tokens. The provider rejects whatever is over.
    const model: RecordingChatModel = new RecordingChatModel({
      tokensPerChar: 0.6,
      reply: (messages) => {
        const tokens = model.inputTokensFor(messages);
        if (tokens > WINDOW) throw openaiOverflow(tokens);
        return new AIMessage('ok');
      },
    });
    const guarded = withContextGuard(model, { contextWindow: WINDOW });
    expect((await guarded.invoke(history(8), { configurable: { thread_id: 'dense' } })).text).toBe('ok');
    const [first, retry] = model.modelCalls.map((c) => model.inputTokensFor(c.messages));
    expect(first).toBeGreaterThan(WINDOW);
    expect(retry).toBeLessThanOrEqual(WINDOW);
    expect(model.modelCalls).toHaveLength(2);
  });

  it('stream: a rejection before the first chunk is retried, and the retry streams', async () => {
    const model = rejecting((call) => call === 0, anthropicOverflow);
    const rec = recorder();
    const guarded = withContextGuard(model, { contextWindow: WINDOW, onEvent: rec.onEvent });
    let text = '';
    for await (const chunk of await guarded.stream(history(), { configurable: { thread_id: 'stream' } }))
      text += chunk.text;

    expect(text).toBe('ok');
    expectRetryCompacted(model);
    expect(rec.of('overflow-retry')).toHaveLength(1);
    expect(rec.of('usage-recorded').at(-1)).toMatchObject({
      inputTokens: model.inputTokensFor(model.modelCalls[1]!.messages),
    });
  });

  it('stream: a second rejection before any chunk reaches the caller, without a third call', async () => {
    const model = rejecting(() => true);
    const guarded = withContextGuard(model, { contextWindow: WINDOW });
    const consume = async () => {
      for await (const _chunk of await guarded.stream(history(), { configurable: { thread_id: 'stream-twice' } }));
    };
    await expect(consume()).rejects.toBeInstanceOf(ContextOverflowError);
    expect(model.modelCalls).toHaveLength(2);
  });

  it('stream: a rejection after a chunk reached the caller is not retried', async () => {
    class FailingMidStream extends RecordingChatModel {
      override async *_streamResponseChunks(
        messages: BaseMessage[],
        _options: this['ParsedCallOptions'],
        runManager?: CallbackManagerForLLMRun,
      ) {
        this.calls.push({ messages, tags: [], tools: undefined, summarizer: false });
        yield new ChatGenerationChunk({ message: new AIMessageChunk('The con'), text: 'The con' });
        await runManager?.handleLLMNewToken('The con');
        throw openaiOverflow(this.inputTokensFor(messages));
      }
    }
    const model = new FailingMidStream();
    const rec = recorder();
    const guarded = withContextGuard(model, { contextWindow: WINDOW, onEvent: rec.onEvent });
    const chunks: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of await guarded.stream(history(), { configurable: { thread_id: 'mid' } }))
          chunks.push(chunk.text);
      })(),
    ).rejects.toBeInstanceOf(ContextOverflowError);
    expect(chunks).toEqual(['The con']);
    expect(model.modelCalls).toHaveLength(1);
    expect(rec.of('overflow-retry')).toEqual([]);
  });

  it('batch: each input is recovered on its own', async () => {
    // The provider rejects every prompt that is not compacted: the first call of each input.
    const model = rejecting((_call, messages) => !messages.some(isSummary));
    const guarded = withContextGuard(model, { contextWindow: WINDOW });
    const replies = await guarded.batch(
      [history(), history(5)],
      [{ configurable: { thread_id: 'b1' } }, { configurable: { thread_id: 'b2' } }],
    );
    expect(replies.map((r) => r.text)).toEqual(['ok', 'ok']);
    expect(model.modelCalls).toHaveLength(4);
    for (const call of model.modelCalls.slice(2)) expect(call.messages.some(isSummary)).toBe(true);
  });
});

describe('createAgent middleware: an overflow is recovered with one retry in wrapModelCall', () => {
  function agentWith(reject: (call: number) => boolean, error: (tokens: number) => Error = openaiOverflow) {
    const rec = recorder();
    const script = scriptedReplies({ steps: 6 });
    const model: ToolCountingChatModel = new ToolCountingChatModel({
      reply: (messages, call) => {
        if (reject(call)) throw error(model.inputTokensFor(messages));
        return script(messages);
      },
    });
    const middleware = contextGuardMiddleware({ contextWindow: WINDOW, onEvent: rec.onEvent });
    const agent = createAgent({
      model,
      tools: [readTool],
      middleware: [middleware],
      systemPrompt: 'You are a careful coding agent.',
      checkpointer: new MemorySaver(),
    });
    const run = (threadId: string) =>
      (agent as unknown as { invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }> }).invoke(
        { messages: [new HumanMessage('Read the parts of the project, then report.')] },
        { configurable: { thread_id: threadId }, recursionLimit: 100 },
      );
    return { model, rec, run };
  }

  it.each(shapes)(
    'a rejection mid-run (the error %s throws): compacted, retried, and the run completes',
    async (_shape, error) => {
      const { model, rec, run } = agentWith((call) => call === 4, error);
      const result = await run('agent');

      expect(textOf(result.messages.at(-1)!)).toBe('done');
      const calls = model.modelCalls;
      const [rejected, retry] = [calls[4]!, calls[5]!];
      expect(model.inputTokensFor(retry.messages)).toBeLessThan(model.inputTokensFor(rejected.messages));
      expect(retry.messages.some(isSummary)).toBe(true);
      expect(pairingProblems(toGuardMessages(retry.messages))).toEqual([]);
      expect(rec.of('overflow-retry')).toEqual([
        expect.objectContaining({ sessionId: 'agent', reportedTokens: model.inputTokensFor(rejected.messages) }),
      ]);
      // Seven answers (six tool steps and the final one) and the one rejected call.
      expect(calls).toHaveLength(8);
    },
  );

  it('a second rejection reaches the agent’s caller, without a third call', async () => {
    const { model, run } = agentWith((call) => call >= 2);
    const thrown = await run('agent-twice').catch((error: unknown) => error);
    // LangChain wraps whatever leaves a wrapModelCall in its MiddlewareError; the provider's error is its cause.
    expect(ContextOverflowError.isInstance((thrown as { cause?: unknown }).cause)).toBe(true);
    expect(model.modelCalls).toHaveLength(4);
  });
});

describe('ContextGuardCallbackHandler: a rejection prepares your own loop’s retry', () => {
  it("the next beforeModel compacts, calibrated by the provider's count", async () => {
    const rec = recorder();
    const guard = createContextGuard({
      contextWindow: WINDOW,
      onEvent: rec.onEvent,
      summarizer: async () => 'The config is parsed in module 3.',
    });
    const handler = new ContextGuardCallbackHandler({ guard, sessionId: 'own-loop' });
    const model = rejecting((call) => call === 0);

    const first = await guard.beforeModel({ sessionId: 'own-loop', messages: toGuardMessages(history()) });
    expect(first.compaction).toBeUndefined();
    await expect(model.invoke(fromGuardMessages(first.messages), { callbacks: [handler] })).rejects.toBeInstanceOf(
      ContextOverflowError,
    );
    const reported = model.inputTokensFor(model.modelCalls[0]!.messages);
    expect(rec.of('overflow-retry')).toEqual([
      expect.objectContaining({ sessionId: 'own-loop', reportedTokens: reported }),
    ]);

    const second = await guard.beforeModel({ sessionId: 'own-loop', messages: toGuardMessages(history()) });
    expect(second.compaction).toBeDefined();
    expect(second.tokens).toBeLessThan(reported);
  });
});
