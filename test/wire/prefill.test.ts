// Claude models from 4.6 on (claude-sonnet-4-6, claude-opus-4-6...) reject a request whose last
// message is an assistant message: 400, "This model does not support assistant message prefill.
// The conversation must end with a user message." (vercel/ai#12296; context pruners met it too).
// A host history that ends on a tool result whose call is gone (an orphan) is sent by the guard
// with the call given back, so the request still ends on the tool result (a user message on
// Anthropic's wire), through @ai-sdk/anthropic (generateText, streamText) and @langchain/anthropic
// (withContextGuard, createAgent's middleware), each with the fake answering as the real API does.
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatAnthropic } from '@langchain/anthropic';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { generateText, streamText, wrapLanguageModel, type ModelMessage } from 'ai';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware } from '../../adapters/ai-sdk/index.ts';
import { contextGuardMiddleware as agentMiddleware } from '../../adapters/langchain/agent-middleware.ts';
import { withContextGuard } from '../../adapters/langchain/with-context-guard.ts';
import { fileText, noNetwork, REQUEST, SYSTEM, watch, WINDOW } from './agent.ts';
import { aiSdkRead, aiSdkTargets } from './ai-sdk-targets.ts';
import { anthropic, PREFILL_REJECTED } from './anthropic.ts';
import { FakeProvider, type WireCall } from './fake-provider.ts';

const apiKey = 'test-key';
const MODEL = 'claude-sonnet-4-6';
const ORPHAN_ID = 'toolu_gone';
const ORPHAN_OUTPUT = 'Page title: Setup. Run `npm ci` first.';

type Block = Record<string, unknown>;
const blocks = (m: Block | undefined): Block[] => (Array.isArray(m?.['content']) ? (m['content'] as Block[]) : []);

/** What the request put on the wire last: the orphan's result, after its call given back. */
function expectEndsOnTheOrphansResult(call: WireCall): void {
  expect(call.rejection).toBeUndefined();
  const messages = call.body['messages'] as Block[];
  const last = messages[messages.length - 1];
  expect(last?.['role']).toBe('user');
  expect(blocks(last)).toContainEqual(
    expect.objectContaining({ type: 'tool_result', tool_use_id: ORPHAN_ID, content: expect.anything() }),
  );
  expect(JSON.stringify(last)).toContain(ORPHAN_OUTPUT);
  const before = messages[messages.length - 2];
  expect(before?.['role']).toBe('assistant');
  expect(blocks(before)).toContainEqual({ type: 'tool_use', id: ORPHAN_ID, name: 'read', input: {} });
  // The user's request is there, and the tool output never in a user's text.
  expect(call.userTexts.join('\n')).toContain(REQUEST);
  expect(call.userTexts.join('\n')).not.toContain(ORPHAN_OUTPUT);
}

noNetwork();

describe('the fake Anthropic API refuses a prefill on claude-sonnet-4-6, as the real one does', () => {
  it('through @ai-sdk/anthropic: 400 with the API message, and not on claude-sonnet-4-5', async () => {
    const prompt = [
      { role: 'user' as const, content: [{ type: 'text' as const, text: REQUEST }] },
      { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'The answer is' }] },
    ];
    const fake = new FakeProvider(anthropic, 'api.anthropic.test', { window: WINDOW, reply: () => ({ text: 'ok' }) });
    const provider = createAnthropic({ apiKey, baseURL: 'https://api.anthropic.test/v1', fetch: fake.fetch });
    await expect(provider(MODEL).doGenerate({ prompt })).rejects.toMatchObject({
      statusCode: 400,
      message: PREFILL_REJECTED,
    });
    expect(fake.calls[0]?.rejection).toBe('prefill');
    await expect(provider('claude-sonnet-4-5').doGenerate({ prompt })).resolves.toBeDefined();
  });
});

/** The AI SDK host's history: the request, a word from the assistant, then a result whose call is gone. */
const aiSdkHistory: ModelMessage[] = [
  { role: 'user', content: REQUEST },
  { role: 'assistant', content: [{ type: 'text', text: 'Let me look at the setup page.' }] },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: ORPHAN_ID, toolName: 'read', output: { type: 'text', value: ORPHAN_OUTPUT } },
    ],
  },
];

describe.each(['generate', 'stream'] as const)('@ai-sdk/anthropic (%sText) with the guard', (mode) => {
  it('sends a history that ends on an orphan result ending on that result, after its call', async () => {
    const fake = new FakeProvider(anthropic, 'api.anthropic.test', { window: WINDOW, reply: () => ({ text: 'done' }) });
    const watched = watch(fake);
    const model = wrapLanguageModel({
      model: createAnthropic({ apiKey, baseURL: 'https://api.anthropic.test/v1', fetch: fake.fetch })(MODEL),
      middleware: contextGuardMiddleware({ contextWindow: WINDOW, onEvent: watched.onEvent }),
    });
    const tools = { read: aiSdkRead() };
    const args = { model, system: SYSTEM, messages: aiSdkHistory, tools, maxRetries: 0 };
    let text: string;
    if (mode === 'generate') text = (await generateText(args)).text;
    else {
      const errors: unknown[] = [];
      const r = streamText({ ...args, onError: ({ error }) => void errors.push(error) });
      await r.consumeStream();
      expect(errors).toEqual([]);
      text = await r.text;
    }
    expect(text).toBe('done');
    expect(fake.calls).toHaveLength(1);
    expectEndsOnTheOrphansResult(fake.calls[0] as WireCall);
    expect(watched.events.last('tool-pairing-repaired')).toMatchObject({ orphanResults: 1, restoredCalls: 1 });
  });
});

/**
 * The same history on the other providers, whose turn rules differ: Gemini wants a function call
 * turn right after a user or function response turn (never right after a model turn), OpenAI a
 * tool message right after the assistant message calling it. The call given back joins the
 * assistant message before the orphan rather than following it as a second assistant message.
 */
/** The AI SDK's other providers (Anthropic's prefill is above, on a model that refuses it). */
const otherProviders = aiSdkTargets.filter((t) => t.dialect !== anthropic);

describe.each(otherProviders)(
  '$name with the guard, a history that ends on an orphan result',
  ({ dialect, host, model }) => {
    it('is accepted, and ends on that result after its call given back', async () => {
      const fake = new FakeProvider(dialect, host, { window: WINDOW, reply: () => ({ text: 'done' }) });
      const watched = watch(fake);
      const wrapped = wrapLanguageModel({
        model: model(fake.fetch),
        middleware: contextGuardMiddleware({ contextWindow: WINDOW, onEvent: watched.onEvent }),
      });
      const tools = { read: aiSdkRead() };
      const result = await generateText({
        model: wrapped,
        system: SYSTEM,
        messages: aiSdkHistory,
        tools,
        maxRetries: 0,
      });
      expect(result.text).toBe('done');
      expect(fake.calls).toHaveLength(1);
      const call = fake.calls[0] as WireCall;
      expect(call.rejection).toBeUndefined();
      const wire = JSON.stringify(call.body);
      // The orphan's output is on the wire as a tool result (never a user's text), after its call.
      expect(wire).toContain(ORPHAN_OUTPUT);
      expect(wire.lastIndexOf(ORPHAN_ID)).toBeGreaterThan(wire.indexOf(ORPHAN_ID));
      expect(call.userTexts.join('\n')).toContain(REQUEST);
      expect(call.userTexts.join('\n')).not.toContain(ORPHAN_OUTPUT);
      expect(watched.events.last('tool-pairing-repaired')).toMatchObject({ orphanResults: 1, restoredCalls: 1 });
    });
  },
);

/** The LangChain host's history: the same, with a ToolMessage whose AIMessage call is gone. */
const langchainHistory = (): BaseMessage[] => [
  new HumanMessage(REQUEST),
  new AIMessage('Let me look at the setup page.'),
  new ToolMessage({ tool_call_id: ORPHAN_ID, name: 'read', content: ORPHAN_OUTPUT }),
];

const chatAnthropic = (fake: FakeProvider) =>
  new ChatAnthropic({
    model: MODEL,
    apiKey,
    maxRetries: 0,
    clientOptions: { baseURL: 'https://api.anthropic.test', fetch: fake.fetch },
  });

const readTool = langchainTool(async ({ path }: { path: string }) => fileText(path), {
  name: 'read',
  description: 'Read a file of the repository',
  schema: z.object({ path: z.string() }),
});

describe('@langchain/anthropic with the guard', () => {
  it('withContextGuard: invoke sends the history ending on the orphan result, after its call', async () => {
    const fake = new FakeProvider(anthropic, 'api.anthropic.test', { window: WINDOW, reply: () => ({ text: 'done' }) });
    const watched = watch(fake);
    const model = withContextGuard(chatAnthropic(fake), { contextWindow: WINDOW, onEvent: watched.onEvent });
    const reply = await model.bindTools([readTool]).invoke([new SystemMessage(SYSTEM), ...langchainHistory()], {
      configurable: { thread_id: 'prefill' },
    });
    expect(reply.content).toBe('done');
    expect(fake.calls).toHaveLength(1);
    expectEndsOnTheOrphansResult(fake.calls[0] as WireCall);
    expect(watched.events.last('tool-pairing-repaired')).toMatchObject({ orphanResults: 1, restoredCalls: 1 });
  });

  it('createAgent with contextGuardMiddleware: the first model call ends on the orphan result', async () => {
    const fake = new FakeProvider(anthropic, 'api.anthropic.test', { window: WINDOW, reply: () => ({ text: 'done' }) });
    const watched = watch(fake);
    const agent = createAgent({
      model: chatAnthropic(fake),
      tools: [readTool],
      systemPrompt: SYSTEM,
      middleware: [agentMiddleware({ contextWindow: WINDOW, onEvent: watched.onEvent })],
    }) as unknown as { invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }> };
    const result = await agent.invoke({ messages: langchainHistory() }, { configurable: { thread_id: 'prefill' } });
    expect(result.messages[result.messages.length - 1]?.content).toBe('done');
    expect(fake.calls).toHaveLength(1);
    expectEndsOnTheOrphansResult(fake.calls[0] as WireCall);
  });
});
