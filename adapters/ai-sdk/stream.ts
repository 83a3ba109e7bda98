// The stream the caller of a guarded streamText reads: the provider's parts, each observed as it
// passes (usage, tool calls), with one allowance for overflow recovery. A provider may reject a
// prompt for its length inside the stream (an `error` part, or the stream failing) rather than by
// throwing from doStream; until content has reached the caller, such a rejection can still be
// retried, the retried stream read instead and the rejected one dropped.

/** A stream part, as far as the middleware reads it. */
export type StreamPart = { type: string; [key: string]: unknown };

/**
 * Parts a provider sends before any content (its warnings, the response id, raw chunks). Held
 * back until the first content part, so that a rejection arriving right after them can still be
 * retried: nothing the caller could act on has reached it yet.
 */
const LEADING_PARTS: ReadonlySet<string> = new Set(['stream-start', 'response-metadata', 'raw']);

export interface StreamHooks {
  /** Sees every part the caller receives, as it is forwarded. */
  observe(part: StreamPart): void;
  /**
   * The retried call's stream after a rejection that is to be retried; undefined otherwise.
   * `abandoned` fires when the caller cancels the stream: the retry is then neither prepared further
   * (its compaction is aborted) nor sent.
   */
  retry(error: unknown, abandoned: AbortSignal): Promise<ReadableStream<StreamPart> | undefined>;
}

/**
 * The provider's parts, observed as they pass. Leading non-content parts wait for the first
 * content part; a context-length rejection before any content switches to the retried stream (when
 * `retry` gives one). Once content has been forwarded, every part passes as it comes and nothing is retried.
 */
export function guardedStream(source: ReadableStream<StreamPart>, hooks: StreamHooks): ReadableStream<StreamPart> {
  let reader = source.getReader();
  let held: StreamPart[] | undefined = [];
  let cancelled = false;
  const abandoned = new AbortController();

  const forward = (controller: ReadableStreamDefaultController<StreamPart>, part: StreamPart) => {
    controller.enqueue(part);
    hooks.observe(part);
  };

  /** Reads the retried stream instead, when the rejection is one the guard retries. */
  const switchOver = async (error: unknown): Promise<boolean> => {
    const again = await hooks.retry(error, abandoned.signal);
    if (!again) return false;
    reader.cancel().catch(() => {}); // what is left of the rejected attempt
    // The caller gave up while the retry was being prepared: nobody reads it.
    if (cancelled) again.cancel().catch(() => {});
    reader = again.getReader();
    held = [];
    return true;
  };

  return new ReadableStream<StreamPart>({
    async pull(controller) {
      for (;;) {
        if (cancelled) return;
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          if (held && (await switchOver(error))) continue;
          throw error;
        }
        if (next.done) {
          for (const part of held ?? []) forward(controller, part);
          controller.close();
          return;
        }
        const part = next.value;
        if (held) {
          if (LEADING_PARTS.has(part?.type)) {
            held.push(part);
            continue;
          }
          if (part?.type === 'error' && (await switchOver(part.error))) continue;
          for (const leading of held) forward(controller, leading);
          held = undefined;
        }
        forward(controller, part);
        return;
      }
    },
    cancel(reason) {
      cancelled = true;
      abandoned.abort(reason);
      return reader.cancel(reason);
    },
  });
}
