// contextGuardMiddleware: the guard as an AI SDK language-model middleware. Every call through the
// wrapped model (generateText, streamText, agents, each step of a tool loop) is estimated and, when
// over the threshold, compacted before it reaches the provider; the provider's usage is recorded
// after it. The prompt is converted to the guard's messages and back (convert.ts): what the guard
// left alone reaches the provider as the very objects the SDK built.
import { LRUCache } from 'lru-cache';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Middleware,
  LanguageModelV3Prompt,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Middleware,
  LanguageModelV4Prompt,
} from '@ai-sdk/provider';
import type { ContextGuard, ContextGuardOptions, GuardMessage } from '../../src/index.ts';
import { reportAdapterError } from '../shared/model-window.ts';
import { retryAfterOverflow } from '../shared/overflow-retry.ts';
import { adapterGuard, latestModelSummarizer } from '../shared/owned-guard.ts';
import { deriveSessionId, hostSessionId } from '../shared/session-id.ts';
import { usageFromAiSdk } from '../shared/usage.ts';
import {
  fromGuardMessages,
  fromGuardMessagesV3,
  toGuardMessages,
  toGuardMessagesV3,
  toGuardTools,
  type GuardPrompt,
} from './convert.ts';
import { conversationKey, recordToolCalls } from './sessions.ts';
import { guardedStream, type StreamPart } from './stream.ts';
import { modelSummarizer } from './summarizer.ts';
import { atMostEntries } from '../shared/bounded.ts';

/** Per-call options, under `providerOptions.contextGuard`; stripped before the provider sees them. */
export interface ContextGuardCallOptions {
  /**
   * The conversation this call belongs to (a number counts as its string). Default: derived from
   * its system prompt and first user message.
   */
  sessionId?: string;
}

interface AdapterOptions {
  /**
   * Retry a call once, compacted, when the provider rejects it for its length (the guard's window
   * or calibration was off). Default true.
   */
  retryOnOverflow?: boolean;
}

/** Core options (a new guard, whose summarizer defaults to the wrapped model), or an existing guard. */
export type ContextGuardMiddlewareOptions = (ContextGuardOptions | { guard: ContextGuard }) & AdapterOptions;

type AnyModel = LanguageModelV4 | LanguageModelV3;
type AnyParams = LanguageModelV4CallOptions | LanguageModelV3CallOptions;
type StreamResult = { stream: ReadableStream<StreamPart> } & Record<string, unknown>;

interface Dialect {
  toGuard(prompt: unknown): GuardPrompt;
  fromGuard(messages: readonly GuardMessage[], converted: GuardPrompt): unknown;
}

const V4: Dialect = {
  toGuard: (prompt) => toGuardMessages(prompt as LanguageModelV4Prompt),
  fromGuard: (messages, converted) => fromGuardMessages(messages, converted),
};
const V3: Dialect = {
  toGuard: (prompt) => toGuardMessagesV3(prompt as LanguageModelV3Prompt),
  fromGuard: (messages, converted) => fromGuardMessagesV3(messages, converted),
};

/** What transformParams learned about a call, for wrapGenerate / wrapStream. */
interface CallInfo {
  sessionId: string;
  /** Whether the session id was derived from the conversation's start (no `sessionId` given). */
  derived: boolean;
  /** The parameters as the SDK passed them, for a compacted retry. */
  original: AnyParams;
}

/** One middleware's state: its guard, its prompt dialect, and what it remembers between hooks. */
interface Adapter {
  guard: ContextGuard;
  dialect: Dialect;
  retryOnOverflow: boolean;
  /**
   * Per session, the model of its latest call: the summarizer of a guard created here. Undefined with a shared guard.
   */
  models: LRUCache<string, AnyModel> | undefined;
  /** The guarded params transformParams returned → the call they belong to. */
  calls: WeakMap<object, CallInfo>;
}

const MAX_TRACKED_SESSIONS = 10_000;

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;

function createAdapter(options: ContextGuardMiddlewareOptions, dialect: Dialect): Adapter {
  // The summarizer of a guard created here is the model of the session's latest call, called
  // directly (not through this middleware, which would guard the summarizer's own call).
  const models = new LRUCache<string, AnyModel>(atMostEntries(MAX_TRACKED_SESSIONS));
  const { guard, owned } = adapterGuard<AdapterOptions>(options, ['retryOnOverflow'], {
    summarizer: () =>
      latestModelSummarizer(
        (sessionId) => models.peek(sessionId),
        modelSummarizer,
        'no model is known for this session yet',
      ),
  });
  return {
    guard,
    dialect,
    retryOnOverflow: options.retryOnOverflow ?? true,
    models: owned ? models : undefined,
    calls: new WeakMap(),
  };
}

/**
 * The guard's messages for a prompt. convert.ts reads every entry as a message object; entries
 * that are not objects (`null`...) go to the guard as they are, at their index, and the guard
 * leaves them out with an `invalid-messages` event.
 */
function toGuardPrompt(adapter: Adapter, prompt: readonly unknown[]): GuardPrompt {
  const objects = prompt.filter(isObject);
  if (objects.length === prompt.length) return adapter.dialect.toGuard(prompt);
  const converted = adapter.dialect.toGuard(objects);
  let next = 0;
  return {
    ...converted,
    messages: prompt.map((entry) => (isObject(entry) ? converted.messages[next++] : entry)) as GuardMessage[],
  };
}

async function guardParams(
  adapter: Adapter,
  params: AnyParams,
  model: AnyModel,
  sessionId: string,
): Promise<AnyParams> {
  const converted = toGuardPrompt(adapter, params.prompt as readonly unknown[]);
  const r = await adapter.guard.beforeModel({
    sessionId,
    modelId: model.modelId,
    messages: converted.messages,
    ...(params.tools ? { tools: toGuardTools(params.tools as never) } : {}),
    ...(params.abortSignal ? { signal: params.abortSignal } : {}),
  });
  const prompt = adapter.dialect.fromGuard(r.messages, converted);
  return { ...params, prompt } as AnyParams;
}

/** The call's options without `providerOptions.contextGuard`, and the session it names. */
function strip(params: AnyParams): { stripped: AnyParams; requested: unknown } {
  const all = params.providerOptions;
  if (!isObject(all)) return { stripped: params, requested: undefined };
  const { contextGuard, ...providerOptions } = all as Record<string, unknown>;
  const requested = isObject(contextGuard) ? (contextGuard as Record<string, unknown>)['sessionId'] : undefined;
  return { stripped: { ...params, providerOptions } as AnyParams, requested };
}

// Never throws: a prompt the adapter cannot read goes to the provider as it came (the provider
// reports its own error for it), and onEvent hears of it.
async function transformParams(
  adapter: Adapter,
  { params, model }: { params: AnyParams; model: AnyModel },
): Promise<AnyParams> {
  let sessionId: string | undefined;
  let stripped = params;
  try {
    const split = strip(params);
    stripped = split.stripped;
    const requested = hostSessionId(split.requested);
    sessionId = requested ?? deriveSessionId(params.prompt as readonly unknown[]);
    if (!Array.isArray(params.prompt)) {
      const error = new TypeError("context-guard: the call's prompt is not an array; it was sent unguarded");
      reportAdapterError(adapter.guard, { sessionId, stage: 'beforeModel', error });
      return stripped;
    }
    adapter.models?.set(sessionId, model);
    const guarded = await guardParams(adapter, stripped, model, sessionId);
    adapter.calls.set(guarded, { sessionId, derived: requested === undefined, original: stripped });
    return guarded;
  } catch (error) {
    reportAdapterError(adapter.guard, { sessionId, stage: 'beforeModel', error });
    return stripped;
  }
}

/** Records usage without ever failing the call (usageFromAiSdk reads a provider's usage object defensively). */
function record(adapter: Adapter, sessionId: string, usage: unknown): Promise<void> {
  return adapter.guard.afterModel({ sessionId, usage: usageFromAiSdk(usage) ?? null });
}

/** The call's own abort signal, merged with `abandoned` (the caller cancelled its stream) when given. */
function callSignal(params: AnyParams, abandoned: AbortSignal | undefined): AbortSignal | undefined {
  const signals = [params.abortSignal, abandoned].filter((signal): signal is AbortSignal => signal !== undefined);
  return signals.length > 1 ? AbortSignal.any(signals) : signals[0];
}

/**
 * After a context-length rejection, the call's params guarded again (compacted); undefined for
 * anything else, and when the call was aborted or `abandoned` before the retry was ready.
 */
function recover(
  adapter: Adapter,
  info: CallInfo | undefined,
  model: AnyModel,
  error: unknown,
  abandoned?: AbortSignal,
): Promise<AnyParams | undefined> {
  if (!adapter.retryOnOverflow || !info) return Promise.resolve(undefined);
  const signal = callSignal(info.original, abandoned);
  // The retry carries the merged signal: beforeModel aborts its summarizer with it, and a cancel
  // that comes while the retried request is under way aborts that request too.
  const params = (signal ? { ...info.original, abortSignal: signal } : info.original) as AnyParams;
  return retryAfterOverflow(
    adapter.guard,
    info.sessionId,
    error,
    () => guardParams(adapter, params, model, info.sessionId),
    signal,
  );
}

/** Notes the session of the response's tool calls, for the compact and recall tools (sessions.ts). */
function noteToolCalls(adapter: Adapter, info: CallInfo, content: unknown): void {
  const session = { sessionId: info.sessionId, derived: info.derived };
  // The key of the conversation as the host sent it (the tools see the host's messages, not the guard's).
  recordToolCalls(adapter.guard, session, () => conversationKey(info.original.prompt as readonly unknown[]), content);
}

interface WrapArgs {
  params: AnyParams;
  model: AnyModel;
}

// After a context-length rejection, the call runs once more on the compacted params (directly on
// the model: the retry is already guarded). Any other error, or a second rejection, is thrown as it is.
async function wrapGenerate(
  adapter: Adapter,
  { doGenerate, params, model }: WrapArgs & { doGenerate: () => PromiseLike<unknown> },
) {
  const info = adapter.calls.get(params);
  let result: unknown;
  try {
    result = await doGenerate();
  } catch (error) {
    const retry = await recover(adapter, info, model, error);
    if (!retry) throw error;
    result = await (model.doGenerate as (p: AnyParams) => PromiseLike<unknown>)(retry);
  }
  if (info && isObject(result)) {
    await record(adapter, info.sessionId, (result as { usage?: unknown }).usage);
    noteToolCalls(adapter, info, (result as { content?: unknown }).content);
  }
  return result;
}

async function wrapStream(
  adapter: Adapter,
  { doStream, params, model }: WrapArgs & { doStream: () => PromiseLike<unknown> },
) {
  const info = adapter.calls.get(params);
  // One retry per call, whether the rejection is thrown by doStream or arrives in the stream.
  let retried = false;
  const retry = async (error: unknown, abandoned?: AbortSignal): Promise<StreamResult | undefined> => {
    if (retried) return undefined;
    const again = await recover(adapter, info, model, error, abandoned);
    if (!again) return undefined;
    retried = true;
    return (await (model.doStream as (p: AnyParams) => PromiseLike<unknown>)(again)) as StreamResult;
  };
  let result: StreamResult;
  try {
    result = (await doStream()) as StreamResult;
  } catch (error) {
    const again = await retry(error);
    if (!again) throw error;
    result = again;
  }
  if (!info) return result;
  const stream = guardedStream(result.stream, {
    observe: (part) => {
      if (part?.type === 'tool-call') noteToolCalls(adapter, info, [part]);
      if (part?.type === 'finish') void record(adapter, info.sessionId, part['usage']);
    },
    retry: async (error, abandoned) => (await retry(error, abandoned))?.stream,
  });
  return { ...result, stream };
}

/** The middleware's hooks, for either specification version (their shapes differ only in types). */
function middleware(options: ContextGuardMiddlewareOptions, dialect: Dialect, specificationVersion: 'v3' | 'v4') {
  const adapter = createAdapter(options, dialect);
  return {
    specificationVersion,
    transformParams: (args: WrapArgs) => transformParams(adapter, args),
    wrapGenerate: (args: WrapArgs & { doGenerate: () => PromiseLike<unknown> }) => wrapGenerate(adapter, args),
    wrapStream: (args: WrapArgs & { doStream: () => PromiseLike<unknown> }) => wrapStream(adapter, args),
    guard: adapter.guard,
  };
}

/**
 * The guard as an ai 7 language-model middleware:
 *
 * ```ts
 * const model = wrapLanguageModel({ model: base, middleware: contextGuardMiddleware({ contextWindow: 128_000 }) });
 * await generateText({ model, prompt, providerOptions: { contextGuard: { sessionId: 'chat-42' } } });
 * ```
 *
 * The returned middleware carries its `guard` (for `status`, `compact` and `compactTool`).
 */
export function contextGuardMiddleware(
  options: ContextGuardMiddlewareOptions = {},
): LanguageModelV4Middleware & { guard: ContextGuard } {
  return middleware(options, V4, 'v4') as unknown as LanguageModelV4Middleware & { guard: ContextGuard };
}

/** The same middleware for ai 6 (`LanguageModelV3Middleware`, V3 prompts). */
export function contextGuardMiddlewareV3(
  options: ContextGuardMiddlewareOptions = {},
): LanguageModelV3Middleware & { guard: ContextGuard } {
  return middleware(options, V3, 'v3') as unknown as LanguageModelV3Middleware & { guard: ContextGuard };
}
