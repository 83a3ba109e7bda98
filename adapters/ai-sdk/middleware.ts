// contextGuardMiddleware: the guard as an AI SDK language-model middleware. Every call through the
// wrapped model (generateText, streamText, agents, each step of a tool loop) is estimated and, when
// over the threshold, compacted before it reaches the provider; the provider's usage is recorded
// after it. The prompt is converted to the guard's messages and back (convert.ts): what the guard
// left alone reaches the provider as the very objects the SDK built.
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
import { createContextGuard, type ContextGuard, type ContextGuardOptions, type GuardMessage, type ModelUsage, type Summarizer } from '../../src/index.ts';
import { fromGuardMessages, fromGuardMessagesV3, toGuardMessages, toGuardMessagesV3, toGuardTools, type GuardPrompt } from './convert.ts';
import { isContextLengthError, promptTokensFromError } from './overflow.ts';
import { recordToolCalls } from './sessions.ts';
import { deriveSessionId } from '../shared/session-id.ts';
import { modelSummarizer } from './summarizer.ts';

/** Per-call options, under `providerOptions.contextGuard`; stripped before the provider sees them. */
export interface ContextGuardCallOptions {
  /** The conversation this call belongs to. Default: derived from its system prompt and first user message. */
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
  /** The parameters as the SDK passed them, for a compacted retry. */
  original: AnyParams;
}

function isGuardOption(options: ContextGuardMiddlewareOptions): options is { guard: ContextGuard } & AdapterOptions {
  return typeof options === 'object' && options !== null && 'guard' in options && options.guard !== undefined;
}

/** The usage the guard records: the prompt's total input tokens (cached included), never a multi-step sum. */
function usageOf(usage: unknown): ModelUsage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as { inputTokens?: unknown; outputTokens?: unknown };
  // V3 and V4 report { total, noCache, cacheRead, cacheWrite }; older shapes a plain number.
  const input = u.inputTokens;
  let inputTokens: number | undefined;
  if (typeof input === 'number') inputTokens = input;
  else if (typeof input === 'object' && input !== null) {
    const i = input as { total?: unknown; noCache?: unknown; cacheRead?: unknown; cacheWrite?: unknown };
    if (typeof i.total === 'number') inputTokens = i.total;
    else if (typeof i.noCache === 'number') {
      inputTokens = i.noCache + (typeof i.cacheRead === 'number' ? i.cacheRead : 0) + (typeof i.cacheWrite === 'number' ? i.cacheWrite : 0);
    }
  }
  if (inputTokens === undefined) return undefined;
  const output = u.outputTokens;
  const outputTokens = typeof output === 'number' ? output : typeof (output as { total?: unknown } | undefined)?.total === 'number' ? (output as { total: number }).total : undefined;
  return { inputTokens, ...(outputTokens !== undefined ? { outputTokens } : {}) };
}

function createMiddleware(options: ContextGuardMiddlewareOptions, dialect: Dialect) {
  const retryOnOverflow = options.retryOnOverflow ?? true;
  // The summarizer of a guard created here is the model of the session's latest call, called
  // directly (not through this middleware, which would guard the summarizer's own call).
  const modelOfSession = new Map<string, AnyModel>();
  const MAX_TRACKED = 10_000;
  let guard: ContextGuard;
  const ownGuard = !isGuardOption(options);
  if (isGuardOption(options)) guard = options.guard;
  else {
    const { retryOnOverflow: _retry, ...core } = options;
    const fallback: Summarizer = (input) => {
      const model = modelOfSession.get(input.sessionId);
      if (!model) throw new Error('context-guard: no model is known for this session yet');
      return modelSummarizer(model)(input);
    };
    guard = createContextGuard({ ...core, summarizer: core.summarizer ?? fallback });
  }
  const calls = new WeakMap<object, CallInfo>();

  async function guardParams(params: AnyParams, model: AnyModel, sessionId: string): Promise<AnyParams> {
    const converted = dialect.toGuard(params.prompt);
    const r = await guard.beforeModel({
      sessionId,
      modelId: model.modelId,
      messages: converted.messages,
      ...(params.tools ? { tools: toGuardTools(params.tools as never) } : {}),
      ...(params.abortSignal ? { signal: params.abortSignal } : {}),
    });
    const prompt = dialect.fromGuard(r.messages, converted);
    return { ...params, prompt } as AnyParams;
  }

  async function transformParams({ params, model }: { params: AnyParams; model: AnyModel }): Promise<AnyParams> {
    const { contextGuard, ...providerOptions } = (params.providerOptions ?? {}) as Record<string, Record<string, unknown>>;
    const requested = contextGuard?.['sessionId'];
    const sessionId = typeof requested === 'string' && requested ? requested : deriveSessionId(params.prompt as readonly unknown[]);
    const stripped = { ...params, providerOptions } as AnyParams;
    if (params.providerOptions === undefined) delete (stripped as { providerOptions?: unknown }).providerOptions;
    if (ownGuard) {
      modelOfSession.delete(sessionId);
      modelOfSession.set(sessionId, model);
      if (modelOfSession.size > MAX_TRACKED) modelOfSession.delete(modelOfSession.keys().next().value as string);
    }
    const guarded = await guardParams(stripped, model, sessionId);
    calls.set(guarded, { sessionId, original: stripped });
    return guarded;
  }

  /** Records usage without ever failing the call. */
  function record(sessionId: string, usage: unknown): Promise<void> {
    return guard.afterModel({ sessionId, usage: usageOf(usage) ?? null });
  }

  /** After a context-length rejection: calibrate from the provider's count, compact harder, and return the retried params. */
  async function recover(info: CallInfo, model: AnyModel, error: unknown): Promise<AnyParams | undefined> {
    if (!retryOnOverflow || !isContextLengthError(error)) return undefined;
    const reported = promptTokensFromError(error);
    if (reported !== undefined) await guard.afterModel({ sessionId: info.sessionId, usage: { inputTokens: reported } });
    await guard.compact(info.sessionId);
    return guardParams(info.original, model, info.sessionId);
  }

  /**
   * Runs the call; after a context-length rejection, runs it once more on the compacted params
   * (directly on the model: the retry is already guarded). Anything else is thrown as it is.
   */
  async function withRecovery<T>(info: CallInfo | undefined, model: AnyModel, call: () => PromiseLike<T>, again: (params: AnyParams) => PromiseLike<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const retry = info ? await recover(info, model, error) : undefined;
      if (!retry) throw error;
      return again(retry);
    }
  }

  return {
    transformParams,

    async wrapGenerate({ doGenerate, params, model }: { doGenerate: () => PromiseLike<unknown>; params: AnyParams; model: AnyModel }) {
      const info = calls.get(params);
      const result = await withRecovery(info, model, doGenerate, (retry) => (model.doGenerate as (p: AnyParams) => PromiseLike<unknown>)(retry));
      if (info) {
        await record(info.sessionId, (result as { usage?: unknown }).usage);
        recordToolCalls(guard, info.sessionId, (result as { content?: unknown }).content);
      }
      return result;
    },

    async wrapStream({ doStream, params, model }: { doStream: () => PromiseLike<unknown>; params: AnyParams; model: AnyModel }) {
      const info = calls.get(params);
      type StreamResult = { stream: ReadableStream<{ type: string }> } & Record<string, unknown>;
      const result = (await withRecovery(info, model, doStream, (retry) => (model.doStream as (p: AnyParams) => PromiseLike<unknown>)(retry))) as StreamResult;
      if (!info) return result;
      // Usage arrives with the `finish` part: recorded as it passes, without holding any part back.
      // A stream that ends or aborts before it records nothing.
      const recorder = new TransformStream<{ type: string }, { type: string }>({
        transform(part, controller) {
          controller.enqueue(part);
          if (part.type === 'tool-call') recordToolCalls(guard, info.sessionId, [part]);
          if (part.type === 'finish') void record(info.sessionId, (part as { usage?: unknown }).usage);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(recorder) };
    },

    guard,
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
export function contextGuardMiddleware(options: ContextGuardMiddlewareOptions = {}): LanguageModelV4Middleware & { guard: ContextGuard } {
  const m = createMiddleware(options, V4);
  return {
    specificationVersion: 'v4',
    transformParams: m.transformParams as LanguageModelV4Middleware['transformParams'],
    wrapGenerate: m.wrapGenerate as unknown as LanguageModelV4Middleware['wrapGenerate'],
    wrapStream: m.wrapStream as unknown as LanguageModelV4Middleware['wrapStream'],
    guard: m.guard,
  };
}

/** The same middleware for ai 6 (`LanguageModelV3Middleware`, V3 prompts). */
export function contextGuardMiddlewareV3(options: ContextGuardMiddlewareOptions = {}): LanguageModelV3Middleware & { guard: ContextGuard } {
  const m = createMiddleware(options, V3);
  return {
    specificationVersion: 'v3',
    transformParams: m.transformParams as LanguageModelV3Middleware['transformParams'],
    wrapGenerate: m.wrapGenerate as unknown as LanguageModelV3Middleware['wrapGenerate'],
    wrapStream: m.wrapStream as unknown as LanguageModelV3Middleware['wrapStream'],
    guard: m.guard,
  };
}
