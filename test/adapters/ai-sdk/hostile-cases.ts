// Hostile provider errors and prompts through the AI SDK middleware,
// as one table of cases that middleware.test.ts (ai 7, V4) and middleware-v3.test.ts (ai 6, V3)
// both run through their SDK's generateText / streamText and scripted mock model:
//   - provider errors whose cause chain loops reach the caller as they are (never a RangeError);
//   - prompts the SDK itself never builds (another middleware's doing: a `null` entry, no prompt)
//     never make transformParams throw;
//   - a context-length rejection inside the stream, before any content, is retried once, and the
//     caller sees only the retried stream; after content, nothing is retried;
//   - the count a rejection reports is the prompt's total (tools included, completion excluded).
import { APICallError } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import type { ContextGuard, ContextGuardOptions, GuardMessage } from '../../../src/index.ts';
import { pairingProblems } from '../../compaction/invariants.ts';
import type { recorder } from '../../helpers.ts';
import {
  arrayStream,
  isSummarizerCall,
  textOf,
  type CallOptions,
  type Received,
  type ScriptOptions,
  readHistory,
  overflowError,
  OVERFLOW_MESSAGE,
} from './mock.ts';

type Mode = 'generate' | 'stream';

/** What each test file provides: its SDK, its mock model class and its middleware version. */
export interface Harness {
  /** 'ai 7' or 'ai 6', for the test names. */
  label: string;
  /**
   * A scripted mock wrapped by the guard (window 8,000, events recorded); `upstream` middlewares
   * (of the harness's version, see `rewrite`) run before the guard.
   */
  setup(
    script: ScriptOptions,
    options?: { upstream?: unknown[] } & ContextGuardOptions,
  ): {
    mock: { model: unknown; received: Received[]; agentCalls(): Received[] };
    events: ReturnType<typeof recorder>;
    guard: { guard: ContextGuard; transformParams?: unknown };
    model: unknown;
  };
  /** A middleware of the harness's version that rewrites each call's params before the guard sees them. */
  rewrite(transform: (params: CallOptions) => CallOptions): unknown;
  /** One agent run; `system` is the SDK's own system option. Stream errors are thrown, as generate's are. */
  run(
    mode: Mode,
    args: {
      model: unknown;
      system?: string;
      messages: unknown[];
      tools?: 'read';
      providerOptions?: Record<string, unknown>;
    },
  ): Promise<{ text: string; responseId?: string }>;
}

const SYSTEM = 'You are a coding agent. Read the files you need, then answer.';
const REQUEST = 'Read every file of the project and summarize its architecture.';
const LATEST = 'Now summarize the architecture.';

/** A conversation under the threshold, with enough tool history for a compaction to matter. */
const history = (): unknown[] => readHistory<unknown>(REQUEST, LATEST);

/** The in-stream rejection reached the caller (the SDK wraps a stream error part in its own error). */
const saysContextWindow = (error: unknown) => /context window/.test(String((error as Error | undefined)?.message));

/** A provider error (not retryable by the SDK) whose cause chain loops back to it. */
function cyclicError(message: string): APICallError {
  const error = new APICallError({
    message,
    url: 'https://api.example.com/v1',
    requestBodyValues: {},
    statusCode: 500,
    isRetryable: false,
  });
  const wrapper = new Error('while calling the provider', { cause: error });
  Object.defineProperty(error, 'cause', { value: wrapper, configurable: true });
  return error;
}

/**
 * What @ai-sdk/openai (Responses API) enqueues as an `error` part when the response fails after
 * it started: its provider stream error, with the `response.failed` frame as `data`.
 */
function responsesOverflow(
  message = 'Your input exceeds the context window of this model. Please adjust your input and try again.',
) {
  const frame = {
    type: 'response.failed',
    sequence_number: 2,
    response: { error: { code: 'context_length_exceeded', message } },
  };
  return {
    message,
    type: 'response.failed',
    code: 'context_length_exceeded',
    statusCode: 400,
    isRetryable: false,
    data: frame,
  };
}

const leading = (id: string) => [
  { type: 'stream-start', warnings: [] },
  { type: 'response-metadata', id, modelId: 'mock-model', timestamp: new Date(0) },
];
const failedFinish = {
  type: 'finish',
  finishReason: { unified: 'error', raw: 'error' },
  usage: { inputTokens: { total: undefined }, outputTokens: { total: undefined } },
};

/** The scripted parts of a call, with response metadata named `id` after its stream-start. */
const withMetadata = (parts: object[], id: string) => [
  ...leading(id),
  ...parts.filter((p) => (p as { type: string }).type !== 'stream-start'),
];

/** A stream that delivers `parts`, then fails with `error`. */
function failingStream(parts: object[], error: unknown): ReadableStream<object> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.error(error);
    },
  });
}

/**
 * A script whose agent calls stream what `streams` returns for them (by agent-call index); the
 * summarizer's calls and calls without an entry stream the scripted answer.
 */
function streamScript(
  streams: (index: number, parts: object[]) => ReadableStream<object> | undefined,
  text = 'The architecture is layered.',
): ScriptOptions {
  let index = 0;
  return {
    reply: () => ({ text }),
    stream: (parts, options) => (isSummarizerCall(options) ? undefined : streams(index++, parts)),
  };
}

const asGuard = (prompt: CallOptions['prompt']) => prompt as unknown as GuardMessage[];

export function hostileCases(h: Harness): void {
  describe(`${h.label}: provider errors whose cause chain loops`, () => {
    it.each<Mode>(['generate', 'stream'])(
      'reach the caller as the provider threw them, never as a RangeError (%s)',
      async (mode) => {
        const error = cyclicError('Internal server error');
        const { mock, model } = h.setup({
          reply: () => {
            throw error;
          },
        });
        await expect(h.run(mode, { model, system: SYSTEM, messages: history() })).rejects.toBe(error);
        expect(mock.agentCalls()).toHaveLength(1);
      },
    );

    it.each<Mode>(['generate', 'stream'])('are still recognized as overflows when they are one (%s)', async (mode) => {
      const { mock, events, model } = h.setup({
        reply: (_options, index) => {
          if (index === 0) throw cyclicError(OVERFLOW_MESSAGE);
          return { text: 'layered' };
        },
      });
      expect((await h.run(mode, { model, system: SYSTEM, messages: history() })).text).toBe('layered');
      expect(mock.agentCalls()).toHaveLength(2);
      expect(events.of('overflow-retry')).toEqual([expect.objectContaining({ reportedTokens: 9_500 })]);
    });
  });

  describe(`${h.label}: prompts the SDK never builds, from another middleware`, () => {
    it.each<Mode>(['generate', 'stream'])(
      'a null entry: the call goes on, the entry is left out with an event (%s)',
      async (mode) => {
        const insertNull = h.rewrite((params) => ({
          ...params,
          prompt: [params.prompt[0]!, null, ...params.prompt.slice(1)] as CallOptions['prompt'],
        }));
        const { mock, events, model } = h.setup({ reply: () => ({ text: 'ok' }) }, { upstream: [insertNull] });
        expect((await h.run(mode, { model, system: SYSTEM, messages: history() })).text).toBe('ok');
        const prompt = mock.agentCalls()[0]!.options.prompt;
        expect(prompt.every((m) => m !== null && typeof m === 'object')).toBe(true);
        expect(textOf(prompt.at(-1)?.content)).toContain(LATEST);
        expect(events.of('invalid-messages')).toEqual([expect.objectContaining({ indices: [1] })]);
        expect(events.of('error')).toEqual([]);
      },
    );

    it('transformParams never throws: no prompt, a prompt that is not an array, odd entries and options', async () => {
      const { guard, mock, events } = h.setup({ reply: () => ({ text: 'ok' }) });
      const transform = guard.transformParams as (input: {
        params: unknown;
        type: Mode;
        model: unknown;
      }) => Promise<CallOptions>;
      const user = { role: 'user', content: [{ type: 'text', text: 'hi' }] };
      const cases: Array<[string, Record<string, unknown>]> = [
        ['undefined prompt', { prompt: undefined }],
        ['null prompt', { prompt: null }],
        ['string prompt', { prompt: 'hi' }],
        ['object prompt', { prompt: { role: 'user', content: 'hi' } }],
        ['null and undefined entries', { prompt: [null, user, undefined] }],
        ['primitive entries', { prompt: [42, 'text', user] }],
        ['null parts', { prompt: [{ role: 'user', content: [null, { type: 'text', text: 'hi' }] }] }],
        ['null content', { prompt: [{ role: 'user', content: null }, user] }],
        ['null providerOptions', { prompt: [user], providerOptions: null }],
        ['null contextGuard', { prompt: [user], providerOptions: { contextGuard: null } }],
        ['tools that are not an array', { prompt: [user], tools: 'read' }],
      ];
      for (const [name, params] of cases) {
        const out = await transform({ params, type: 'generate', model: mock.model }).catch((error: unknown) => ({
          threw: error,
        }));
        expect(out, name).not.toHaveProperty('threw');
        expect((out as CallOptions).providerOptions ?? {}, name).not.toHaveProperty('contextGuard');
      }
      // What the adapter cannot read went on unguarded, and onEvent heard of it.
      expect(events.of('error').length).toBeGreaterThanOrEqual(4);
    });
  });

  describe(`${h.label}: a context-length rejection inside the stream`, () => {
    it('before any content: retried once, compacted, and the caller sees only the retried stream', async () => {
      const { mock, events, model } = h.setup(
        streamScript((index, parts) =>
          index === 0
            ? arrayStream([...leading('resp_rejected'), { type: 'error', error: responsesOverflow() }, failedFinish])
            : arrayStream(withMetadata(parts, 'resp_retried')),
        ),
      );
      const r = await h.run('stream', { model, system: SYSTEM, messages: history(), tools: 'read' });

      expect(r.text).toBe('The architecture is layered.');
      expect(r.responseId).toBe('resp_retried');
      const [first, retry] = mock.agentCalls();
      expect(mock.agentCalls()).toHaveLength(2);
      expect(retry!.tokens).toBeLessThan(first!.tokens);
      expect(pairingProblems(asGuard(retry!.options.prompt))).toEqual([]);
      expect(textOf(retry!.options.prompt.at(-1)?.content)).toContain(LATEST);
      expect(events.of('overflow-retry')).toHaveLength(1);
      // Only the retry's usage: the rejected attempt's finish part never reached the recorder.
      expect(events.of('usage-recorded').map((e) => e.inputTokens)).toEqual([retry!.tokens]);
    });

    it('a stream that fails with an overflow before any content is retried the same way, with the count it reports', async () => {
      const { mock, events, model } = h.setup(
        streamScript((index) => (index === 0 ? failingStream(leading('resp_rejected'), overflowError()) : undefined)),
      );
      expect((await h.run('stream', { model, system: SYSTEM, messages: history() })).text).toBe(
        'The architecture is layered.',
      );
      expect(mock.agentCalls()).toHaveLength(2);
      expect(events.of('usage-recorded').map((e) => e.inputTokens)).toEqual([9_500, mock.agentCalls()[1]!.tokens]);
    });

    it('after content has reached the caller: forwarded as it is, never retried', async () => {
      const { mock, events, model } = h.setup(
        streamScript(() =>
          arrayStream([
            ...leading('resp_1'),
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'The archi' },
            { type: 'error', error: responsesOverflow() },
            failedFinish,
          ]),
        ),
      );
      await expect(h.run('stream', { model, system: SYSTEM, messages: history() })).rejects.toSatisfy(
        saysContextWindow,
      );
      expect(mock.agentCalls()).toHaveLength(1);
      expect(events.of('overflow-retry')).toEqual([]);
    });

    it('another error before any content is forwarded at once, with the parts held before it', async () => {
      const rateLimit = { message: 'Rate limit reached for requests', type: 'tokens', code: 'rate_limit_exceeded' };
      const { mock, model } = h.setup(
        streamScript(() => arrayStream([...leading('resp_1'), { type: 'error', error: rateLimit }, failedFinish])),
      );
      await expect(h.run('stream', { model, system: SYSTEM, messages: history() })).rejects.toSatisfy((e: unknown) =>
        /Rate limit/.test(String((e as Error)?.message)),
      );
      expect(mock.agentCalls()).toHaveLength(1);
    });

    it.each([
      ['the retried stream rejects in the stream too', false],
      ['doStream threw, then the retried stream rejects in the stream', true],
    ])('one retry per call: %s, and that reaches the caller', async (_name, throwFirst) => {
      const script = streamScript(() =>
        arrayStream([...leading('resp'), { type: 'error', error: responsesOverflow() }, failedFinish]),
      );
      const reply = script.reply;
      script.reply = (options, index) => {
        if (throwFirst && index === 0) throw overflowError();
        return reply(options, index);
      };
      const { mock, events, model } = h.setup(script);
      await expect(h.run('stream', { model, system: SYSTEM, messages: history() })).rejects.toSatisfy(
        saysContextWindow,
      );
      expect(mock.agentCalls()).toHaveLength(2);
      expect(events.of('overflow-retry')).toHaveLength(1);
    });
  });

  describe(`${h.label}: the count a rejection reports`, () => {
    it.each<Mode>(['generate', 'stream'])(
      'OpenAI with tools: the prompt total (12,422), not the messages alone (12,308) (%s)',
      async (mode) => {
        const message =
          "This model's maximum context length is 8192 tokens. However, your messages resulted in 12422 tokens (12308 in the messages, 114 in the functions). Please reduce the length of the messages or functions.";
        const { events, model } = h.setup({
          reply: (_options, index) => {
            if (index === 0) throw overflowError(message);
            return { text: 'ok' };
          },
        });
        await h.run(mode, { model, system: SYSTEM, messages: history(), tools: 'read' });
        expect(events.of('overflow-retry')).toEqual([expect.objectContaining({ reportedTokens: 12_422 })]);
        expect(events.of('usage-recorded')[0]).toMatchObject({ inputTokens: 12_422 });
      },
    );
  });
}
