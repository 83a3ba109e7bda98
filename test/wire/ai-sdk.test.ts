import type { LanguageModelV4FunctionTool, LanguageModelV4Middleware, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware, isContextLengthError, promptTokensFromError } from '../../adapters/ai-sdk/index.ts';
import {
  expectEveryRequestSound,
  expectOverflowRecovered,
  expectUsageAsReported,
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
import { aiSdkRead, aiSdkTargets, type Target } from './ai-sdk-targets.ts';
import { FakeProvider, type FakeOptions, type WireCall } from './fake-provider.ts';
import { openaiResponses, referencesItem } from './openai.ts';

const targets = aiSdkTargets;

const tools = {
  read: aiSdkRead(),
  write: tool({
    description: 'Write a file of the repository',
    inputSchema: z.object({ path: z.string(), content: z.string() }),
    execute: async ({ path, content }) => `wrote ${content.length} characters to ${path}`,
  }),
};

/** Records the prompt each provider call receives (innermost middleware, after the guard). */
function promptSpy() {
  const prompts: LanguageModelV4Prompt[] = [];
  const middleware: LanguageModelV4Middleware = {
    specificationVersion: 'v4',
    wrapGenerate: async ({ doGenerate, params }) => {
      prompts.push(params.prompt);
      return doGenerate();
    },
    wrapStream: async ({ doStream, params }) => {
      prompts.push(params.prompt);
      return doStream();
    },
  };
  return { prompts, middleware };
}

type Mode = 'generate' | 'stream';

interface Run extends WireRun {
  prompts: LanguageModelV4Prompt[];
  text: string;
}

async function run(target: Target, mode: Mode, options: { fake: FakeOptions; guardWindow?: number }): Promise<Run> {
  const fake = new FakeProvider(target.dialect, target.host, options.fake);
  const watched = watch(fake);
  const spy = promptSpy();
  const guard = contextGuardMiddleware({ contextWindow: options.guardWindow ?? WINDOW, onEvent: watched.onEvent });
  // Listed first runs outermost: the guard, then the spy, then the provider.
  const model = wrapLanguageModel({ model: target.model(fake.fetch), middleware: [guard, spy.middleware] });
  const args = { model, system: SYSTEM, prompt: REQUEST, tools, stopWhen: stepCountIs(20), maxRetries: 0 };
  let text: string;
  if (mode === 'generate') text = (await generateText(args)).text;
  else {
    const errors: unknown[] = [];
    const r = streamText({ ...args, onError: ({ error }) => void errors.push(error) });
    await r.consumeStream();
    if (errors.length > 0) throw errors[0];
    text = await r.text;
  }
  return { ...watched, prompts: spy.prompts, text };
}

/**
 * OpenAI Responses item references whose part is not the stored item: the prompt part a reference
 * stands for carries a text other than the original the provider reads for it.
 */
function staleReferences(prompt: LanguageModelV4Prompt, call: WireCall, store: ReadonlyMap<string, unknown>): string[] {
  const stale: string[] = [];
  for (const message of prompt) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as Array<{
      type: string;
      text?: string;
      providerOptions?: { openai?: { itemId?: string } };
    }>) {
      const id = part.providerOptions?.openai?.itemId;
      if (!id || !referencesItem(call.body, id) || (part.type !== 'text' && part.type !== 'reasoning')) continue;
      const item = store.get(id) as
        | { content?: Array<{ text?: string }>; summary?: Array<{ text?: string }> }
        | undefined;
      const original = (item?.content ?? item?.summary ?? []).map((c) => c.text ?? '').join('');
      if (original !== part.text)
        stale.push(`${id}: ${part.text?.length} characters sent, the provider reads its original: ${original.length}`);
    }
  }
  return stale;
}

noNetwork();

describe.each(targets)('the fake $name rejects what the provider rejects, through its package', (target) => {
  const call = (prompt: LanguageModelV4Prompt, window = WINDOW) => {
    const fake = new FakeProvider(target.dialect, target.host, { window, reply: () => ({ text: 'ok' }) });
    const model = target.model(fake.fetch);
    const tool: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'read',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    };
    return { fake, result: model.doGenerate({ prompt, tools: [tool] }) };
  };
  const user = { role: 'user' as const, content: [{ type: 'text' as const, text: REQUEST }] };
  const toolCall = { type: 'tool-call' as const, toolCallId: 'call_1', toolName: 'read', input: { path: 'a.ts' } };
  const toolResult = {
    type: 'tool-result' as const,
    toolCallId: 'call_1',
    toolName: 'read',
    output: { type: 'text' as const, value: 'x' },
  };

  it('a tool call without its result', async () => {
    const { fake, result } = call([user, { role: 'assistant', content: [toolCall] }, user]);
    await expect(result).rejects.toMatchObject({ statusCode: 400 });
    expect(fake.calls[0]!.rejection).toBe('pairing');
  });

  it('a tool result without its call', async () => {
    const { fake, result } = call([
      user,
      { role: 'assistant', content: [{ type: 'text', text: 'Reading.' }] },
      { role: 'tool', content: [toolResult] },
    ]);
    await expect(result).rejects.toMatchObject({ statusCode: 400 });
    expect(fake.calls[0]!.rejection).toBe('pairing');
  });

  it('a prompt over its window, with the error the guard recognizes (and the count, where the provider gives it)', async () => {
    const { fake, result } = call([{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(40_000) }] }]);
    const error = await result.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isContextLengthError(error)).toBe(true);
    const reported = promptTokensFromError(error);
    if (reported !== undefined) expect(reported).toBe(fake.calls[0]!.tokens);
    expect(target.dialect === openaiResponses || reported !== undefined).toBe(true);
  });

  it('a well-formed prompt is answered, with its usage', async () => {
    const { fake, result } = call([
      user,
      { role: 'assistant', content: [toolCall] },
      { role: 'tool', content: [toolResult] },
    ]);
    const r = await result;
    expect(r.content).toEqual([expect.objectContaining({ type: 'text', text: 'ok' })]);
    expect(r.usage.inputTokens.total).toBe(fake.calls[0]!.tokens);
  });
});

describe.each(targets)('$name through the AI SDK', (target) => {
  it.each<Mode>(['generate', 'stream'])(
    '%sText: a loop over several windows fits, pairs, keeps the request, is billed as planned',
    async (mode) => {
      const r = await run(target, mode, { fake: { window: WINDOW, reply: readerScript(12) } });
      expect(r.text).toBe('done');
      const agent = r.fake.agentCalls();
      expect(agent).toHaveLength(13);
      for (const call of agent) expect(call.stream).toBe(mode === 'stream');
      // Unguarded, the history would be several windows: the test means something.
      expect(agent.length * 800 + LONG_ANSWER.length / 4).toBeGreaterThan(2 * WINDOW);
      // The long step was clipped in the prompt after it (a hard fit), and that clip reached the provider.
      expect(r.hardFits.length).toBeGreaterThanOrEqual(1);
      expectEveryRequestSound(r);
      expectUsageAsReported(r);
      // The spy saw each provider call in order (summarizer calls too: the default summarizer is the model).
      expect(r.prompts).toHaveLength(r.fake.calls.length);
      r.prompts.forEach((prompt, i) =>
        expect(staleReferences(prompt, r.fake.calls[i]!, r.fake.store), `request ${i}`).toEqual([]),
      );
      expect(r.events.of('error')).toEqual([]);
    },
  );
});

describe('OpenAI Responses: an edited answer is never sent as a reference to its stored original', () => {
  it.each<Mode>(['generate', 'stream'])(
    '%sText: the clipped answer goes by content; unedited answers by reference',
    async (mode) => {
      const target = targets.find((t) => t.dialect === openaiResponses)!;
      const r = await run(target, mode, { fake: { window: WINDOW, reply: readerScript(6) } });
      const long = [...r.fake.store.entries()].find(([, item]) =>
        JSON.stringify(item).includes(LONG_ANSWER.slice(0, 200)),
      )?.[0];
      expect(long).toMatch(/^msg_/);
      for (const call of r.fake.agentCalls()) expect(call.references, `request ${call.index}`).not.toContain(long);
      // The request after the long answer carries it, clipped, by content.
      expect(r.fake.agentCalls().some((c) => JSON.stringify(c.body).includes(LONG_ANSWER.slice(0, 200)))).toBe(true);
      // Unedited stored answers still go by reference (the provider's payload savings stay).
      expect(r.fake.agentCalls().some((c) => c.references.length > 0)).toBe(true);
      expectEveryRequestSound(r);
      expectUsageAsReported(r);
    },
  );
});

describe.each(targets)('$name through the AI SDK: an overflow the guard did not foresee', (target) => {
  it.each<Mode>(['generate', 'stream'])(
    '%sText: recovered with exactly one compacted retry per rejection',
    async (mode) => {
      // The guard believes the window is 12k; the provider's is 6k: prompts between the two are rejected.
      const r = await run(target, mode, { guardWindow: 12_000, fake: { window: 6_000, reply: plainScript(12) } });
      expect(r.text).toBe('done');
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
