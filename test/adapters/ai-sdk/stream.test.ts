// guardedStream on its own: the provider's parts observed as they pass, leading metadata held until
// content, and one switch to a retried stream for a rejection that arrives before any content.
import { describe, expect, it, vi } from 'vitest';
import { guardedStream, type StreamPart } from '../../../adapters/ai-sdk/stream.ts';

const parts = (...types: string[]): StreamPart[] => types.map((type, i) => ({ type, id: i }));

function streamOf(items: StreamPart[], failWith?: unknown): ReadableStream<StreamPart> & { cancelled: boolean } {
  let i = 0;
  const stream = new ReadableStream<StreamPart>({
    pull(controller) {
      if (i < items.length) controller.enqueue(items[i++]!);
      else if (failWith !== undefined) controller.error(failWith);
      else controller.close();
    },
    cancel() {
      result.cancelled = true;
    },
  });
  const result = Object.assign(stream, { cancelled: false });
  return result;
}

async function readAll(stream: ReadableStream<StreamPart>): Promise<StreamPart[]> {
  const out: StreamPart[] = [];
  for await (const part of stream as unknown as AsyncIterable<StreamPart>) out.push(part);
  return out;
}

describe('guardedStream', () => {
  it('passes every part, as the same object and in order, and observes each one', async () => {
    const source = parts('stream-start', 'response-metadata', 'text-delta', 'tool-call', 'finish');
    const observe = vi.fn();
    const out = await readAll(guardedStream(streamOf(source), { observe, retry: async () => undefined }));
    expect(out).toEqual(source);
    out.forEach((part, i) => expect(part).toBe(source[i]));
    expect(observe.mock.calls.map(([part]) => part)).toEqual(source);
  });

  it('an error part before any content switches to the retried stream; the rejected leading parts are dropped', async () => {
    const rejected = streamOf(parts('stream-start', 'error', 'finish'));
    const retried = parts('stream-start', 'text-delta', 'finish');
    const retry = vi.fn(async () => streamOf(retried));
    const out = await readAll(guardedStream(rejected, { observe: () => {}, retry }));
    expect(out).toEqual(retried);
    expect(retry).toHaveBeenCalledWith(undefined, expect.any(AbortSignal)); // the error part's `error` field
    expect(rejected.cancelled).toBe(true);
  });

  it('a stream that fails before any content switches too', async () => {
    const failure = new Error('prompt is too long');
    const retry = vi.fn(async () => streamOf(parts('text-delta', 'finish')));
    const out = await readAll(guardedStream(streamOf(parts('stream-start'), failure), { observe: () => {}, retry }));
    expect(out.map((p) => p.type)).toEqual(['text-delta', 'finish']);
    expect(retry).toHaveBeenCalledWith(failure, expect.any(AbortSignal));
  });

  it('no retried stream: the error part passes, with the parts held before it', async () => {
    const source = parts('stream-start', 'error', 'finish');
    const out = await readAll(guardedStream(streamOf(source), { observe: () => {}, retry: async () => undefined }));
    expect(out).toEqual(source);
  });

  it('after content, errors pass as they come and nothing is retried', async () => {
    const retry = vi.fn(async () => streamOf(parts('text-delta')));
    const source = parts('text-delta', 'error', 'finish');
    expect(await readAll(guardedStream(streamOf(source), { observe: () => {}, retry }))).toEqual(source);
    const failure = new Error('reset');
    await expect(
      readAll(guardedStream(streamOf(parts('text-delta'), failure), { observe: () => {}, retry })),
    ).rejects.toBe(failure);
    expect(retry).not.toHaveBeenCalled();
  });

  it('only leading parts and then the end: they are delivered at the end', async () => {
    const source = parts('stream-start', 'response-metadata');
    expect(await readAll(guardedStream(streamOf(source), { observe: () => {}, retry: async () => undefined }))).toEqual(
      source,
    );
  });

  it('a caller that cancels while the retry is prepared: the retried stream is cancelled too', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let asked!: () => void;
    const retryAsked = new Promise<void>((resolve) => (asked = resolve));
    const retried = streamOf(parts('text-delta'));
    let abandoned: AbortSignal | undefined;
    const stream = guardedStream(streamOf(parts('error')), {
      observe: () => {},
      retry: async (_error, signal) => {
        abandoned = signal;
        asked();
        await gate;
        return retried;
      },
    });
    const reader = stream.getReader();
    const pending = reader.read();
    await retryAsked;
    await reader.cancel('gone');
    // The retry hears of it at once, to stop preparing (and not send) the retried call.
    expect(abandoned?.aborted).toBe(true);
    expect(abandoned?.reason).toBe('gone');
    release();
    await pending.catch(() => undefined);
    await vi.waitFor(() => expect(retried.cancelled).toBe(true));
  });
});
