import {
  AIMessage,
  AIMessageChunk,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  type BaseMessage,
} from '@langchain/core/messages';
import { ChatPromptTemplate } from '@langchain/core/prompts';
import { tool } from '@langchain/core/tools';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toGuardMessages } from '../../../adapters/langchain/convert.ts';
import { GuardedChatModel, withContextGuard } from '../../../adapters/langchain/with-context-guard.ts';
import { SUMMARY_OPEN } from '../../../src/compaction/placement.ts';
import { createContextGuard, resolveModelInfo } from '../../../src/index.ts';
import { pairingProblems } from '../../compaction/invariants.ts';
import { recorder } from '../../helpers.ts';
import { RecordingChatModel, type RecordedCall } from './fake-chat-model.ts';

const WINDOW = 8_000;

/** A coding session of `steps` tool calls whose outputs alone are several windows. */
function longHistory(steps: number, outputChars = 2_000): BaseMessage[] {
  const messages: BaseMessage[] = [
    new SystemMessage({ content: 'You are a careful coding agent.', id: 'sys' }),
    new HumanMessage({ content: 'Find where the config is parsed and fix the bug.', id: 'task' }),
  ];
  for (let i = 0; i < steps; i++) {
    messages.push(
      new AIMessage({
        content: `Reading file ${i} to follow the config parsing.`,
        id: `ai-${i}`,
        tool_calls: [{ id: `call-${i}`, name: 'read_file', args: { path: `src/module-${i}.ts` }, type: 'tool_call' }],
        response_metadata: { step: i },
      }),
      new ToolMessage({
        content: `// module ${i}\n${'const x = parse(config);\n'.repeat(outputChars / 25)}`,
        tool_call_id: `call-${i}`,
        id: `tool-${i}`,
        name: 'read_file',
      }),
    );
  }
  messages.push(new HumanMessage({ content: 'What did you find?', id: 'latest' }));
  return messages;
}

/** Tool pairing as providers check it, on LangChain messages. */
function langchainPairingProblems(messages: readonly BaseMessage[]): string[] {
  const problems: string[] = [];
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.type === 'tool') {
      const id = (m as ToolMessage).tool_call_id;
      if (!open.delete(id)) problems.push(`message ${i}: result ${id} without its call`);
      continue;
    }
    for (const id of open) problems.push(`call ${id} without its result`);
    open = new Set(m.type === 'ai' ? ((m as AIMessage).tool_calls ?? []).map((c) => c.id as string) : []);
  }
  for (const id of open) problems.push(`call ${id} without its result`);
  return problems;
}

/** The checks every guarded call must pass on what the model received. */
function expectCompacted(call: RecordedCall, input: readonly BaseMessage[]): void {
  const sent = call.messages;
  expect(sent.length).toBeLessThan(input.length);
  expect(langchainPairingProblems(sent)).toEqual([]);
  expect(pairingProblems(toGuardMessages(sent))).toEqual([]);
  // The system message first, as the same object; the latest request present, as the same object.
  expect(sent[0]).toBe(input[0]);
  expect(sent).toContain(input[input.length - 1]);
  // A summary stands for the older messages.
  expect(
    sent.some((m) => m instanceof HumanMessage && typeof m.content === 'string' && m.content.startsWith(SUMMARY_OPEN)),
  ).toBe(true);
  // Every message the guard did not touch is the caller's own object.
  const originals = new Set(input);
  const untouched = sent.filter((m) => originals.has(m));
  expect(untouched.length).toBeGreaterThan(1);
}

describe('withContextGuard', () => {
  it('invoke: an over-window history returns normally and the model receives a compacted list', async () => {
    const model = new RecordingChatModel({ model: 'unknown-model' });
    const events = recorder();
    // prune off: the summary step must run.
    const guarded = withContextGuard(model, { contextWindow: WINDOW, prune: false, onEvent: events.onEvent });
    const input = longHistory(20);
    const reply = await guarded.invoke(input);
    expect(reply.content).toBe('ok');

    const [call] = model.modelCalls;
    expectCompacted(call!, input);
    expect(model.inputTokensFor(call!.messages)).toBeLessThan(WINDOW);
    expect(events.last('compaction-end')).toMatchObject({ strategy: 'summary' });
    // The summary was written by the model itself, tagged so that it does not stream into the UI.
    const summaries = model.calls.filter((c) => c.summarizer);
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries[0]!.tags).toEqual(expect.arrayContaining(['nostream', 'context-guard-summarizer']));
    expect(summaries[0]!.messages.map((m) => m.type)).toEqual(['system', 'human']);
    // The real count was recorded.
    expect(events.last('usage-recorded').inputTokens).toBe(model.inputTokensFor(call!.messages));
  });

  it('keeps ids and metadata of the messages it edits (pruned tool outputs)', async () => {
    const model = new RecordingChatModel();
    // Half the window as the target, which pruning alone reaches.
    const guarded = withContextGuard(model, { contextWindow: WINDOW, target: 0.5 });
    const input = longHistory(20);
    await guarded.invoke(input);
    const sent = model.modelCalls[0]!.messages;
    const pruned = sent.filter((m): m is ToolMessage => m instanceof ToolMessage && !input.includes(m));
    expect(pruned.length).toBeGreaterThan(0);
    for (const m of pruned) {
      const original = input.find((o) => o.id === m.id) as ToolMessage;
      expect(original).toBeDefined();
      expect(m).toMatchObject({ tool_call_id: original.tool_call_id, name: 'read_file' });
      expect(String(m.content).length).toBeLessThan(String(original.content).length);
    }
    expect(langchainPairingProblems(sent)).toEqual([]);
  });

  it('stream: an over-window history streams normally, compacted, and its usage is recorded', async () => {
    const model = new RecordingChatModel({ reply: () => new AIMessage('streamed answer') });
    const events = recorder();
    const guarded = withContextGuard(model, { contextWindow: WINDOW, prune: false, onEvent: events.onEvent });
    const input = longHistory(20);
    let text = '';
    let last: AIMessageChunk | undefined;
    for await (const chunk of await guarded.stream(input)) {
      expect(chunk).toBeInstanceOf(AIMessageChunk);
      text += chunk.content as string;
      last = last ? last.concat(chunk) : chunk;
    }
    expect(text).toBe('streamed answer');
    expectCompacted(model.modelCalls[0]!, input);
    // Input tokens arrived with the first chunk, output tokens with the last: both recorded.
    const real = model.inputTokensFor(model.modelCalls[0]!.messages);
    expect(last?.usage_metadata?.input_tokens).toBe(real);
    expect(events.last('usage-recorded')).toMatchObject({
      inputTokens: real,
      outputTokens: last?.usage_metadata?.output_tokens,
    });
  });

  it('under the threshold, the model receives the very same messages', async () => {
    const model = new RecordingChatModel();
    const guarded = withContextGuard(model, { contextWindow: 128_000 });
    const input = longHistory(3);
    await guarded.invoke(input);
    const sent = model.modelCalls[0]!.messages;
    expect(sent).toHaveLength(input.length);
    sent.forEach((m, i) => expect(m).toBe(input[i]));
  });

  it('bindTools still works, and the bound tools are counted', async () => {
    const readFile = tool(async ({ path }) => `contents of ${path}`, {
      name: 'read_file',
      description: `Reads a file. ${'Use it for any file in the repository. '.repeat(40)}`,
      schema: z.object({ path: z.string().describe('Path relative to the repository root') }),
    });
    const model = new RecordingChatModel({
      reply: () =>
        new AIMessage({ content: '', tool_calls: [{ id: 'x1', name: 'read_file', args: { path: 'a.ts' } }] }),
    });
    const events = recorder();
    const guarded = withContextGuard(model, { contextWindow: 128_000, onEvent: events.onEvent });
    const bound = guarded.bindTools([readFile], { tool_choice: 'auto' });
    expect(bound).toBeInstanceOf(GuardedChatModel);
    expect(bound.guard).toBe(guarded.guard);

    const input = [new HumanMessage('Read a.ts')];
    const reply = await bound.invoke(input);
    expect(reply.tool_calls?.[0]).toMatchObject({ name: 'read_file', args: { path: 'a.ts' } });
    expect(model.calls[0]!.tools).toEqual([readFile]);
    const withTools = events.last('estimate').heuristicTokens;

    await guarded.invoke(input);
    const without = events.last('estimate').heuristicTokens;
    // The description alone is ~1,600 characters: ~400 tokens more with the tool bound.
    expect(withTools - without).toBeGreaterThan(400);
    expect(bound.tools?.[0]).toMatchObject({ name: 'read_file' });

    // Streaming through the bound model works too.
    const chunks: AIMessageChunk[] = [];
    for await (const chunk of await bound.stream(input)) chunks.push(chunk as AIMessageChunk);
    expect(chunks.reduce((a, b) => a.concat(b)).tool_calls?.[0]).toMatchObject({
      name: 'read_file',
      args: { path: 'a.ts' },
    });
  });

  it('counts tools bound before wrapping and keeps the wrapped binding’s settings', async () => {
    const model = new RecordingChatModel();
    const events = recorder();
    const tools = [
      {
        type: 'function',
        function: { name: 'search', description: 'x'.repeat(2_000), parameters: { type: 'object' } },
      },
    ];
    const guarded = withContextGuard(model.bindTools(tools), { contextWindow: 128_000, onEvent: events.onEvent });
    await guarded.invoke([new HumanMessage('hi')]);
    expect(model.calls[0]!.tools).toEqual(tools);
    expect(events.last('estimate').heuristicTokens).toBeGreaterThan(500);
    // The window and name come from the model inside the binding.
    expect(guarded.modelId).toBe('recording-model');

    const configured = withContextGuard(model.withConfig({ metadata: { team: 'a' } }), { contextWindow: 128_000 });
    const rebound = configured.bindTools([
      { type: 'function', function: { name: 'other', parameters: { type: 'object' } } },
    ]);
    await rebound.invoke([new HumanMessage('hi')]);
    expect(model.calls[1]!.tools).toEqual([
      { type: 'function', function: { name: 'other', parameters: { type: 'object' } } },
    ]);
  });

  it('batch guards each input', async () => {
    const model = new RecordingChatModel();
    const guarded = withContextGuard(model, { contextWindow: WINDOW, prune: false });
    const replies = await guarded.batch([longHistory(20), [new HumanMessage('short one')]]);
    expect(replies.map((r) => r.content)).toEqual(['ok', 'ok']);
    const calls = model.modelCalls;
    expect(calls).toHaveLength(2);
    const long = calls.find((c) => c.messages.length > 1)!;
    expect(langchainPairingProblems(long.messages)).toEqual([]);
    expect(model.inputTokensFor(long.messages)).toBeLessThan(WINDOW);
  });

  it('takes strings and prompt values', async () => {
    const model = new RecordingChatModel();
    const guarded = withContextGuard(model, { contextWindow: 128_000 });
    await guarded.invoke('hello');
    expect(model.calls[0]!.messages.map((m) => [m.type, m.content])).toEqual([['human', 'hello']]);
    const prompt = await ChatPromptTemplate.fromMessages([
      ['system', 'You are {role}.'],
      ['human', '{question}'],
    ]).formatPromptValue({ role: 'terse', question: 'why?' });
    await guarded.invoke(prompt);
    expect(model.calls[1]!.messages.map((m) => [m.type, m.content])).toEqual([
      ['system', 'You are terse.'],
      ['human', 'why?'],
    ]);
  });

  describe('windows', () => {
    const windowOf = async (guarded: GuardedChatModel) => {
      await guarded.invoke([new HumanMessage('hi')], { configurable: { thread_id: 'w' } });
      return (await guarded.guard.status('w'))?.contextWindow;
    };

    it('contextWindow first, then profile.maxInputTokens, then the registry by model name', async () => {
      expect(
        await windowOf(
          withContextGuard(new RecordingChatModel({ model: 'gpt-4o', maxInputTokens: 50_000 }), {
            contextWindow: 9_000,
          }),
        ),
      ).toBe(9_000);
      expect(
        await windowOf(withContextGuard(new RecordingChatModel({ model: 'gpt-4o', maxInputTokens: 50_000 }))),
      ).toBe(50_000);
      expect(await windowOf(withContextGuard(new RecordingChatModel({ model: 'gpt-4o' })))).toBe(
        resolveModelInfo('gpt-4o')?.contextWindow,
      );
      // The user's `models` entry for the model beats its profile.
      expect(
        await windowOf(
          withContextGuard(new RecordingChatModel({ model: 'gpt-4o-2024-08-06', maxInputTokens: 50_000 }), {
            models: { 'gpt-4o': 30_000 },
          }),
        ),
      ).toBe(30_000);
    });

    it('a shared guard without a window of its own uses the model profile too, unless its models name the model', async () => {
      expect(
        await windowOf(
          withContextGuard(new RecordingChatModel({ model: 'acme-unlisted', maxInputTokens: 12_000 }), {
            guard: createContextGuard(),
          }),
        ),
      ).toBe(12_000);
      expect(
        await windowOf(
          withContextGuard(new RecordingChatModel({ model: 'gpt-4o', maxInputTokens: 50_000 }), {
            guard: createContextGuard({ models: { 'gpt-4o': 30_000 } }),
          }),
        ),
      ).toBe(30_000);
      expect(
        await windowOf(
          withContextGuard(new RecordingChatModel({ model: 'gpt-4o', maxInputTokens: 50_000 }), {
            guard: createContextGuard({ contextWindow: 9_000 }),
          }),
        ),
      ).toBe(9_000);
    });

    it('a profile window below the minimum (a placeholder) is no window: the registry decides, and wrapping never throws', async () => {
      expect(await windowOf(withContextGuard(new RecordingChatModel({ model: 'gpt-4o', maxInputTokens: 500 })))).toBe(
        resolveModelInfo('gpt-4o')?.contextWindow,
      );
      expect(
        await windowOf(
          withContextGuard(new RecordingChatModel({ model: 'gpt-4o', maxInputTokens: 500 }), {
            guard: createContextGuard(),
          }),
        ),
      ).toBe(resolveModelInfo('gpt-4o')?.contextWindow);
    });

    it('an unknown model without a profile is guarded with the fallback window, reported, never given 4,097 tokens', async () => {
      const events = recorder();
      const model = new RecordingChatModel({ model: 'my-local-llm' });
      const guarded = withContextGuard(model, { onEvent: events.onEvent, sessionId: 'local' });
      const input = longHistory(10);
      await guarded.invoke(input);
      expect(events.of('config-error')).toEqual([]);
      expect(events.last('window-fallback')).toMatchObject({ modelId: 'my-local-llm', contextWindow: 32_000 });
      expect(events.last('estimate')).toMatchObject({ contextWindow: 32_000 });
      expect(await guarded.guard.status('local')).toMatchObject({ contextWindow: 32_000 });
    });
  });

  describe('sessions', () => {
    it('thread_id, then the sessionId option, else derived from the conversation start', async () => {
      const model = new RecordingChatModel();
      const events = recorder();
      const guard = createContextGuard({ contextWindow: 128_000, onEvent: events.onEvent });
      const byThread = withContextGuard(model, { guard });
      await byThread.invoke([new HumanMessage('a')], { configurable: { thread_id: 'thread-1' } });
      expect(events.last('estimate').sessionId).toBe('thread-1');

      const fixed = withContextGuard(model, { guard, sessionId: 'fixed' });
      await fixed.invoke([new HumanMessage('a')], { configurable: { thread_id: 'thread-1' } });
      expect(events.last('estimate').sessionId).toBe('fixed');

      const fromConfig = withContextGuard(model, {
        guard,
        sessionId: (config) => String(config.metadata?.['user'] ?? '') || undefined,
      });
      await fromConfig.invoke([new HumanMessage('a')], { metadata: { user: 'u1' } });
      expect(events.last('estimate').sessionId).toBe('u1');
      await fromConfig.invoke([new HumanMessage('a')]);
      expect(events.last('estimate').sessionId).toMatch(/^auto:/);

      const derived = withContextGuard(model, { guard });
      await derived.invoke([new SystemMessage('s'), new HumanMessage('first conversation')]);
      const one = events.last('estimate').sessionId;
      await derived.invoke([
        new SystemMessage('s'),
        new HumanMessage('first conversation'),
        new AIMessage('ok'),
        new HumanMessage('more'),
      ]);
      expect(events.last('estimate').sessionId).toBe(one);
      await derived.invoke([new SystemMessage('s'), new HumanMessage('another conversation')]);
      expect(events.last('estimate').sessionId).not.toBe(one);
    });

    it('calibrates from each response: the next estimate anchors on the real count', async () => {
      const model = new RecordingChatModel({ tokensPerChar: 0.5, overheadTokens: 300 });
      const events = recorder();
      const guarded = withContextGuard(model, { contextWindow: 128_000, onEvent: events.onEvent });
      const input = longHistory(4);
      const reply = await guarded.invoke(input, { configurable: { thread_id: 'cal' } });
      expect(events.last('estimate').method).toBe('default');
      const next = [...input, reply, new HumanMessage('Go on.')];
      await guarded.invoke(next, { configurable: { thread_id: 'cal' } });
      const estimate = events.last('estimate');
      expect(estimate.method).toBe('anchored');
      const real = model.inputTokensFor(next);
      expect(Math.abs(estimate.tokens - real) / real).toBeLessThan(0.05);
    });
  });

  it('a failing summarizer falls back to a mechanical summary: the call still returns, no pair broken', async () => {
    const model = new RecordingChatModel();
    const events = recorder();
    const guarded = withContextGuard(model, {
      contextWindow: WINDOW,
      prune: false,
      onEvent: events.onEvent,
      summarizer: () => {
        throw new Error('summarizer down');
      },
    });
    const input = longHistory(20);
    await expect(guarded.invoke(input)).resolves.toMatchObject({ content: 'ok' });
    expect(events.of('summarizer-failed').length).toBeGreaterThan(0);
    expectCompacted(model.modelCalls[0]!, input);
  });

  it('exposes the wrapped model’s profile and a descriptive name', () => {
    const guarded = withContextGuard(new RecordingChatModel({ maxInputTokens: 1234 }), { contextWindow: 1_000 });
    expect(guarded.profile).toEqual({ maxInputTokens: 1234 });
    expect(guarded.getName()).toBe('ContextGuard(RecordingChatModel)');
  });
});

describe('withContextGuard: the summarizer call', () => {
  it('runs in the caller’s context (its handlers see it, tagged) without the call’s model options', async () => {
    const model = new RecordingChatModel();
    const guarded = withContextGuard(model, { contextWindow: WINDOW, prune: false });
    const starts: string[][] = [];
    const handler = {
      handleChatModelStart: (
        _llm: unknown,
        _messages: unknown,
        _runId: string,
        _parent?: string,
        _extra?: unknown,
        tags?: string[],
      ) => {
        starts.push(tags ?? []);
      },
    };
    const tools = [{ type: 'function', function: { name: 'search', parameters: { type: 'object' } } }];
    await guarded.invoke(longHistory(20), { callbacks: [handler], tools, tags: ['my-app'] });
    const summaries = model.calls.filter((c) => c.summarizer);
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.every((c) => c.tools === undefined)).toBe(true);
    expect(model.modelCalls[0]!.tools).toEqual(tools);
    expect(starts.filter((t) => t.includes('context-guard-summarizer'))).toHaveLength(summaries.length);
    // The caller's tags go along, for its traces.
    expect(starts.filter((t) => t.includes('my-app'))).toHaveLength(summaries.length + 1);
  });
});
