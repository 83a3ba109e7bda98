// Wire-level tests of the LangChain adapters through the real provider packages: @langchain/openai's
// ChatOpenAI (Chat Completions, and the Responses API with `useResponsesApi: true`, whose answers
// carry their stored output in `response_metadata.output`) and @langchain/anthropic's ChatAnthropic,
// each given the `fetch` of a fake provider (fake-provider.ts), in JSON and in SSE (`streaming`).
// Real tool loops run through createAgent with contextGuardMiddleware, and through
// withContextGuard(model) in the loop a user writes around `bindTools(...).invoke` / `.stream`; the
// tests check every request the provider received (agent.ts), as the AI SDK's wire tests do.
import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import {
  HumanMessage,
  SystemMessage,
  type AIMessageChunk,
  type BaseMessage,
  type ToolMessage,
} from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware } from '../../adapters/langchain/agent-middleware.ts';
import { withContextGuard } from '../../adapters/langchain/with-context-guard.ts';
import {
  expectEveryRequestSound,
  expectOverflowRecovered,
  expectUsageAsReported,
  fileText,
  LONG_ANSWER,
  noNetwork,
  plainScript,
  readerScript,
  REQUEST,
  SYSTEM,
  watch,
  WINDOW,
  type WireRun,
} from './agent.ts';
import { anthropic } from './anthropic.ts';
import { FakeProvider, type Dialect, type FakeOptions, type WireCall } from './fake-provider.ts';
import { openaiChat, openaiResponses } from './openai.ts';

const readTool = tool(async ({ path }: { path: string }) => fileText(path), {
  name: 'read',
  description: 'Read a file of the repository',
  schema: z.object({ path: z.string() }),
});
const writeTool = tool(
  async ({ path, content }: { path: string; content: string }) => `wrote ${content.length} characters to ${path}`,
  {
    name: 'write',
    description: 'Write a file of the repository',
    schema: z.object({ path: z.string(), content: z.string() }),
  },
);

interface Target {
  name: string;
  dialect: Dialect;
  host: string;
  model(fetch: FakeProvider['fetch']): BaseChatModel;
}

const apiKey = 'test-key';
const OPENAI_URL = 'https://api.openai.test/v1';
const targets: Target[] = [
  {
    name: 'ChatOpenAI (Chat Completions)',
    dialect: openaiChat,
    host: 'api.openai.test',
    model: (fetch) =>
      new ChatOpenAI({ model: 'gpt-4o', apiKey, maxRetries: 0, configuration: { baseURL: OPENAI_URL, fetch } }),
  },
  {
    name: 'ChatOpenAI (Responses API)',
    dialect: openaiResponses,
    host: 'api.openai.test',
    model: (fetch) =>
      new ChatOpenAI({
        model: 'gpt-4o',
        apiKey,
        maxRetries: 0,
        useResponsesApi: true,
        configuration: { baseURL: OPENAI_URL, fetch },
      }),
  },
  {
    name: 'ChatAnthropic',
    dialect: anthropic,
    host: 'api.anthropic.test',
    model: (fetch) =>
      new ChatAnthropic({
        model: 'claude-sonnet-4-5',
        apiKey,
        maxRetries: 0,
        clientOptions: { baseURL: 'https://api.anthropic.test', fetch },
      }),
  },
];

type Style = 'contextGuardMiddleware' | 'withContextGuard';

interface Run extends WireRun {
  messages: BaseMessage[];
}

const tools = [readTool, writeTool];

/**
 * The agent loop a withContextGuard user writes: call the bound model (`invoke`, or `stream` and
 * concatenate the chunks), run its tool calls, call again.
 */
async function toolLoop(
  model: ReturnType<typeof withContextGuard>,
  streaming: boolean,
  maxSteps = 30,
): Promise<BaseMessage[]> {
  const bound = model.bindTools(tools);
  const messages: BaseMessage[] = [new SystemMessage(SYSTEM), new HumanMessage(REQUEST)];
  const config = { configurable: { thread_id: 'wire' } };
  for (let step = 0; step < maxSteps; step++) {
    let reply: AIMessageChunk | undefined;
    if (streaming) {
      for await (const chunk of await bound.stream(messages, config)) {
        reply = reply ? reply.concat(chunk as AIMessageChunk) : (chunk as AIMessageChunk);
      }
    } else reply = (await bound.invoke(messages, config)) as AIMessageChunk;
    messages.push(reply!);
    if (!reply!.tool_calls?.length) return messages;
    for (const call of reply!.tool_calls) {
      const run = tools.find((t) => t.name === call.name) as { invoke(call: unknown): Promise<unknown> };
      messages.push((await run.invoke({ ...call, type: 'tool_call' })) as ToolMessage);
    }
  }
  throw new Error('the agent did not finish');
}

/**
 * One agent run. Streaming is LangChain's own: `agent.stream` in `messages` mode, or the model's
 * `stream`, which makes the provider package request SSE. (A model built with `streaming: true`
 * would do too, but ChatOpenAI then estimates its usage with tiktoken, fetched from the network.)
 */
async function run(
  target: Target,
  style: Style,
  streaming: boolean,
  options: { fake: FakeOptions; guardWindow?: number },
): Promise<Run> {
  const fake = new FakeProvider(target.dialect, target.host, options.fake);
  const watched = watch(fake);
  const base = target.model(fake.fetch);
  const guard = { contextWindow: options.guardWindow ?? WINDOW, onEvent: watched.onEvent };
  if (style === 'withContextGuard')
    return { ...watched, messages: await toolLoop(withContextGuard(base, guard), streaming) };
  const agent = createAgent({
    model: base,
    tools,
    systemPrompt: SYSTEM,
    middleware: [contextGuardMiddleware(guard)],
  }) as unknown as {
    invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }>;
    stream(input: unknown, config: unknown): Promise<AsyncIterable<[string, unknown]>>;
  };
  const input = { messages: [new HumanMessage(REQUEST)] };
  const config = { recursionLimit: 100, configurable: { thread_id: 'wire' } };
  if (!streaming) return { ...watched, messages: (await agent.invoke(input, config)).messages };
  let state: { messages: BaseMessage[] } | undefined;
  for await (const [mode, chunk] of await agent.stream(input, { ...config, streamMode: ['messages', 'values'] })) {
    if (mode === 'values') state = chunk as { messages: BaseMessage[] };
  }
  return { ...watched, messages: state!.messages };
}

type Item = Record<string, unknown>;

/** What an output item says: a message's content, a reasoning item's summary, a call's arguments. */
const said = (item: Item) => JSON.stringify([item['content'], item['summary'], item['arguments']]);

/**
 * Items a Responses request sent under the id of a stored item that do not say what the stored item
 * says: an edit passed off as the original (the provider would take it for the item it stored).
 */
function itemsNotAsStored(call: WireCall, store: ReadonlyMap<string, unknown>): string[] {
  return ((call.body['input'] ?? []) as Item[])
    .filter((item) => item['type'] !== 'item_reference' && typeof item['id'] === 'string' && store.has(item['id']))
    .filter((item) => said(item) !== said(store.get(item['id'] as string) as Item))
    .map((item) => String(item['id']));
}

noNetwork();

const styles: Style[] = ['contextGuardMiddleware', 'withContextGuard'];

describe.each(targets)('$name through LangChain', (target) => {
  describe.each(styles)('createAgent with %s', (style) => {
    it.each([false, true])(
      'streaming %s: a loop over several windows fits, pairs, keeps the request, is billed as planned',
      async (streaming) => {
        const r = await run(target, style, streaming, { fake: { window: WINDOW, reply: readerScript(12) } });
        expect(r.messages.at(-1)?.text).toBe('done');
        expect(r.fake.agentCalls()).toHaveLength(13);
        // JSON or SSE, as asked.
        for (const call of r.fake.agentCalls()) expect(call.stream).toBe(streaming);
        // The long step was clipped in the prompt after it (a hard fit), and that clip reached the provider.
        expect(r.hardFits.length).toBeGreaterThanOrEqual(1);
        expectEveryRequestSound(r);
        for (const call of r.fake.calls)
          expect(itemsNotAsStored(call, r.fake.store), `request ${call.index}`).toEqual([]);
        expectUsageAsReported(r);
        expect(r.events.of('error')).toEqual([]);
      },
    );
  });
});

describe('ChatOpenAI with the Responses API: an edited answer is not re-sent as its stored output', () => {
  it.each(styles)('%s: the clipped answer goes by its content, under no stored id', async (style) => {
    const target = targets.find((t) => t.dialect === openaiResponses)!;
    const r = await run(target, style, false, { fake: { window: WINDOW, reply: readerScript(6) } });
    const long = [...r.fake.store.entries()].find(([, item]) =>
      JSON.stringify(item).includes(LONG_ANSWER.slice(0, 200)),
    )?.[0];
    expect(long).toMatch(/^msg_/);
    for (const call of r.fake.agentCalls()) {
      const ids = ((call.body['input'] ?? []) as Item[]).map((i) => i['id']);
      expect(ids, `request ${call.index}`).not.toContain(long);
    }
    // The request after the long answer carries it, clipped, by content.
    expect(r.fake.agentCalls().some((c) => JSON.stringify(c.body).includes(LONG_ANSWER.slice(0, 200)))).toBe(true);
    // Unedited answers still go as their stored output (ids and all).
    const storedMessageSent = (c: WireCall) =>
      ((c.body['input'] ?? []) as Item[]).some((i) => String(i['id']).startsWith('msg_'));
    expect(r.fake.agentCalls().some(storedMessageSent)).toBe(true);
    expectEveryRequestSound(r);
    expectUsageAsReported(r);
  });
});

describe.each(targets)('$name through LangChain: an overflow the guard did not foresee', (target) => {
  const cases = styles.flatMap((style) => [false, true].map((streaming) => [style, streaming] as const));
  it.each(cases)(
    '%s, streaming %s: recovered with exactly one compacted retry per rejection',
    async (style, streaming) => {
      // The guard believes the window is 12k; the provider's is 6k: prompts between the two are rejected.
      const r = await run(target, style, streaming, {
        guardWindow: 12_000,
        fake: { window: 6_000, reply: plainScript(12) },
      });
      expect(r.messages.at(-1)?.text).toBe('done');
      expectOverflowRecovered(r, 6_000);
      // A rejection that names the provider's limit teaches it: one rejection, then every request fits.
      // (OpenAI Responses names none: each request over the limit is rejected and retried once.)
      if (target.dialect !== openaiResponses) {
        expect(r.fake.agentCalls().filter((c) => c.rejection)).toHaveLength(1);
        expect(r.events.of('window-learned')).toEqual([
          expect.objectContaining({ contextWindow: 6_000, previous: 12_000 }),
        ]);
      }
    },
  );
});
