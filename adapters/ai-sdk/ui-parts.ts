// writeContextParts: the context meter for AI SDK UI. Inside `createUIMessageStream`'s execute, it
// writes the session's meter (`data-context-guard`, one id, so the client updates it in place) after
// every estimate, compaction and real count, and one `data-context-guard-compaction` part per
// compaction, until the function it returns is called.
import type { UIMessage, UITools } from 'ai';
import type { ContextGuard } from '../../src/index.ts';
import {
  type ContextGuardDataParts,
  type ContextGuardPart,
  watchContext,
  type WatchContextOptions,
} from '../shared/context-parts.ts';
import { hostSessionId } from '../shared/session-id.ts';

export type {
  ContextGuardCompaction,
  ContextGuardDataParts,
  ContextGuardMeter,
  ContextGuardPart,
} from '../shared/context-parts.ts';

/**
 * A UI message that carries the context parts: `useChat<ContextGuardUIMessage>()` types
 * `message.parts` with them. With data parts of your own: `UIMessage<Meta, ContextGuardDataParts & MyParts>`.
 */
export type ContextGuardUIMessage<METADATA = unknown, TOOLS extends UITools = UITools> = UIMessage<
  METADATA,
  ContextGuardDataParts,
  TOOLS
>;

/** What writeContextParts writes into: the `writer` of `createUIMessageStream`'s execute (or anything with `write`). */
export interface ContextPartsWriter {
  write(part: ContextGuardPart): void;
}

export interface WriteContextPartsOptions extends WatchContextOptions {
  /** The session whose context is shown: the `sessionId` the model calls pass in `providerOptions.contextGuard`. */
  sessionId: string;
}

/**
 * Stops writing. Await it before `execute` returns: it writes the session's status once more when
 * the last count was recorded after the stream part that ended the call (an asynchronous store).
 */
export type StopContextParts = () => Promise<void>;

/**
 * Writes the context of one session into a UI message stream:
 *
 * ```ts
 * const stream = createUIMessageStream<ContextGuardUIMessage>({
 *   execute: async ({ writer }) => {
 *     const stop = writeContextParts(writer, guarded, { sessionId: chatId });
 *     const result = streamText({ model, messages, providerOptions: { contextGuard: { sessionId: chatId } } });
 *     writer.merge(result.toUIMessageStream());
 *     await result.consumeStream();
 *     await stop();
 *   },
 * });
 * ```
 *
 * `guarded` is the middleware (`contextGuardMiddleware(...)`, which carries its guard) or a guard.
 * Parts: `data-context-guard` (`{ tokens, threshold, contextWindow, fraction, source, warning }`,
 * one id) after every estimate, compaction and real count of the session, and one
 * `data-context-guard-compaction` (`{ strategy, reason, tokensBefore, tokensAfter, label, archive }`)
 * per compaction. Nothing is written while no window is known for the model.
 */
export function writeContextParts(
  writer: ContextPartsWriter,
  guarded: ContextGuard | { guard: ContextGuard },
  options: WriteContextPartsOptions,
): StopContextParts {
  const guard = 'guard' in guarded && guarded.guard ? guarded.guard : (guarded as ContextGuard);
  const sessionId = hostSessionId(options?.sessionId);
  if (!sessionId) throw new TypeError('writeContextParts: `sessionId` must be a non-empty string');
  if (typeof guard?.subscribe !== 'function')
    throw new TypeError('writeContextParts: `guarded` must be a context guard or the middleware that carries one');
  const watch = watchContext(guard, sessionId, (part) => writer.write(part), options);
  return () => watch.finish();
}
