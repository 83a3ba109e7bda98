// A stream given up while the guard prepares the compacted retry of an in-stream context-length
// rejection (its single reader cancels it, or the call's abortSignal fires): nobody reads the retry,
// so the compaction must stop calling the summarizer and no retried request may reach the provider.
import type { LanguageModelV4Prompt } from '@ai-sdk/provider';
import { streamText, wrapLanguageModel, type ModelMessage } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/ai-sdk/index.ts';
import type { Summarizer } from '../../../src/index.ts';
import { recorder } from '../../helpers.ts';
import { arrayStream, overflowError, readHistory, scriptedModel } from './mock.ts';

const WINDOW = 8_000;

/** A conversation under the threshold, with enough tool history for the retry to compact. */
const history = (): ModelMessage[] =>
  readHistory<ModelMessage>('Read every file and summarize the architecture.', 'Now summarize the architecture.');

/** The same conversation as the provider receives it (V4 prompt parts). */
function v4Prompt(messages: ModelMessage[]): LanguageModelV4Prompt {
  return messages.map((m) =>
    typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m,
  ) as LanguageModelV4Prompt;
}

/** Resolves on the next turn of the event loop: every microtask queued so far has run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A summarizer that stays busy until its signal fires or the test releases it, and tells when it
 * is first called.
 */
function blockingSummarizer() {
  const signals: Array<AbortSignal | undefined> = [];
  const releases: Array<() => void> = [];
  let released = false;
  let started!: () => void;
  const firstCall = new Promise<void>((resolve) => (started = resolve));
  const summarizer: Summarizer = ({ signal }) => {
    signals.push(signal);
    started();
    return new Promise<string>((resolve, reject) => {
      const summary = () => resolve('## Task state\nReading files.');
      if (released) summary();
      else releases.push(summary);
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  };
  return {
    summarizer,
    signals,
    firstCall,
    release: () => {
      released = true;
      for (const summary of releases.splice(0)) summary();
    },
  };
}

type GiveUp = 'the reader cancels' | 'the abortSignal fires';

/**
 * Starts a stream whose first provider response is an overflow `error` part, and gives it up the
 * chosen way once the retry's compaction is calling the summarizer.
 */
async function giveUpDuringRetry(how: GiveUp) {
  let streams = 0;
  const mock = scriptedModel(MockLanguageModelV4, {
    reply: () => ({ text: 'The architecture is layered.' }),
    stream: (parts) =>
      ++streams === 1
        ? arrayStream([
            { type: 'stream-start', warnings: [] },
            { type: 'error', error: overflowError() },
          ])
        : arrayStream(parts),
  });
  const blocking = blockingSummarizer();
  const events = recorder();
  const middleware = contextGuardMiddleware({
    contextWindow: WINDOW,
    summarizer: blocking.summarizer,
    onEvent: events.onEvent,
  });
  const model = wrapLanguageModel({ model: mock.model, middleware });
  const abort = new AbortController();
  let reader: ReadableStreamDefaultReader<unknown>;
  if (how === 'the reader cancels') {
    // Straight from the wrapped model, as streamText reads it: streamText's own pipeline hands a
    // reader's cancel down only once the pending read settled, so only its abortSignal reaches a
    // retry in preparation.
    const { stream } = await model.doStream({ prompt: v4Prompt(history()), abortSignal: abort.signal });
    reader = stream.getReader();
  } else {
    const options = { model, messages: history(), maxRetries: 0, abortSignal: abort.signal, onError: () => {} };
    reader = streamText(options).textStream.getReader();
  }
  const read = reader.read().catch(() => undefined);

  await blocking.firstCall;
  if (how === 'the reader cancels') await reader.cancel('client went away');
  else abort.abort(new Error('client went away'));
  await read;
  // Unaborted, the summarizer would hold the retry forever: let it answer, then let the retry run to its end.
  blocking.release();
  for (let i = 0; i < 5; i++) await settle();
  return { mock, blocking, events };
}

describe('ai 7: a stream given up while its overflow retry is being prepared', () => {
  it.each<GiveUp>(['the reader cancels', 'the abortSignal fires'])(
    '%s: the summarizer is aborted and no retried request is sent',
    async (how) => {
      const { mock, blocking, events } = await giveUpDuringRetry(how);

      expect(mock.agentCalls()).toHaveLength(1);
      expect(blocking.signals).toHaveLength(1);
      expect(blocking.signals[0]?.aborted).toBe(true);
      // The rejection was still recognized (its count recorded), only the retry was dropped.
      expect(events.of('overflow-retry')).toHaveLength(1);
    },
  );
});
