// A window for every call, on the wire (issue 21): a model no registry knows, and a provider whose
// window is smaller than the guard believes, through the real provider packages (@ai-sdk/openai,
// @ai-sdk/anthropic, @ai-sdk/google; @langchain/openai, @langchain/anthropic) with the fake
// provider's `fetch` answering, and rejecting, in each provider's own format (fake-provider.ts).
//   - Unknown model, default options: the guard guards it with `fallbackContextWindow` (32,000),
//     says so once (an event; the console when no onEvent is given), answers status(); no request
//     the provider receives is over 32,000 tokens by its own count, though the run is far longer.
//   - A provider window (12,000) under the fallback: the first request over it is rejected with
//     the provider's error naming its limit; the guard learns that limit as the model's window,
//     compacts and retries once; the retry and every later request fit 12,000 (one rejection only).
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import {
  HumanMessage,
  SystemMessage,
  type AIMessageChunk,
  type BaseMessage,
  type ToolMessage,
} from '@langchain/core/messages';
import { tool as lcTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, stepCountIs, streamText, wrapLanguageModel } from 'ai';
import { createAgent } from 'langchain';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware as aiSdkGuard } from '../../adapters/ai-sdk/index.ts';
import { contextGuardMiddleware as agentGuard } from '../../adapters/langchain/agent-middleware.ts';
import { withContextGuard } from '../../adapters/langchain/with-context-guard.ts';
import type { ContextGuard, ContextGuardOptions } from '../../src/index.ts';
import { fileText, hasRequest, noNetwork, plainScript, REQUEST, SYSTEM, watch, type WireRun } from './agent.ts';
import { aiSdkRead } from './ai-sdk-targets.ts';
import { anthropic } from './anthropic.ts';
import { FakeProvider, type Dialect } from './fake-provider.ts';
import { google } from './google.ts';
import { openaiChat } from './openai.ts';

/** What each `read` returns: about 3,000 tokens, so that a run of 16 steps is about 50,000. */
const FILE_CHARS = 12_000;
const STEPS = 16;
const FALLBACK = 32_000;
const PROVIDER_LIMIT = 12_000;
const SESSION = 'wire-windows';
const apiKey = 'test-key';

// Model ids no catalog or table knows.
const UNKNOWN = { openai: 'acme-coder-7', anthropic: 'claude-acme-preview', google: 'gemini-acme-exp' };

interface AiSdkTarget {
  name: string;
  dialect: Dialect;
  host: string;
  model(fetch: FakeProvider['fetch']): LanguageModelV4;
}

const aiSdkTargets: AiSdkTarget[] = [
  {
    name: '@ai-sdk/openai (Chat Completions)',
    dialect: openaiChat,
    host: 'api.openai.test',
    model: (fetch) => createOpenAI({ apiKey, baseURL: 'https://api.openai.test/v1', fetch }).chat(UNKNOWN.openai),
  },
  {
    name: '@ai-sdk/anthropic',
    dialect: anthropic,
    host: 'api.anthropic.test',
    model: (fetch) => createAnthropic({ apiKey, baseURL: 'https://api.anthropic.test/v1', fetch })(UNKNOWN.anthropic),
  },
  {
    name: '@ai-sdk/google',
    dialect: google,
    host: 'generativelanguage.test',
    model: (fetch) =>
      createGoogleGenerativeAI({ apiKey, baseURL: 'https://generativelanguage.test/v1beta', fetch })(UNKNOWN.google),
  },
];

interface LangChainTarget {
  name: string;
  dialect: Dialect;
  host: string;
  modelId: string;
  model(fetch: FakeProvider['fetch']): BaseChatModel;
}

const langChainTargets: LangChainTarget[] = [
  {
    name: '@langchain/openai ChatOpenAI',
    dialect: openaiChat,
    host: 'api.openai.test',
    modelId: UNKNOWN.openai,
    model: (fetch) =>
      new ChatOpenAI({
        model: UNKNOWN.openai,
        apiKey,
        maxRetries: 0,
        configuration: { baseURL: 'https://api.openai.test/v1', fetch },
      }),
  },
  {
    name: '@langchain/anthropic ChatAnthropic',
    dialect: anthropic,
    host: 'api.anthropic.test',
    modelId: UNKNOWN.anthropic,
    model: (fetch) =>
      new ChatAnthropic({
        model: UNKNOWN.anthropic,
        apiKey,
        maxRetries: 0,
        clientOptions: { baseURL: 'https://api.anthropic.test', fetch },
      }),
  },
];

const aiSdkTools = { read: aiSdkRead(FILE_CHARS) };
const readTool = lcTool(async ({ path }: { path: string }) => fileText(path, FILE_CHARS), {
  name: 'read',
  description: 'Read a file of the repository',
  schema: z.object({ path: z.string() }),
});

interface Run extends WireRun {
  guard: ContextGuard;
  text: string;
}

/** Guard options of a run: none about the window; `onEvent` unless the run tests the console. */
function guardOptions(watched: ReturnType<typeof watch>, withOnEvent: boolean): ContextGuardOptions {
  return withOnEvent ? { onEvent: watched.onEvent } : {};
}

async function runAiSdk(
  target: AiSdkTarget,
  mode: 'generate' | 'stream',
  providerWindow: number,
  withOnEvent = true,
): Promise<Run> {
  const fake = new FakeProvider(target.dialect, target.host, { window: providerWindow, reply: plainScript(STEPS) });
  const watched = watch(fake);
  const middleware = aiSdkGuard(guardOptions(watched, withOnEvent));
  const model = wrapLanguageModel({ model: target.model(fake.fetch), middleware });
  const args = {
    model,
    system: SYSTEM,
    prompt: REQUEST,
    tools: aiSdkTools,
    stopWhen: stepCountIs(STEPS + 4),
    maxRetries: 0,
    providerOptions: { contextGuard: { sessionId: SESSION } },
  };
  let text: string;
  if (mode === 'generate') text = (await generateText(args)).text;
  else {
    const errors: unknown[] = [];
    const r = streamText({ ...args, onError: ({ error }) => void errors.push(error) });
    await r.consumeStream();
    if (errors.length > 0) throw errors[0];
    text = await r.text;
  }
  return { ...watched, guard: middleware.guard, text };
}

/** The loop a withContextGuard user writes around `bindTools(...).invoke` / `.stream`. */
async function toolLoop(model: ReturnType<typeof withContextGuard>, streaming: boolean): Promise<BaseMessage[]> {
  const bound = model.bindTools([readTool]);
  const messages: BaseMessage[] = [new SystemMessage(SYSTEM), new HumanMessage(REQUEST)];
  const config = { configurable: { thread_id: SESSION } };
  for (let step = 0; step < STEPS + 4; step++) {
    let reply: AIMessageChunk | undefined;
    if (streaming) {
      for await (const chunk of await bound.stream(messages, config))
        reply = reply ? reply.concat(chunk as AIMessageChunk) : (chunk as AIMessageChunk);
    } else reply = (await bound.invoke(messages, config)) as AIMessageChunk;
    messages.push(reply!);
    if (!reply!.tool_calls?.length) return messages;
    for (const call of reply!.tool_calls)
      messages.push((await readTool.invoke({ ...call, type: 'tool_call' })) as ToolMessage);
  }
  throw new Error('the agent did not finish');
}

type Style = 'createAgent' | 'withContextGuard';

async function runLangChain(
  target: LangChainTarget,
  style: Style,
  streaming: boolean,
  providerWindow: number,
): Promise<Run> {
  const fake = new FakeProvider(target.dialect, target.host, { window: providerWindow, reply: plainScript(STEPS) });
  const watched = watch(fake);
  const base = target.model(fake.fetch);
  const options = guardOptions(watched, true);
  if (style === 'withContextGuard') {
    const guarded = withContextGuard(base, options);
    const messages = await toolLoop(guarded, streaming);
    return { ...watched, guard: guarded.guard, text: String(messages.at(-1)?.text) };
  }
  const middleware = agentGuard(options);
  const agent = createAgent({
    model: base,
    tools: [readTool],
    systemPrompt: SYSTEM,
    middleware: [middleware],
  }) as unknown as {
    invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }>;
    stream(input: unknown, config: unknown): Promise<AsyncIterable<[string, unknown]>>;
  };
  const input = { messages: [new HumanMessage(REQUEST)] };
  const config = { recursionLimit: 100, configurable: { thread_id: SESSION } };
  let messages: BaseMessage[];
  if (!streaming) messages = (await agent.invoke(input, config)).messages;
  else {
    let state: { messages: BaseMessage[] } | undefined;
    for await (const [mode, chunk] of await agent.stream(input, { ...config, streamMode: ['messages', 'values'] }))
      if (mode === 'values') state = chunk as { messages: BaseMessage[] };
    messages = state!.messages;
  }
  return { ...watched, guard: middleware.guard, text: String(messages.at(-1)?.text) };
}

/** The unknown-model run: guarded against the fallback, said once, status answered, nothing over it. */
async function expectGuardedByFallback(r: Run, modelId: string): Promise<void> {
  expect(r.text).toBe('done');
  const agent = r.fake.agentCalls();
  expect(agent.length).toBe(STEPS + 1);
  // Unguarded, the last request would have carried every file read: well over the fallback.
  expect(STEPS * (FILE_CHARS / 4)).toBeGreaterThan(1.4 * FALLBACK);
  expect(r.events.of('compaction-end').length).toBeGreaterThanOrEqual(1);
  for (const call of r.fake.calls) {
    expect(call.tokens, `request ${call.index} by the provider's count`).toBeLessThanOrEqual(FALLBACK);
    expect(call.rejection, `request ${call.index}: ${call.error}`).toBeUndefined();
    if (!call.summarizer) expect(hasRequest(call), `request ${call.index}: the user's request`).toBe(true);
  }
  expect(r.events.of('window-fallback')).toEqual([expect.objectContaining({ modelId, contextWindow: FALLBACK })]);
  expect(r.events.of('config-error')).toEqual([]);
  expect(r.events.of('estimate').every((e) => e.contextWindow === FALLBACK)).toBe(true);
  expect(await r.guard.status(SESSION)).toMatchObject({ sessionId: SESSION, contextWindow: FALLBACK });
}

/**
 * The provider-limit run: one rejection naming the limit, learned as the model's window; the retry
 * right after it is accepted and fits; every later request fits too (nothing else rejected).
 */
async function expectLimitLearned(r: Run, modelId: string): Promise<void> {
  expect(r.text).toBe('done');
  const agent = r.fake.agentCalls();
  const rejected = r.fake.calls.filter((c) => c.rejection);
  expect(rejected.map((c) => c.rejection)).toEqual(['context-length']);
  const rejectedAt = agent.indexOf(rejected[0]!);
  expect(rejectedAt).toBeGreaterThan(0);
  const retry = agent[rejectedAt + 1]!;
  expect(retry.rejection).toBeUndefined();
  expect(retry.tokens).toBeLessThanOrEqual(PROVIDER_LIMIT);
  for (const call of r.fake.calls.slice(rejected[0]!.index + 1))
    expect(call.tokens, `request ${call.index} after the limit was learned`).toBeLessThanOrEqual(PROVIDER_LIMIT);
  for (const call of agent) expect(hasRequest(call), `request ${call.index}`).toBe(true);
  expect(r.events.of('window-learned')).toEqual([
    expect.objectContaining({ modelId, contextWindow: PROVIDER_LIMIT, previous: FALLBACK }),
  ]);
  expect(r.events.of('overflow-retry')).toHaveLength(1);
  // The calls after the rejection are measured against the learned window.
  const estimates = r.events.of('estimate');
  expect(estimates.at(-1)?.contextWindow).toBe(PROVIDER_LIMIT);
  expect(await r.guard.status(SESSION)).toMatchObject({ contextWindow: PROVIDER_LIMIT });
}

noNetwork();

describe.each(aiSdkTargets)('$name, a model no registry knows (AI SDK middleware)', (target) => {
  const modelId = target.model(async () => new Response()).modelId;

  it.each(['generate', 'stream'] as const)('%sText: guarded against the fallback window', async (mode) => {
    await expectGuardedByFallback(await runAiSdk(target, mode, FALLBACK), modelId);
  });

  it.each(['generate', 'stream'] as const)(
    '%sText: the limit the provider names is learned, the request compacted and retried once',
    async (mode) => {
      await expectLimitLearned(await runAiSdk(target, mode, PROVIDER_LIMIT), modelId);
    },
  );
});

describe('without onEvent, the fallback is printed once per model', () => {
  it('@ai-sdk/openai generateText: one console.warn naming the model and the option', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const r = await runAiSdk(aiSdkTargets[0]!, 'generate', FALLBACK, false);
      expect(r.text).toBe('done');
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([
        expect.stringMatching(/context-guard: .*"acme-coder-7".*32000 tokens.*fallbackContextWindow/),
      ]);
      for (const call of r.fake.calls) expect(call.tokens).toBeLessThanOrEqual(FALLBACK);
    } finally {
      warn.mockRestore();
    }
  });
});

describe.each(langChainTargets)('$name, a model no registry knows (LangChain)', (target) => {
  const cases = (['createAgent', 'withContextGuard'] as const).flatMap((style) =>
    [false, true].map((streaming) => [style, streaming] as const),
  );

  it.each(cases)('%s, streaming %s: guarded against the fallback window', async (style, streaming) => {
    await expectGuardedByFallback(await runLangChain(target, style, streaming, FALLBACK), target.modelId);
  });

  it.each(cases)(
    '%s, streaming %s: the limit the provider names is learned, the request compacted and retried once',
    async (style, streaming) => {
      await expectLimitLearned(await runLangChain(target, style, streaming, PROVIDER_LIMIT), target.modelId);
    },
  );
});
