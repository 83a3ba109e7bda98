// Defects a review found in the LangChain adapters, each reproduced before its fix:
// - withContextGuard's stream recovers a context-length rejection that arrives inside the stream
//   before any content (OpenAI's Responses API sends response.created first, then an `error` event);
// - the call's abort signal reaches the guard (withContextGuard's config.signal, createAgent's runtime
//   signal), so an aborted call does not wait for a summary;
// - createAgent with a structured response (toolStrategy) records the usage of every model call.
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { ContextOverflowError } from '@langchain/core/errors';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, toolStrategy } from 'langchain';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware } from '../../../adapters/langchain/agent-middleware.ts';
import { withContextGuard } from '../../../adapters/langchain/with-context-guard.ts';
import type { SummarizerFailedEvent } from '../../../src/index.ts';
import { recorder } from '../../helpers.ts';
import { sse } from '../../wire/fake-provider.ts';
import { ToolCountingChatModel, readTool } from './agent-helpers.ts';
import { RecordingChatModel } from './fake-chat-model.ts';

const WINDOW = 8_000;

/** A long tool session with a last user request: over an 8,000-token window, so it is compacted. */
function longHistory(): BaseMessage[] {
  const messages: BaseMessage[] = [new HumanMessage('Please analyse the repository and report.')];
  for (let i = 0; i < 12; i++) {
    messages.push(
      new AIMessage({
        content: `Step ${i} prose `.repeat(60),
        tool_calls: [{ id: `c${i}`, name: 'read', args: { path: `f${i}` }, type: 'tool_call' }],
      }),
      new ToolMessage({ tool_call_id: `c${i}`, content: 'x'.repeat(2_500) }),
    );
  }
  messages.push(new HumanMessage('Now continue.'));
  return messages;
}

function openaiOverflow(): Error {
  const body = {
    message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
    param: 'input',
  };
  return ContextOverflowError.fromError(new OpenAI.BadRequestError(400, body, undefined, new Headers()));
}

/** The OpenAI Responses API's stream events around one answer (or an `error` event after the first two). */
function responsesStream(answer: string | undefined): Response {
  const response = (status: string, output: unknown[] = []) => ({
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    status,
    model: 'gpt-4o',
    output,
    usage:
      status === 'completed'
        ? {
            input_tokens: 100,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 2,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 102,
          }
        : null,
  });
  const opening = [
    {
      event: 'response.created',
      data: { type: 'response.created', sequence_number: 0, response: response('in_progress') },
    },
    {
      event: 'response.in_progress',
      data: { type: 'response.in_progress', sequence_number: 1, response: response('in_progress') },
    },
  ];
  if (answer === undefined) {
    const error = openaiOverflow() as Error & { cause?: { error?: unknown } };
    return sse([
      ...opening,
      { event: 'error', data: { type: 'error', sequence_number: 2, ...(error.cause?.error as object) } },
    ]);
  }
  const item = {
    type: 'message',
    id: 'msg_1',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: answer, annotations: [] }],
  };
  const delta = { item_id: 'msg_1', output_index: 0, content_index: 0, delta: answer };
  return sse([
    ...opening,
    {
      event: 'response.output_item.added',
      data: { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { ...item, content: [] } },
    },
    { event: 'response.output_text.delta', data: { type: 'response.output_text.delta', sequence_number: 3, ...delta } },
    {
      event: 'response.output_item.done',
      data: { type: 'response.output_item.done', sequence_number: 4, output_index: 0, item },
    },
    {
      event: 'response.completed',
      data: { type: 'response.completed', sequence_number: 5, response: response('completed', [item]) },
    },
  ]);
}

/** Streams `before` (content-less chunks), then throws an overflow on its first call; later calls stream `ok`. */
class LateOverflow extends RecordingChatModel {
  private readonly before: AIMessageChunk[];

  constructor(before: AIMessageChunk[]) {
    super();
    this.before = before;
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    if (this.modelCalls.length > 0) return yield* super._streamResponseChunks(messages, options, runManager);
    this.calls.push({ messages, tags: [], tools: undefined, summarizer: false });
    for (const message of this.before) yield new ChatGenerationChunk({ message, text: '' });
    throw openaiOverflow();
  }
}

async function collect(stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk[]> {
  const chunks: AIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('withContextGuard.stream: a rejection before any content is recovered', () => {
  it('@langchain/openai with the Responses API: an `error` event after response.created', async () => {
    let requests = 0;
    const fetch = async () => responsesStream(++requests === 1 ? undefined : 'hello');
    const chat = new ChatOpenAI({
      model: 'gpt-4o',
      apiKey: 'test',
      useResponsesApi: true,
      maxRetries: 0,
      configuration: { baseURL: 'https://api.openai.test/v1', fetch },
    });
    const rec = recorder();
    const guarded = withContextGuard(chat, { contextWindow: 128_000, onEvent: rec.onEvent });
    const chunks = await collect(await guarded.stream([new HumanMessage('hi')], { configurable: { thread_id: 't' } }));

    expect(chunks.map((c) => c.text).join('')).toBe('hello');
    expect(requests).toBe(2);
    expect(rec.of('overflow-retry')).toHaveLength(1);
    expect(rec.of('usage-recorded').at(-1)).toMatchObject({ inputTokens: 100 });
  });

  it('content-less chunks of the rejected attempt never reach the caller; the retry’s come in order', async () => {
    const model = new LateOverflow([
      new AIMessageChunk({ content: '', response_metadata: { id: 'rejected' } }),
      new AIMessageChunk({ content: [], response_metadata: { status: 'in_progress' } }),
    ]);
    const guarded = withContextGuard(model, { contextWindow: WINDOW });
    const chunks = await collect(await guarded.stream(longHistory(), { configurable: { thread_id: 'late' } }));

    expect(chunks.some((c) => c.response_metadata['id'] === 'rejected')).toBe(false);
    expect(chunks.map((c) => c.text)).toEqual(['o', 'k']);
    expect(model.modelCalls).toHaveLength(2);
  });

  it('a chunk with usage but no text counts as content: a rejection after it is not retried', async () => {
    const usage = { input_tokens: 50, output_tokens: 0, total_tokens: 50 };
    const model = new LateOverflow([new AIMessageChunk({ content: '', usage_metadata: usage })]);
    const guarded = withContextGuard(model, { contextWindow: WINDOW });
    const chunks: AIMessageChunk[] = [];
    const consume = async () => {
      for await (const chunk of await guarded.stream(longHistory(), { configurable: { thread_id: 'usage' } }))
        chunks.push(chunk);
    };
    await expect(consume()).rejects.toBeInstanceOf(ContextOverflowError);
    expect(chunks.map((c) => c.usage_metadata)).toEqual([usage]);
    expect(model.modelCalls).toHaveLength(1);
  });

  it('held-back chunks are flushed before the first content chunk, in order, and at the end of a content-less stream', async () => {
    class Scripted extends RecordingChatModel {
      private readonly script: AIMessageChunk[];
      constructor(script: AIMessageChunk[]) {
        super();
        this.script = script;
      }
      override async *_streamResponseChunks(messages: BaseMessage[]): AsyncGenerator<ChatGenerationChunk> {
        this.calls.push({ messages, tags: [], tools: undefined, summarizer: false });
        for (const message of this.script) yield new ChatGenerationChunk({ message, text: message.text });
      }
    }
    const meta = (id: string) => new AIMessageChunk({ content: '', response_metadata: { id } });
    const withText = await collect(
      await withContextGuard(new Scripted([meta('a'), meta('b'), new AIMessageChunk('hi'), meta('c')]), {
        contextWindow: WINDOW,
      }).stream('hello'),
    );
    expect(withText.map((c) => c.response_metadata['id'] ?? c.text)).toEqual(['a', 'b', 'hi', 'c']);

    const empty = await collect(
      await withContextGuard(new Scripted([meta('a'), meta('b')]), { contextWindow: WINDOW }).stream('hello'),
    );
    expect(empty.map((c) => c.response_metadata['id'])).toEqual(['a', 'b']);
  });
});

/** A summarizer that aborts the model call once it runs, then waits for its own signal. */
function abortingSummarizer(controller: AbortController) {
  return ({ signal }: { signal: AbortSignal }) =>
    new Promise<string>((_resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason));
      controller.abort(new Error('user cancelled'));
    });
}

const abortedSummaries = (events: SummarizerFailedEvent[]) => events.filter((e) => e.reason === 'aborted');

describe('the call’s abort signal reaches the guard', () => {
  it('withContextGuard: config.signal aborts the summarizer; the call rejects', async () => {
    const controller = new AbortController();
    const rec = recorder();
    const model = new RecordingChatModel();
    const guarded = withContextGuard(model, {
      contextWindow: WINDOW,
      summarizer: abortingSummarizer(controller),
      // Without the call's signal, only this timeout would end the summary.
      summarizerTimeoutMs: 2_000,
      onEvent: rec.onEvent,
    });
    await expect(
      guarded.invoke(longHistory(), { signal: controller.signal, configurable: { thread_id: 'abort' } }),
    ).rejects.toThrow();
    expect(abortedSummaries(rec.of('summarizer-failed'))).toHaveLength(1);
    expect(rec.of('summarizer-failed').filter((e) => e.reason === 'timeout')).toEqual([]);
  });

  it('withContextGuard.stream: the same', async () => {
    const controller = new AbortController();
    const rec = recorder();
    const guarded = withContextGuard(new RecordingChatModel(), {
      contextWindow: WINDOW,
      summarizer: abortingSummarizer(controller),
      summarizerTimeoutMs: 2_000,
      onEvent: rec.onEvent,
    });
    const consume = async () => {
      for await (const _chunk of await guarded.stream(longHistory(), {
        signal: controller.signal,
        configurable: { thread_id: 'abort-stream' },
      }));
    };
    await expect(consume()).rejects.toThrow();
    expect(abortedSummaries(rec.of('summarizer-failed'))).toHaveLength(1);
  });

  it('createAgent middleware: the run’s signal aborts the summarizer', async () => {
    const controller = new AbortController();
    const rec = recorder();
    const model = new ToolCountingChatModel({ reply: () => new AIMessage('done') });
    const middleware = contextGuardMiddleware({
      contextWindow: WINDOW,
      summarizer: abortingSummarizer(controller),
      summarizerTimeoutMs: 2_000,
      onEvent: rec.onEvent,
    });
    const agent = createAgent({ model, tools: [readTool], middleware: [middleware] });
    await expect(
      agent.invoke(
        { messages: longHistory() },
        { signal: controller.signal, configurable: { thread_id: 'abort-agent' } },
      ),
    ).rejects.toThrow();
    expect(abortedSummaries(rec.of('summarizer-failed')).length).toBeGreaterThanOrEqual(1);
    expect(rec.of('summarizer-failed').filter((e) => e.reason === 'timeout')).toEqual([]);
    expect(model.modelCalls).toHaveLength(0);
  });
});

describe('createAgent with a structured response: the usage of every model call is recorded', () => {
  it('toolStrategy: the final call’s usage too, once', async () => {
    const rec = recorder();
    const model: ToolCountingChatModel = new ToolCountingChatModel({
      reply: (_messages, call) =>
        call === 0
          ? new AIMessage({
              content: '',
              tool_calls: [{ id: 'c1', name: 'read', args: { path: 'src/part-1.ts' }, type: 'tool_call' }],
            })
          : new AIMessage({
              content: '',
              tool_calls: [{ id: 'c2', name: 'extract-1', args: { cause: 'null deref' }, type: 'tool_call' }],
            }),
    });
    const agent = createAgent({
      model,
      tools: [readTool],
      responseFormat: toolStrategy(z.object({ cause: z.string() }).describe('Report')),
      middleware: [contextGuardMiddleware({ contextWindow: 128_000, onEvent: rec.onEvent })],
    });
    const result = await agent.invoke(
      { messages: [new HumanMessage('Find the cause.')] },
      { configurable: { thread_id: 'structured' } },
    );

    expect(result.structuredResponse).toEqual({ cause: 'null deref' });
    expect(model.modelCalls).toHaveLength(2);
    expect(rec.of('usage-recorded').map((e) => e.inputTokens)).toEqual(model.requestSizes());
  });

  it('a plain tool loop records each call exactly once', async () => {
    const rec = recorder();
    const model: ToolCountingChatModel = new ToolCountingChatModel({
      reply: (_messages, call) =>
        call < 2
          ? new AIMessage({
              content: '',
              tool_calls: [{ id: `c${call}`, name: 'read', args: { path: `src/part-${call}.ts` }, type: 'tool_call' }],
            })
          : new AIMessage('done'),
    });
    const agent = createAgent({
      model,
      tools: [readTool],
      middleware: [contextGuardMiddleware({ contextWindow: 128_000, onEvent: rec.onEvent })],
    });
    await agent.invoke({ messages: [new HumanMessage('Read two parts.')] }, { configurable: { thread_id: 'loop' } });
    expect(model.modelCalls).toHaveLength(3);
    expect(rec.of('usage-recorded').map((e) => e.inputTokens)).toEqual(model.requestSizes());
  });
});
