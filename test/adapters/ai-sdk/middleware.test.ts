// End-to-end tests of contextGuardMiddleware (ai 7) through the real generateText / streamText
// tool loops, with a scripted MockLanguageModelV4 playing the provider (see mock.ts). Each test
// checks what the provider would actually receive, since that is what the issue promises:
// prompts under the window, tool pairs intact, no `contextGuard` provider options, usage recorded
// per call, sessions kept apart, one compacted retry after an overflow rejection.
import { APICallError, type LanguageModelV4Middleware } from '@ai-sdk/provider';
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel, type ModelMessage, type ToolSet } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { compactTool, contextGuardMiddleware, deriveSessionId } from '../../../adapters/ai-sdk/index.ts';
import type { ContextGuardOptions, GuardMessage, Summarizer } from '../../../src/index.ts';
import { pairingProblems } from '../../compaction/invariants.ts';
import { recorder } from '../../helpers.ts';
import {
  arrayStream,
  fileText,
  hasSummary,
  isSummarizerCall,
  promptShapeProblems,
  readerScript,
  scriptedModel,
  textOf,
  tokensOf,
  type CallOptions,
  type ScriptOptions,
  readHistory,
  overflowError,
  OVERFLOW_MESSAGE,
} from './mock.ts';
import { hostileCases } from './hostile-cases.ts';

const WINDOW = 8_000;
const SYSTEM = 'You are a coding agent. Read the files you need, then answer.';
const REQUEST = 'Read every file of the project and summarize its architecture.';

const readTool = (chars = 3_000) =>
  tool({
    description: 'Read a file of the repository',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => fileText(path, chars),
  });

/** A mock model wrapped by the guard, with every guard event recorded. */
function setup(
  script: ScriptOptions,
  options: { middleware?: LanguageModelV4Middleware[] } & ContextGuardOptions = {},
) {
  const { middleware = [], ...guardOptions } = options;
  const mock = scriptedModel(MockLanguageModelV4, script);
  const events = recorder();
  const guard = contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent, ...guardOptions });
  // Middlewares listed first run first (outermost): test spies go before the guard.
  const model = wrapLanguageModel({ model: mock.model, middleware: [...middleware, guard] });
  return { mock, events, guard, model };
}

type Mode = 'generate' | 'stream';

/** One agent run through generateText or streamText, returning the steps either way. */
async function run(mode: Mode, args: Parameters<typeof generateText>[0]) {
  const common = { maxRetries: 0, ...args } as Parameters<typeof generateText>[0];
  if (mode === 'generate') {
    const r = await generateText(common);
    return { text: r.text, steps: r.steps, messages: r.responseMessages };
  }
  const errors: unknown[] = [];
  const r = streamText({
    ...(common as Parameters<typeof streamText>[0]),
    onError: ({ error }) => void errors.push(error),
  });
  await r.consumeStream();
  if (errors.length > 0) throw errors[0];
  return { text: await r.text, steps: await r.steps, messages: await r.responseMessages };
}

/** The prompt as the guard's message model (V4 prompts have that shape for roles, tool calls and results). */
const asGuard = (prompt: CallOptions['prompt']) => prompt as unknown as GuardMessage[];

// -------------------------------------------------------------------------------------------------
// The acceptance loop: 40 tool steps of ~3k characters each through an 8k window
// -------------------------------------------------------------------------------------------------

describe.each<Mode>(['generate', 'stream'])(
  'a 40-step tool loop through %sText (8k window, ~3k-char tool results)',
  (mode) => {
    it('keeps every prompt the provider receives under the window, with tool pairs intact', async () => {
      const { mock, events, model } = setup({ reply: readerScript(40) });
      const r = await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool() },
        stopWhen: stepCountIs(45),
      });

      expect(r.text).toBe('done');
      expect(r.steps).toHaveLength(41);
      const agent = mock.agentCalls();
      expect(agent).toHaveLength(41);
      // Unguarded, the history would be far over the window: the test is meaningful.
      expect(tokensOf(r.steps.map((s) => s.content))).toBeGreaterThan(4 * WINDOW);

      for (const [i, call] of agent.entries()) {
        expect(call.kind).toBe(mode);
        expect(call.tokens, `prompt ${i}`).toBeLessThanOrEqual(WINDOW);
        expect(pairingProblems(asGuard(call.options.prompt)), `prompt ${i}`).toEqual([]);
        expect(promptShapeProblems(call.options.prompt), `prompt ${i}`).toEqual([]);
        // System message first and unchanged; the tools are still offered.
        expect(call.options.prompt[0]).toEqual({ role: 'system', content: SYSTEM });
        expect(call.options.tools?.map((t) => (t as { name: string }).name)).toEqual(['read']);
      }
      // The latest step is always there: the last message of each prompt is the newest tool result.
      for (const call of agent.slice(1)) expect(call.options.prompt.at(-1)?.role).toBe('tool');

      expect(events.of('compaction-end').length).toBeGreaterThanOrEqual(2);
      expect(events.of('error')).toEqual([]);
    });

    it('runs the default summarizer (the wrapped model) once per compaction, not once per step', async () => {
      const { mock, events, model } = setup({ reply: readerScript(40) });
      await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool() },
        stopWhen: stepCountIs(45),
      });

      // Group the summarizer calls by the agent call they preceded: a compaction runs inside that
      // call's transformParams, before the provider sees the compacted prompt.
      const groups: number[] = [];
      let pending = 0;
      for (const call of mock.received) {
        if (call.summarizer) pending++;
        else {
          groups.push(pending);
          pending = 0;
        }
      }
      expect(pending).toBe(0);
      const compactions = events.of('compaction-end');
      const summarizing = compactions.filter((c) => c.summarizerCalls > 0);
      expect(summarizing.length).toBeGreaterThanOrEqual(1);
      // Every summarizer call belongs to a compaction, and the steps after it re-apply the stored
      // summary without calling the summarizer again.
      expect(groups.filter((n) => n > 0)).toEqual(summarizing.map((c) => c.summarizerCalls));
      expect(mock.summarizerCalls().length).toBeLessThan(groups.length / 4);
      // The default summarizer calls the base model directly: it is not guarded (no estimate for it),
      // its usage is not recorded, and it is a plain generate call even inside streamText.
      for (const call of mock.summarizerCalls()) {
        expect(call.kind).toBe('generate');
        expect(call.tokens).toBeLessThanOrEqual(WINDOW);
      }
      expect(events.of('estimate')).toHaveLength(groups.length);
      // Once summarized, later prompts carry the summary.
      const firstSummary = mock.agentCalls().findIndex((c) => hasSummary(c.options.prompt));
      expect(firstSummary).toBeGreaterThan(0);
    });

    it('uses an explicit summarizer instead of the model, once per compaction', async () => {
      const summarizer = vi.fn<Summarizer>(
        async ({ messages }) => `## Task state\nRead ${messages.length} messages of files.`,
      );
      const { mock, events, model } = setup({ reply: readerScript(40) }, { summarizer });
      await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool() },
        stopWhen: stepCountIs(45),
      });

      expect(mock.summarizerCalls()).toEqual([]);
      const calls = events.of('compaction-end').reduce((n, c) => n + c.summarizerCalls, 0);
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(summarizer).toHaveBeenCalledTimes(calls);
      for (const [input] of summarizer.mock.calls) expect(input.signal).toBeInstanceOf(AbortSignal);
      // Its words are what the later prompts carry.
      expect(
        mock
          .agentCalls()
          .some((c) => c.options.prompt.some((m) => /Read \d+ messages of files/.test(textOf(m.content)))),
      ).toBe(true);
    });

    it("records each call's own usage (not the multi-step total)", async () => {
      const { mock, events, model } = setup({ reply: readerScript(6) });
      const r = await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool(400) },
        stopWhen: stepCountIs(10),
      });

      const recorded = events.of('usage-recorded');
      expect(recorded.map((e) => e.inputTokens)).toEqual(mock.agentCalls().map((c) => c.tokens));
      expect(recorded.every((e) => e.outputTokens !== undefined && e.outputTokens > 0)).toBe(true);
      const total = r.steps.reduce((n, s) => n + (s.usage.inputTokens ?? 0), 0);
      expect(Math.max(...recorded.map((e) => e.inputTokens))).toBeLessThan(total);
      expect(events.of('usage-ignored')).toEqual([]);
    });
  },
);

describe.each<Mode>(['generate', 'stream'])('other loop shapes through %sText', (mode) => {
  it('parallel tool calls, reasoning and JSON tool outputs: under the window, pairs intact', async () => {
    const { mock, events, model } = setup({
      reply: (_o, index) =>
        index < 20
          ? {
              reasoning: `Step ${index}: I need three more files. `.repeat(8),
              toolCalls: [0, 1, 2].map((k) => ({
                toolName: k === 2 ? 'stat' : 'read',
                input: { path: `dir${index}/f${k}.ts` },
              })),
            }
          : { text: 'done' },
    });
    const stat = tool({
      inputSchema: z.object({ path: z.string() }),
      // An object result: the SDK sends it as a `json` tool output.
      execute: async ({ path }) => ({
        path,
        size: 1234,
        lines: Array.from({ length: 40 }, (_, i) => `line ${i} of ${path}`),
      }),
    });
    const r = await run(mode, {
      model,
      instructions: SYSTEM,
      prompt: REQUEST,
      tools: { read: readTool(1_200), stat },
      stopWhen: stepCountIs(25),
    });

    expect(r.text).toBe('done');
    expect(events.of('compaction-end').length).toBeGreaterThanOrEqual(2);
    for (const [i, call] of mock.agentCalls().entries()) {
      expect(call.tokens, `prompt ${i}`).toBeLessThanOrEqual(WINDOW);
      expect(pairingProblems(asGuard(call.options.prompt)), `prompt ${i}`).toEqual([]);
      expect(promptShapeProblems(call.options.prompt), `prompt ${i}`).toEqual([]);
    }
    expect(events.of('error')).toEqual([]);
  });

  it('counts the tool definitions: a large tool set still leaves every prompt under the window', async () => {
    const { mock, events, model } = setup({ reply: readerScript(30) });
    // Twelve tools with long descriptions and schemas: about 2.5k tokens that every call carries.
    const tools: ToolSet = { read: readTool() };
    for (let i = 0; i < 12; i++) {
      tools[`tool_${i}`] = tool({
        description:
          `Tool number ${i}. `.repeat(30) +
          'It does something quite specific that needs a long explanation. '.repeat(6),
        inputSchema: z.object({
          path: z.string().describe('A path inside the repository, relative to its root'),
          mode: z.enum(['fast', 'thorough', 'exhaustive']),
        }),
        execute: async () => 'ok',
      });
    }
    await run(mode, { model, instructions: SYSTEM, prompt: REQUEST, tools, stopWhen: stepCountIs(35) });

    expect(tokensOf(mock.agentCalls()[0]!.options.tools)).toBeGreaterThan(2_500);
    for (const [i, call] of mock.agentCalls().entries()) {
      expect(call.tokens, `prompt ${i}`).toBeLessThanOrEqual(WINDOW);
      expect(pairingProblems(asGuard(call.options.prompt)), `prompt ${i}`).toEqual([]);
    }
    expect(events.of('error')).toEqual([]);
  });

  it('a summarizer that hangs is aborted at the timeout and the mechanical digest is used', async () => {
    const signals: AbortSignal[] = [];
    const { mock, events, model } = setup(
      {
        reply: readerScript(25),
        // The default summarizer (the wrapped model) never answers unless aborted.
        summary: () => 'never used',
      },
      { summarizerTimeoutMs: 50 },
    );
    const original = mock.model.doGenerate;
    mock.model.doGenerate = async (options) => {
      if (!isSummarizerCall(options as CallOptions)) return original(options);
      signals.push(options.abortSignal!);
      return new Promise((_resolve, reject) =>
        options.abortSignal?.addEventListener('abort', () => reject(options.abortSignal?.reason)),
      );
    };
    const r = await run(mode, {
      model,
      instructions: SYSTEM,
      prompt: REQUEST,
      tools: { read: readTool() },
      stopWhen: stepCountIs(30),
    });

    expect(r.text).toBe('done');
    expect(signals.length).toBeGreaterThanOrEqual(1);
    for (const s of signals) expect(s.aborted).toBe(true);
    expect(events.of('summarizer-failed').map((e) => e.reason)).toContain('timeout');
    expect(events.of('compaction-end').some((e) => e.strategy === 'mechanical' || e.steps.includes('mechanical'))).toBe(
      true,
    );
    for (const call of mock.agentCalls()) expect(call.tokens).toBeLessThanOrEqual(WINDOW);
  });
});

describe('usage shapes', () => {
  const call = {
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    providerOptions: { contextGuard: { sessionId: 'u' } },
  } as never;
  const result = (inputTokens: object) => ({
    content: [{ type: 'text', text: 'ok' }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: { inputTokens, outputTokens: { total: 5, text: 5, reasoning: 0 } },
    warnings: [],
  });

  it('takes the total input tokens, cached included, and adds up the parts when the total is missing', async () => {
    const events = recorder();
    const inputs = [
      { total: 1500, noCache: 200, cacheRead: 1300, cacheWrite: 0 },
      { total: undefined, noCache: 900, cacheRead: 300, cacheWrite: 100 },
    ];
    const base = new MockLanguageModelV4({ doGenerate: inputs.map(result) as never });
    const model = wrapLanguageModel({
      model: base,
      middleware: contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent }),
    });
    await model.doGenerate(call);
    await model.doGenerate(call);
    expect(events.of('usage-recorded').map((e) => e.inputTokens)).toEqual([1500, 1300]);
  });

  it('ignores a missing count rather than failing the call', async () => {
    const events = recorder();
    const base = new MockLanguageModelV4({
      doGenerate: result({
        total: undefined,
        noCache: undefined,
        cacheRead: undefined,
        cacheWrite: undefined,
      }) as never,
    });
    const model = wrapLanguageModel({
      model: base,
      middleware: contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent }),
    });
    const r = await generateText({ model, prompt: 'hi' });
    expect(r.text).toBe('ok');
    expect(events.of('usage-recorded')).toEqual([]);
    expect(events.of('usage-ignored')).toHaveLength(1);
  });
});

describe.each<Mode>(['generate', 'stream'])('a chat host that resends the whole history each turn (%sText)', (mode) => {
  it('summarizes once per compaction across turns, and keeps the compacted prefix byte-stable', async () => {
    // Each turn: the model reads three files, then answers.
    const { mock, events, model } = setup({
      reply: (_o, index) =>
        index % 4 < 3
          ? { toolCalls: [{ toolName: 'read', input: { path: `f${index}.ts` } }] }
          : { text: `answer ${index}` },
    });
    const history: ModelMessage[] = [];
    for (let turn = 0; turn < 10; turn++) {
      history.push({ role: 'user', content: `Question ${turn}: what does the next part of the code do?` });
      const r = await run(mode, {
        model,
        instructions: SYSTEM,
        messages: history,
        tools: { read: readTool() },
        stopWhen: stepCountIs(6),
      });
      expect(r.text).toMatch(/^answer/);
      history.push(...r.messages);
    }
    const agent = mock.agentCalls();
    expect(agent).toHaveLength(40);
    // One session for the whole chat (derived from its stable start), under the window throughout.
    expect(new Set(events.of('estimate').map((e) => e.sessionId)).size).toBe(1);
    for (const call of agent) {
      expect(call.tokens).toBeLessThanOrEqual(WINDOW);
      expect(pairingProblems(asGuard(call.options.prompt))).toEqual([]);
    }
    const summarizing = events.of('compaction-end').filter((c) => c.summarizerCalls > 0);
    expect(summarizing.length).toBeGreaterThanOrEqual(1);
    expect(mock.summarizerCalls()).toHaveLength(summarizing.reduce((n, c) => n + c.summarizerCalls, 0));
    // Which calls compacted: each call emits one `estimate`, and its compaction events follow it.
    const compactedCalls = new Set<number>();
    let call = -1;
    for (const e of events.events) {
      if (e.type === 'estimate') call++;
      if (e.type === 'compaction-end') compactedCalls.add(call);
    }
    // Between two compactions, every prompt starts with the very same bytes up to and including
    // the summary (provider prompt caches keep hitting), across the host's separate calls.
    let compared = 0;
    for (let i = 1; i < agent.length; i++) {
      const [prev, next] = [agent[i - 1]!.options.prompt, agent[i]!.options.prompt];
      const at = prev.findIndex((m) => hasSummary([m]));
      if (at < 0 || compactedCalls.has(i)) continue;
      compared++;
      expect(JSON.stringify(next.slice(0, at + 1)), `call ${i}`).toBe(JSON.stringify(prev.slice(0, at + 1)));
    }
    expect(compared).toBeGreaterThan(5);
  });
});

describe('cancellation', () => {
  it("aborts a running summarization when the caller's abortSignal aborts", async () => {
    // The default summarizer (the wrapped model) hangs until its signal aborts; the guard would
    // time it out after 2 s (60 s by default). The caller gives up after 50 ms.
    const summarizerSignals: AbortSignal[] = [];
    const { mock, model } = setup({ reply: () => ({ text: 'ok' }) }, { summarizerTimeoutMs: 2_000 });
    const original = mock.model.doGenerate;
    mock.model.doGenerate = async (options) => {
      if (!isSummarizerCall(options as CallOptions)) return original(options);
      summarizerSignals.push(options.abortSignal!);
      return new Promise((_resolve, reject) =>
        options.abortSignal?.addEventListener('abort', () => reject(options.abortSignal?.reason)),
      );
    };
    // Long text turns, which only a summary can shrink (nothing to prune).
    const messages: ModelMessage[] = [{ role: 'user', content: REQUEST }];
    for (let i = 0; i < 12; i++)
      messages.push(
        { role: 'assistant', content: fileText(`f${i}.ts`, 2_500) },
        { role: 'user', content: `Go on (${i}).` },
      );

    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user pressed stop')), 50);
    const started = Date.now();
    const outcome = await generateText({
      model,
      instructions: SYSTEM,
      messages,
      abortSignal: controller.signal,
      maxRetries: 0,
    }).then(
      () => 'resolved',
      (e: unknown) => `rejected: ${(e as Error).message}`,
    );
    const elapsed = Date.now() - started;

    expect(summarizerSignals.length).toBeGreaterThanOrEqual(1); // a summarization was running
    // The stop reaches the summarizer and the call ends promptly, not after the summarizer timeout.
    expect(elapsed, outcome).toBeLessThan(1_000);
    expect(outcome).toBe('rejected: user pressed stop');
  }, 10_000);
});

// -------------------------------------------------------------------------------------------------
// Streaming: chunks pass as they come; usage only from a `finish` part
// -------------------------------------------------------------------------------------------------

describe('streaming', () => {
  const callOptions = (text: string) =>
    ({
      prompt: [{ role: 'user', content: [{ type: 'text', text }] }],
      providerOptions: { contextGuard: { sessionId: 'direct' } },
    }) as never;

  it('passes every part through as the same object, holding back only the leading metadata until content, and records usage at finish', async () => {
    // A provider stream the test feeds by hand.
    let feed!: ReadableStreamDefaultController<object>;
    const source = new ReadableStream<object>({ start: (c) => void (feed = c) });
    const { events, model } = setup({ reply: () => ({ text: 'hello world' }), stream: () => source });

    const { stream } = await model.doStream(callOptions('hi'));
    const reader = stream.getReader();
    // The parts before any content wait for the first content part (a rejection may still follow them).
    const leading: object[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: 'resp_1' },
    ];
    const textStart = { type: 'text-start', id: '1' };
    for (const part of [...leading, textStart]) feed.enqueue(part);
    for (const part of [...leading, textStart]) expect((await reader.read()).value).toBe(part);
    for (const part of [
      { type: 'text-delta', id: '1', delta: 'hello' },
      { type: 'text-end', id: '1' },
    ]) {
      feed.enqueue(part);
      // From the first content part on, each part comes out before the next one exists: nothing waits for the finish
      // part.
      expect((await reader.read()).value).toBe(part);
    }
    await Promise.resolve();
    expect(events.of('usage-recorded')).toEqual([]);

    const finish = {
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 42, noCache: 40, cacheRead: 2, cacheWrite: 0 },
        outputTokens: { total: 3, text: 3, reasoning: 0 },
      },
    };
    feed.enqueue(finish);
    feed.close();
    expect((await reader.read()).value).toBe(finish);
    expect((await reader.read()).done).toBe(true);
    await vi.waitFor(() => expect(events.of('usage-recorded')).toHaveLength(1));
    expect(events.last('usage-recorded')).toMatchObject({ sessionId: 'direct', inputTokens: 42, outputTokens: 3 });
  }, 2_000); // a middleware that held parts back would hang here

  it('a caller that cancels while an in-stream overflow is being retried: the retried call is never sent', async () => {
    let retriedCancelled = false;
    const overflowPart = {
      type: 'error',
      error: { message: 'Your input exceeds the context window of this model.', code: 'context_length_exceeded' },
    };
    let calls = 0;
    const { events, model } = setup({
      reply: () => ({ text: 'hello' }),
      stream: () =>
        calls++ === 0
          ? new ReadableStream({
              start: (c) =>
                void (c.enqueue({ type: 'stream-start', warnings: [] }), c.enqueue(overflowPart), c.close()),
            })
          : new ReadableStream({
              start: (c) => void c.enqueue({ type: 'stream-start', warnings: [] }),
              cancel: () => void (retriedCancelled = true),
            }),
    });
    const { stream } = await model.doStream(callOptions('hi'));
    const reader = stream.getReader();
    const read = reader.read();
    await reader.cancel('the user left');
    expect((await read).done).toBe(true);
    // The rejection is still recognized; the retry it would have led to is dropped (see cancel-retry.test.ts).
    await vi.waitFor(() => expect(events.of('overflow-retry')).toHaveLength(1));
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(1);
    expect(retriedCancelled).toBe(false);
  });

  it('a finish part whose usage throws when read passes through, and nothing is recorded', async () => {
    const usage = Object.defineProperty({}, 'inputTokens', {
      get() {
        throw new Error('usage getter');
      },
    });
    const finish = { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage };
    const parts = [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: '1' },
      { type: 'text-delta', id: '1', delta: 'hi' },
      { type: 'text-end', id: '1' },
      finish,
    ];
    const { events, model } = setup({ reply: () => ({ text: 'hi' }), stream: () => arrayStream(parts) });
    const { stream } = await model.doStream(callOptions('hi'));
    const received: unknown[] = [];
    for await (const part of stream as unknown as AsyncIterable<unknown>) received.push(part);
    expect(received).toEqual(parts);
    expect(received.at(-1)).toBe(finish);
    await new Promise((r) => setTimeout(r, 10));
    expect(events.of('usage-recorded')).toEqual([]);
  });

  it('records nothing when the stream errors before its finish part', async () => {
    const { events, model, guard } = setup({
      reply: () => ({ text: 'partial answer' }),
      stream: (parts) =>
        new ReadableStream({
          start(c) {
            for (const p of parts.slice(0, 3)) c.enqueue(p); // stream-start, text-start, a delta
            c.error(new Error('socket hang up'));
          },
        }),
    });
    await expect(
      run('stream', { model, prompt: 'hi', providerOptions: { contextGuard: { sessionId: 's' } } }),
    ).rejects.toThrow('socket hang up');
    await new Promise((r) => setTimeout(r, 10));
    expect(events.of('usage-recorded')).toEqual([]);
    // The status still shows the estimate made before the call, not a provider count.
    expect((await guard.guard.status('s'))?.source).toBe('estimate');
  });

  it('records nothing when the caller aborts before the finish part', async () => {
    const controller = new AbortController();
    const { events, model } = setup({
      reply: () => ({ text: 'a long answer' }),
      // Delivers the beginning, then stalls (a slow provider) until the caller gives up.
      stream: (parts, options) =>
        new ReadableStream({
          start(c) {
            for (const p of parts.slice(0, 3)) c.enqueue(p);
            options.abortSignal?.addEventListener('abort', () => c.error(options.abortSignal?.reason));
          },
        }),
    });
    const r = streamText({
      model,
      prompt: 'hi',
      abortSignal: controller.signal,
      maxRetries: 0,
      providerOptions: { contextGuard: { sessionId: 's' } },
      onError: () => {},
    });
    for await (const delta of r.textStream) {
      expect(delta).toBe('a l');
      controller.abort();
    }
    await new Promise((r) => setTimeout(r, 10));
    expect(events.of('usage-recorded')).toEqual([]);
    expect(events.of('estimate')).toHaveLength(1);
  }, 2_000);
});

// -------------------------------------------------------------------------------------------------
// Sessions
// -------------------------------------------------------------------------------------------------

describe('sessions', () => {
  // Two chats of one app: the same system prompt, different first requests. Two providers in one:
  // conversation B's "tokenizer" is three times denser than A's, so a guard that mixed their
  // calibration would misjudge one of them by far.
  const REQUEST_A = 'Project A: read every file and summarize the architecture.';
  const REQUEST_B = 'Project B: read every file and summarize the architecture.';
  const isB = (options: CallOptions) =>
    textOf(options.prompt.find((m) => m.role === 'user')?.content).startsWith('Project B');
  /** Yields to the event loop, so that the two concurrent loops really interleave. */
  const tick = () => new Promise((r) => setTimeout(r, 0));
  const slowRead = (chars: number) =>
    tool({
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => (await tick(), fileText(path, chars)),
    });

  it.each<Mode>(['generate', 'stream'])(
    'keeps two interleaved conversations apart by derived session id (%s)',
    async (mode) => {
      const order: string[] = [];
      const { mock, events, guard, model } = setup({
        ratio: (options) => (isB(options) ? 3.5 : 1.2),
        reply: (options) => {
          const who = isB(options) ? 'B' : 'A';
          const step = order.filter((o) => o === who).length;
          order.push(who);
          return step < 16 ? { toolCalls: [{ toolName: 'read', input: { path: `f${step}.ts` } }] } : { text: 'done' };
        },
      });
      await Promise.all([
        run(mode, {
          model,
          instructions: SYSTEM,
          prompt: REQUEST_A,
          tools: { read: slowRead(3_000) },
          stopWhen: stepCountIs(20),
        }),
        run(mode, {
          model,
          instructions: SYSTEM,
          prompt: REQUEST_B,
          tools: { read: slowRead(100) },
          stopWhen: stepCountIs(20),
        }),
      ]);
      // The calls did interleave.
      expect(order.join('')).not.toMatch(/^A+B+$|^B+A+$/);

      const sessions = [...new Set(events.of('estimate').map((e) => e.sessionId))];
      expect(sessions).toHaveLength(2);
      for (const id of sessions) expect(id).toMatch(/^auto:/);
      // A (large outputs) compacts, B (small) never does, and A's summaries never reach B.
      const compacted = new Set(events.of('compaction-end').map((e) => e.sessionId));
      expect(compacted.size).toBe(1);
      const [idA] = [...compacted];
      const idB = sessions.find((s) => s !== idA)!;
      const bCalls = mock.agentCalls().filter((c) => isB(c.options));
      expect(bCalls).toHaveLength(17);
      for (const c of bCalls) expect(hasSummary(c.options.prompt)).toBe(false);
      for (const c of mock.agentCalls()) expect(c.tokens).toBeLessThanOrEqual(WINDOW);

      // Each session is calibrated by its own provider counts: after a few calls both estimates are
      // close to what their provider reported, although the two providers differ threefold.
      for (const id of [idA, idB]) {
        const recorded = events.of('usage-recorded').filter((e) => e.sessionId === id);
        expect(recorded).toHaveLength(17);
        const settled = recorded.slice(4); // after the first calls
        const typical = settled.map((e) => Math.abs(e.relativeError)).sort((a, b) => a - b)[
          Math.floor(settled.length / 2)
        ]!;
        expect(typical, `median estimate error of ${id}`).toBeLessThan(0.1);
      }
      const [a, b] = await Promise.all([guard.guard.status(idA!), guard.guard.status(idB)]);
      expect(a?.source).toBe('provider');
      expect(b?.source).toBe('provider');
    },
  );

  it('keeps conversations apart by providerOptions.contextGuard.sessionId, even when they start alike', async () => {
    const steps = { generate: 0, stream: 0 };
    const { mock, events, guard, model } = setup({
      reply: (_options) => {
        // The explicit id is stripped before the provider: tell the runs apart by call kind.
        const step = steps[mock.received.at(-1)!.kind]++;
        return step < 12 ? { toolCalls: [{ toolName: 'read', input: { path: `f${step}.ts` } }] } : { text: 'done' };
      },
    });
    // Same system prompt and first message: a derived id would be the same for both; only the
    // explicit ids tell them apart. A reads large files, B small ones.
    await Promise.all([
      run('generate', {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: slowRead(3_000) },
        providerOptions: { contextGuard: { sessionId: 'chat-a' } },
        stopWhen: stepCountIs(20),
      }),
      run('stream', {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: slowRead(300) },
        providerOptions: { contextGuard: { sessionId: 'chat-b' } },
        stopWhen: stepCountIs(20),
      }),
    ]);
    const sessions = new Set(events.events.map((e) => ('sessionId' in e ? e.sessionId : undefined)));
    expect(sessions).toEqual(new Set(['chat-a', 'chat-b']));
    expect(new Set(events.of('compaction-end').map((e) => e.sessionId))).toEqual(new Set(['chat-a']));
    expect(events.of('usage-recorded').filter((e) => e.sessionId === 'chat-b')).toHaveLength(13);
    // B's prompts (the streamed ones) are never compacted.
    for (const c of mock.agentCalls().filter((c) => c.kind === 'stream'))
      expect(hasSummary(c.options.prompt)).toBe(false);
    expect((await guard.guard.status('chat-a'))?.source).toBe('provider');
    expect((await guard.guard.status('chat-b'))?.source).toBe('provider');
  });
});

// -------------------------------------------------------------------------------------------------
// Provider options
// -------------------------------------------------------------------------------------------------

describe('session id of a call', () => {
  const prompt = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }];
  const reply = {
    content: [{ type: 'text', text: 'ok' }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: { inputTokens: { total: 9 } },
    warnings: [],
  };

  it('providerOptions.contextGuard.sessionId: a string or a number (as LangGraph thread ids are); anything else is derived', async () => {
    const events = recorder();
    const base = new MockLanguageModelV4({ doGenerate: reply as never });
    const model = wrapLanguageModel({
      model: base,
      middleware: contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent }),
    });
    for (const sessionId of ['chat-1', 42, '', { id: 1 }])
      await model.doGenerate({ prompt, providerOptions: { contextGuard: { sessionId } } } as never);
    const sessions = events.of('estimate').map((e) => e.sessionId);
    expect(sessions.slice(0, 2)).toEqual(['chat-1', '42']);
    expect(sessions.slice(2)).toEqual([deriveSessionId(prompt), deriveSessionId(prompt)]);
  });
});

describe('provider options', () => {
  const cache = { anthropic: { cacheControl: { type: 'ephemeral' } } };
  const messages: ModelMessage[] = [
    { role: 'user', content: [{ type: 'text', text: REQUEST, providerOptions: cache }], providerOptions: cache },
  ];

  it.each<Mode>(['generate', 'stream'])(
    'strips contextGuard and passes every other provider option through (%s)',
    async (mode) => {
      const { mock, events, model } = setup({ reply: readerScript(20) });
      const openai = { store: false, user: 'user-7' };
      await run(mode, {
        model,
        instructions: SYSTEM,
        messages,
        tools: { read: readTool() },
        stopWhen: stepCountIs(25),
        providerOptions: { contextGuard: { sessionId: 'po' }, openai },
      });

      // The id was read (every event is for 'po'), and compaction happened on the way.
      expect(new Set(events.events.map((e) => ('sessionId' in e ? e.sessionId : '')))).toEqual(new Set(['po']));
      expect(events.of('compaction-end').length).toBeGreaterThan(0);
      expect(mock.summarizerCalls().length).toBeGreaterThan(0);
      for (const call of mock.received) {
        expect(call.options.providerOptions ?? {}).not.toHaveProperty('contextGuard');
        if (!call.summarizer) expect(call.options.providerOptions).toEqual({ openai });
      }
      // Message- and part-level provider options survive, compaction or not.
      for (const call of mock.agentCalls()) {
        const request = call.options.prompt.find((m) => m.role === 'user' && textOf(m.content) === REQUEST);
        expect(request?.providerOptions).toEqual(cache);
        expect((request?.content as Array<{ providerOptions?: unknown }> | undefined)?.[0]?.providerOptions).toEqual(
          cache,
        );
      }
    },
  );

  it('leaves providerOptions out when the caller only set contextGuard', async () => {
    const { mock, model } = setup({ reply: () => ({ text: 'ok' }) });
    await run('generate', { model, prompt: 'hi', providerOptions: { contextGuard: { sessionId: 'only' } } });
    expect(mock.agentCalls()[0]!.options.providerOptions ?? {}).toEqual({});
  });
});

// -------------------------------------------------------------------------------------------------
// Overflow recovery
// -------------------------------------------------------------------------------------------------

describe('overflow recovery', () => {
  const overflow = () => overflowError(OVERFLOW_MESSAGE, '{"error":{"code":"context_length_exceeded"}}');

  /** A conversation under the guard's threshold, with enough tool history to compact. */
  const history = readHistory<ModelMessage>(REQUEST, 'Now summarize the architecture.');

  it.each<Mode>(['generate', 'stream'])('retries once with a compacted, smaller prompt (%s)', async (mode) => {
    const { mock, events, model } = setup({
      reply: (_o, index) => {
        if (index === 0) throw overflow();
        return { text: 'The architecture is layered.' };
      },
    });
    const r = await run(mode, {
      model,
      instructions: SYSTEM,
      messages: history,
      tools: { read: readTool() },
      providerOptions: { contextGuard: { sessionId: 'of' } },
    });

    expect(r.text).toBe('The architecture is layered.');
    const [first, retry] = mock.agentCalls();
    expect(mock.agentCalls()).toHaveLength(2);
    expect(retry!.kind).toBe(mode);
    expect(retry!.tokens).toBeLessThan(first!.tokens);
    expect(pairingProblems(asGuard(retry!.options.prompt))).toEqual([]);
    expect(textOf(retry!.options.prompt.at(-1)?.content)).toContain('Now summarize the architecture.');
    // Compacting harder still keeps the history, as a summary: it is not simply dropped.
    expect(hasSummary(retry!.options.prompt), JSON.stringify(retry!.options.prompt).slice(0, 300)).toBe(true);
    // The provider's count (9500) was taken as the real size of the rejected prompt.
    expect(events.of('usage-recorded').map((e) => e.inputTokens)).toEqual([9500, retry!.tokens]);
    expect(events.of('compaction-end')).toHaveLength(1);
    // Measured the way that provider measured the rejected prompt, the retry fits its 8192 tokens.
    expect((retry!.tokens * 9500) / first!.tokens).toBeLessThanOrEqual(8192);
  });

  it.each<Mode>(['generate', 'stream'])(
    'throws a second overflow to the caller, without a third call (%s)',
    async (mode) => {
      const { mock, model } = setup({
        reply: () => {
          throw overflow();
        },
      });
      await expect(
        run(mode, {
          model,
          instructions: SYSTEM,
          messages: history,
          providerOptions: { contextGuard: { sessionId: 'of2' } },
        }),
      ).rejects.toSatisfy((e: unknown) => APICallError.isInstance(e) && /maximum context length/.test(e.message));
      expect(mock.agentCalls()).toHaveLength(2);
    },
  );

  it.each<Mode>(['generate', 'stream'])(
    'recovers a first call that a dense tokenizer puts over the real window (%s)',
    async (mode) => {
      // A realistic provider: it counts 3 tokens per 4 characters (the guard assumes 1.5 before any
      // real count) and rejects whatever is over its 8192 tokens, reporting its own count.
      const LIMIT = 8192;
      const { mock, events, model } = setup({
        ratio: 3,
        reply: (options) => {
          const tokens = mock.received.at(-1)!.tokens;
          if (tokens > LIMIT) {
            throw overflowError(
              `This model's maximum context length is ${LIMIT} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
            );
          }
          return { text: `answered with ${options.prompt.length} messages` };
        },
      });
      const r = await run(mode, {
        model,
        instructions: SYSTEM,
        messages: history,
        tools: { read: readTool() },
        providerOptions: { contextGuard: { sessionId: 'dense' } },
      });

      const [first, retry] = mock.agentCalls();
      expect(first!.tokens).toBeGreaterThan(LIMIT); // the guard's first guess let it through
      expect(mock.agentCalls()).toHaveLength(2);
      expect(retry!.tokens).toBeLessThanOrEqual(LIMIT);
      expect(r.text).toMatch(/^answered/);
      // The retry still carries the conversation: a summary of the history and the latest request.
      // (The room is there: the provider's window holds ~8k tokens, the guard aims at half of it.)
      const prompt = retry!.options.prompt;
      expect(hasSummary(prompt), JSON.stringify(prompt).slice(0, 300)).toBe(true);
      expect(textOf(prompt.at(-1)?.content)).toContain('Now summarize the architecture.');
      expect(retry!.tokens).toBeGreaterThan(LIMIT / 10);
      expect(events.of('usage-recorded').map((e) => e.inputTokens)).toEqual([first!.tokens, retry!.tokens]);
    },
  );

  it('does not retry other provider errors', async () => {
    const { mock, model } = setup({
      reply: () => {
        throw new APICallError({
          message: 'Internal server error',
          url: 'https://x',
          requestBodyValues: {},
          statusCode: 500,
          isRetryable: false,
        });
      },
    });
    await expect(run('generate', { model, instructions: SYSTEM, messages: history })).rejects.toThrow(
      'Internal server error',
    );
    expect(mock.agentCalls()).toHaveLength(1);
  });
});

// -------------------------------------------------------------------------------------------------
// Untouched messages reach the provider as the SDK's own objects
// -------------------------------------------------------------------------------------------------

describe('message identity', () => {
  /** A middleware placed before the guard: it sees each prompt exactly as the SDK built it. */
  function spy() {
    const built: CallOptions['prompt'][] = [];
    const middleware: LanguageModelV4Middleware = {
      specificationVersion: 'v4',
      transformParams: async ({ params }) => {
        built.push(params.prompt as CallOptions['prompt']);
        return params;
      },
    };
    return { built, middleware };
  }

  it.each<Mode>(['generate', 'stream'])(
    'passes every message through as the same object when nothing is compacted (%s)',
    async (mode) => {
      const { built, middleware } = spy();
      const { mock, events, model } = setup({ reply: readerScript(5) }, { middleware: [middleware] });
      await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool(300) },
        stopWhen: stepCountIs(10),
      });

      expect(events.of('compaction-end')).toEqual([]);
      const agent = mock.agentCalls();
      expect(agent).toHaveLength(6);
      for (const [i, call] of agent.entries()) {
        expect(call.options.prompt).toHaveLength(built[i]!.length);
        call.options.prompt.forEach((m, j) => expect(m, `call ${i}, message ${j}`).toBe(built[i]![j]));
      }
    },
  );

  it('keeps the SDK objects for the messages a compaction left alone', async () => {
    const { built, middleware } = spy();
    const { mock, events, model } = setup({ reply: readerScript(20) }, { middleware: [middleware] });
    await run('generate', {
      model,
      instructions: SYSTEM,
      prompt: REQUEST,
      tools: { read: readTool() },
      stopWhen: stepCountIs(25),
    });

    expect(events.of('compaction-end').length).toBeGreaterThan(0);
    for (const [i, call] of mock.agentCalls().entries()) {
      const sdk = built[i]!;
      expect(call.options.prompt[0]).toBe(sdk[0]); // the system message
      // Any message with the same content as one the SDK built is that very object.
      for (const m of call.options.prompt) {
        const same = sdk.find((s) => JSON.stringify(s) === JSON.stringify(m));
        if (same) expect(m, `call ${i}`).toBe(same);
      }
    }
  });
});

// -------------------------------------------------------------------------------------------------
// compactTool
// -------------------------------------------------------------------------------------------------

describe('compactTool', () => {
  const FOCUS = 'the failing tests and their errors';
  /** Reads two large files, asks for a compaction with a focus, then answers. */
  const script: ScriptOptions['reply'] = (_o, index) => {
    if (index < 2) return { toolCalls: [{ toolName: 'read', input: { path: `f${index}.ts` } }] };
    if (index === 2) return { toolCalls: [{ toolName: 'compact_context', input: { focus: FOCUS } }] };
    return { text: 'done' };
  };

  it.each<Mode>(['generate', 'stream'])(
    'compacts the next step with the focus, through an explicit summarizer (%s)',
    async (mode) => {
      const summarizer = vi.fn<Summarizer>(async () => '## Task state\nTwo files read.');
      const { mock, events, guard, model } = setup({ reply: script }, { summarizer });
      const r = await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool(), compact_context: compactTool(guard) },
        stopWhen: stepCountIs(6),
      });

      expect(r.text).toBe('done');
      expect(String(r.steps[2]!.toolResults[0]!.output)).toMatch(/^Compaction scheduled/);
      const agent = mock.agentCalls();
      expect(agent.slice(0, 3).map((c) => hasSummary(c.options.prompt))).toEqual([false, false, false]);
      expect(hasSummary(agent[3]!.options.prompt)).toBe(true);
      expect(pairingProblems(asGuard(agent[3]!.options.prompt))).toEqual([]);
      expect(summarizer).toHaveBeenCalled();
      for (const [input] of summarizer.mock.calls) expect(input.focus).toBe(FOCUS);
      expect(events.of('compaction-end').map((e) => e.reason)).toEqual(['manual']);
    },
  );

  it.each<Mode>(['generate', 'stream'])(
    'finds the session of an explicit providerOptions.contextGuard.sessionId (%s)',
    async (mode) => {
      const summarizer = vi.fn<Summarizer>(async () => '## Task state\nTwo files read.');
      const { mock, events, guard, model } = setup({ reply: script }, { summarizer });
      const r = await run(mode, {
        model,
        instructions: SYSTEM,
        prompt: REQUEST,
        tools: { read: readTool(), compact_context: compactTool(guard) },
        stopWhen: stepCountIs(6),
        providerOptions: { contextGuard: { sessionId: 'explicit-7' } },
      });
      expect(String(r.steps[2]!.toolResults[0]!.output)).toMatch(/^Compaction scheduled/);
      expect(events.of('compaction-end').map((e) => [e.sessionId, e.reason])).toEqual([['explicit-7', 'manual']]);
      expect(hasSummary(mock.agentCalls()[3]!.options.prompt)).toBe(true);
    },
  );

  it.each<Mode>(['generate', 'stream'])('passes the focus to the default summarizer (%s)', async (mode) => {
    const { mock, guard, model } = setup({ reply: script });
    await run(mode, {
      model,
      instructions: SYSTEM,
      prompt: REQUEST,
      tools: { read: readTool(), compact_context: compactTool(guard) },
      stopWhen: stepCountIs(6),
    });

    const summaries = mock.summarizerCalls();
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    for (const call of summaries) expect(textOf(call.options.prompt[0]!.content)).toContain(FOCUS);
    expect(hasSummary(mock.agentCalls()[3]!.options.prompt)).toBe(true);
  });

  it.each<Mode>(['generate', 'stream'])("answers 'No compaction needed' under 20% of the window (%s)", async (mode) => {
    const summarizer = vi.fn<Summarizer>(async () => 'unused');
    const { mock, events, guard, model } = setup(
      {
        reply: (_o, index) =>
          index === 0 ? { toolCalls: [{ toolName: 'compact_context', input: { focus: FOCUS } }] } : { text: 'done' },
      },
      { summarizer },
    );
    const r = await run(mode, {
      model,
      instructions: SYSTEM,
      prompt: REQUEST,
      tools: { compact_context: compactTool(guard) },
      stopWhen: stepCountIs(4),
    });

    expect(String(r.steps[0]!.toolResults[0]!.output)).toMatch(/^No compaction needed/);
    expect(summarizer).not.toHaveBeenCalled();
    expect(events.of('compaction-end')).toEqual([]);
    expect(hasSummary(mock.agentCalls()[1]!.options.prompt)).toBe(false);
  });
});

// -------------------------------------------------------------------------------------------------
// Hostile provider errors and prompts: the table shared with ai 6
// -------------------------------------------------------------------------------------------------

hostileCases({
  label: 'ai 7',
  setup: (script, options = {}) => {
    const { upstream = [], ...guardOptions } = options;
    return setup(script, { middleware: upstream as LanguageModelV4Middleware[], ...guardOptions });
  },
  rewrite: (transform) =>
    ({
      specificationVersion: 'v4',
      transformParams: async ({ params }) => transform(params as unknown as CallOptions) as unknown as typeof params,
    }) satisfies LanguageModelV4Middleware,
  run: async (mode, { model, system, messages, tools, providerOptions }) => {
    const args = {
      model: model as Parameters<typeof generateText>[0]['model'],
      maxRetries: 0,
      ...(system ? { instructions: system } : {}),
      messages: messages as ModelMessage[],
      ...(tools ? { tools: { read: readTool() } } : {}),
      ...(providerOptions ? { providerOptions: providerOptions as never } : {}),
    };
    if (mode === 'generate') {
      const r = await generateText(args);
      return { text: r.text, responseId: r.response.id };
    }
    const errors: unknown[] = [];
    const r = streamText({ ...args, onError: ({ error }) => void errors.push(error) });
    await r.consumeStream();
    if (errors.length > 0) throw errors[0];
    return { text: await r.text, responseId: (await r.response).id };
  },
});
