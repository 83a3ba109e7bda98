// writeContextParts end to end, through the AI SDK's own UI stream: a chat of several turns, each
// one a `createUIMessageStream` whose execute runs `streamText` on the guarded MockLanguageModelV4,
// read back with `readUIMessageStream` as a client would. Checks what the client ends up holding:
// one meter part per assistant message (updated in place), holding the provider's count, rising turn
// after turn, one compaction entry on the turn that compacted, and the meter lower after it.
import {
  convertToModelMessages,
  createUIMessageStream,
  readUIMessageStream,
  streamText,
  wrapLanguageModel,
  type UIMessage,
} from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import {
  contextGuardMiddleware,
  createContextGuard,
  writeContextParts,
  type ContextGuardCompaction,
  type ContextGuardMeter,
  type ContextGuardPart,
  type ContextGuardUIMessage,
} from '../../../adapters/ai-sdk/index.ts';
import { scriptedModel, tokensOf } from './mock.ts';

const WINDOW = 6_000;

/** An answer of about `chars` characters: each turn grows the conversation. */
const answer = (turn: number, chars = 2_400) => {
  let text = `Answer ${turn}: `;
  while (text.length < chars) text += `the design keeps step ${turn} of the plan in mind. `;
  return text;
};

function chatSetup() {
  const mock = scriptedModel(MockLanguageModelV4, { reply: (_options, index) => ({ text: answer(index + 1) }) });
  const guarded = contextGuardMiddleware({ contextWindow: WINDOW });
  const model = wrapLanguageModel({ model: mock.model, middleware: guarded });
  return { mock, guarded, model };
}

/** One turn as a chat route and its client do it: the UI stream written, read back into the assistant message. */
async function turn(
  setup: ReturnType<typeof chatSetup>,
  history: ContextGuardUIMessage[],
  text: string,
  sessionId = 'chat-1',
): Promise<ContextGuardUIMessage> {
  history.push({ id: `u${history.length}`, role: 'user', parts: [{ type: 'text', text }] });
  const messages = await convertToModelMessages(history);
  const stream = createUIMessageStream<ContextGuardUIMessage>({
    execute: async ({ writer }) => {
      const stop = writeContextParts(writer, setup.guarded, { sessionId });
      const result = streamText({
        model: setup.model,
        messages,
        providerOptions: { contextGuard: { sessionId } },
      });
      writer.merge(result.toUIMessageStream());
      await result.consumeStream();
      await stop();
    },
  });
  let last: ContextGuardUIMessage | undefined;
  for await (const message of readUIMessageStream<ContextGuardUIMessage>({ stream })) last = message;
  if (!last) throw new Error('no assistant message');
  history.push(last);
  return last;
}

const metersOf = (message: ContextGuardUIMessage): ContextGuardMeter[] =>
  message.parts.flatMap((p) => (p.type === 'data-context-guard' ? [p.data] : []));
const compactionsOf = (message: ContextGuardUIMessage): ContextGuardCompaction[] =>
  message.parts.flatMap((p) => (p.type === 'data-context-guard-compaction' ? [p.data] : []));

describe('writeContextParts in a createUIMessageStream, read with readUIMessageStream', () => {
  it('a chat that grows: one meter per message with the provider count, rising, a compaction entry, the meter lower after it', async () => {
    const setup = chatSetup();
    const history: ContextGuardUIMessage[] = [];
    const meters: ContextGuardMeter[] = [];
    let compactedAt = -1;
    let compaction: ContextGuardCompaction | undefined;
    for (let i = 0; i < 10; i++) {
      const message = await turn(setup, history, `Question ${i + 1}: go on with the plan.`);
      const own = metersOf(message);
      expect(own).toHaveLength(1); // one id: updated in place, not appended
      const meter = own[0]!;
      meters.push(meter);
      // After the call: the provider's count of the prompt plus the answer it produced.
      const call = setup.mock.agentCalls().at(-1)!;
      expect(meter).toMatchObject({ source: 'provider', contextWindow: WINDOW, threshold: WINDOW * 0.8 });
      expect(meter.tokens).toBe(call.tokens + tokensOf([{ type: 'text', text: answer(i + 1) }]));
      expect(meter.fraction).toBeCloseTo(meter.tokens / WINDOW, 10);
      expect(meter.warning).toBe(meter.fraction >= 0.7);
      const found = compactionsOf(message);
      if (found.length > 0 && compactedAt < 0) {
        compactedAt = i;
        compaction = found[0];
        expect(found).toHaveLength(1);
      }
    }
    expect(compactedAt).toBeGreaterThan(0);
    expect(compactedAt).toBeLessThan(8);
    for (let i = 1; i < compactedAt; i++) expect(meters[i]!.tokens).toBeGreaterThan(meters[i - 1]!.tokens);
    expect(meters[compactedAt]!.tokens).toBeLessThan(meters[compactedAt - 1]!.tokens);
    expect(compaction).toMatchObject({ reason: 'threshold', strategy: 'summary' });
    expect(compaction!.tokensAfter).toBeLessThan(compaction!.tokensBefore);
    expect(compaction!.label).toMatch(/^Summarized: [\d.]+k → [\d.]+k? tokens$/);
    expect(compaction!.archive.length).toBeGreaterThan(0);
    // The summarizer wrote the summary (the mock answered it), and the provider never saw a prompt over the window.
    expect(setup.mock.summarizerCalls().length).toBeGreaterThan(0);
    for (const call of setup.mock.agentCalls()) expect(call.tokens).toBeLessThan(WINDOW);
    // Data parts stay out of the model's prompt when the history goes back to the server.
    const prompt = await convertToModelMessages(history);
    expect(JSON.stringify(prompt)).not.toContain('context-guard');
  });

  it('writes only its own session: another chat on the same guard reaches another writer', async () => {
    const setup = chatSetup();
    const a: ContextGuardPart[] = [];
    const b: ContextGuardPart[] = [];
    const stopA = writeContextParts({ write: (p) => a.push(p) }, setup.guarded, { sessionId: 'a' });
    const stopB = writeContextParts({ write: (p) => b.push(p) }, setup.guarded.guard, { sessionId: 'b' });
    const call = (sessionId: string) =>
      streamText({
        model: setup.model,
        prompt: 'hello',
        providerOptions: { contextGuard: { sessionId } },
      }).consumeStream();
    await call('a');
    expect(a.map((p) => p.type)).toEqual(['data-context-guard', 'data-context-guard']); // estimate, then the count
    expect(a.map((p) => (p.type === 'data-context-guard' ? p.data.source : ''))).toEqual(['estimate', 'provider']);
    expect(b).toEqual([]);
    await call('b');
    expect(b).toHaveLength(2);
    expect(a).toHaveLength(2);
    await stopA();
    await stopB();
  });

  it('the returned function stops it: later calls write nothing, and the guard holds no listener', async () => {
    const setup = chatSetup();
    const parts: ContextGuardPart[] = [];
    const stop = writeContextParts({ write: (p) => parts.push(p) }, setup.guarded, { sessionId: 's' });
    const call = () =>
      streamText({
        model: setup.model,
        prompt: 'hi',
        providerOptions: { contextGuard: { sessionId: 's' } },
      }).consumeStream();
    await call();
    const written = parts.length;
    await stop();
    await stop(); // idempotent
    expect(parts).toHaveLength(written); // nothing new: the status was the last count already
    await call();
    expect(parts).toHaveLength(written);
  });

  it('a writer that throws (a closed stream) never fails the model call', async () => {
    const setup = chatSetup();
    writeContextParts(
      {
        write: () => {
          throw new TypeError('Invalid state: Controller is already closed');
        },
      },
      setup.guarded,
      { sessionId: 'x' },
    );
    const result = streamText({
      model: setup.model,
      prompt: 'hi',
      providerOptions: { contextGuard: { sessionId: 'x' } },
    });
    expect(await result.text).toMatch(/^Answer 1/);
  });

  it('subscriptions a host forgets to stop are bounded by maxSessions (the oldest dropped)', async () => {
    const guard = createContextGuard({ contextWindow: WINDOW, maxSessions: 2 });
    const heard: string[] = [];
    for (const name of ['first', 'second', 'third'])
      guard.subscribe('s', (event) => heard.push(`${name}:${event.type}`));
    await guard.beforeModel({ sessionId: 's', messages: [{ role: 'user', content: 'hi' }] });
    expect(heard).toEqual(['second:estimate', 'third:estimate']);
  });

  it('rejects a missing session id at set-up, naming it', () => {
    const { guarded } = chatSetup();
    expect(() => writeContextParts({ write: () => {} }, guarded, { sessionId: '' })).toThrow(/sessionId/);
  });

  it('types: the parts narrow by type on a ContextGuardUIMessage, and any UIMessage writer accepts them', () => {
    const message: ContextGuardUIMessage = {
      id: 'm',
      role: 'assistant',
      parts: [
        {
          type: 'data-context-guard',
          id: 'context-guard',
          data: { tokens: 1, threshold: 2, contextWindow: 3, fraction: 1 / 3, source: 'estimate', warning: false },
        },
      ],
    };
    const part = message.parts[0]!;
    const fraction = part.type === 'data-context-guard' ? part.data.fraction : 0;
    expect(fraction).toBeCloseTo(1 / 3);
    // A writer of plain UIMessages (no declared data parts) takes them too.
    createUIMessageStream<UIMessage>({
      execute: ({ writer }) => {
        void writeContextParts(writer, createContextGuard({ contextWindow: WINDOW }), { sessionId: 't' })();
      },
    });
  });
});
