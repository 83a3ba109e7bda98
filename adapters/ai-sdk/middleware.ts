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

/** A stream part, as far as this middleware reads it. */
type StreamPart = { type: string; [key: string]: unknown };
type StreamResult = { stream: ReadableStream<StreamPart> } & Record<string, unknown>;

/**
 * Parts a provider sends before any content (its warnings, the response id, raw chunks). Held
 * back until the first content part, so that a rejection arriving right after them can still be
 * retried: nothing the caller could act on has reached it yet.
 */
const LEADING_PARTS: ReadonlySet<string> = new Set(['stream-start', 'response-metadata', 'raw']);

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;

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

  /** A call that goes out unguarded, told to onEvent (whose own failures are not the caller's problem). */
  function report(sessionId: string | undefined, error: unknown): void {
    try {
      guard.options.onEvent?.({ type: 'error', ...(sessionId ? { sessionId } : {}), stage: 'beforeModel', error });
    } catch {
      // ignored: see above
    }
  }

  /**
   * The guard's messages for a prompt. convert.ts reads every entry as a message object; entries
   * that are not objects (`null`...) go to the guard as they are, at their index, and the guard
   * leaves them out with an `invalid-messages` event.
   */
  function toGuardPrompt(prompt: readonly unknown[]): GuardPrompt {
    const objects = prompt.filter(isObject);
    if (objects.length === prompt.length) return dialect.toGuard(prompt);
    const converted = dialect.toGuard(objects);
    let next = 0;
    return { ...converted, messages: prompt.map((entry) => (isObject(entry) ? converted.messages[next++] : entry)) as GuardMessage[] };
  }

  async function guardParams(params: AnyParams, model: AnyModel, sessionId: string): Promise<AnyParams> {
    const converted = toGuardPrompt(params.prompt as readonly unknown[]);
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
  async function transformParams({ params, model }: { params: AnyParams; model: AnyModel }): Promise<AnyParams> {
    let sessionId: string | undefined;
    let stripped = params;
    try {
      const split = strip(params);
      stripped = split.stripped;
      sessionId = typeof split.requested === 'string' && split.requested ? split.requested : deriveSessionId(params.prompt as readonly unknown[]);
      if (!Array.isArray(params.prompt)) {
        report(sessionId, new TypeError('context-guard: the call\'s prompt is not an array; it was sent unguarded'));
        return stripped;
      }
      if (ownGuard) {
        modelOfSession.delete(sessionId);
        modelOfSession.set(sessionId, model);
        if (modelOfSession.size > MAX_TRACKED) modelOfSession.delete(modelOfSession.keys().next().value as string);
      }
      const guarded = await guardParams(stripped, model, sessionId);
      calls.set(guarded, { sessionId, original: stripped });
      return guarded;
    } catch (error) {
      report(sessionId, error);
      return stripped;
    }
  }

  /** Records usage without ever failing the call (a provider's usage object is read defensively: it may throw). */
  function record(sessionId: string, usage: unknown): Promise<void> {
    let parsed: ModelUsage | undefined;
    try {
      parsed = usageOf(usage);
    } catch {
      parsed = undefined;
    }
    return guard.afterModel({ sessionId, usage: parsed ?? null });
  }

  /**
   * After a context-length rejection: the guard records the provider's count and requests a
   * compaction (one operation); the call's params are guarded again. Undefined for any other
   * error, or when anything fails on the way: the caller then gets the provider's error as it was.
   */
  async function recover(info: CallInfo | undefined, model: AnyModel, error: unknown): Promise<AnyParams | undefined> {
    if (!retryOnOverflow || !info) return undefined;
    try {
      const { retry } = await guard.recoverFromOverflow({ sessionId: info.sessionId, error });
      return retry ? await guardParams(info.original, model, info.sessionId) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The stream the caller reads: the provider's parts, with usage and tool calls recorded as they
   * pass. Leading non-content parts wait for the first content part; when a context-length
   * rejection comes before any content (an `error` part, or the stream failing), the call is
   * retried once and the retried stream is read instead, the rejected one dropped. Once content
   * has been forwarded, every part passes as it comes and nothing is retried.
   */
  function guardedStream(
    source: ReadableStream<StreamPart>,
    info: CallInfo,
    retry: (error: unknown) => Promise<StreamResult | undefined>,
  ): ReadableStream<StreamPart> {
    let reader = source.getReader();
    let held: StreamPart[] | undefined = [];
    let cancelled = false;

    const forward = (controller: ReadableStreamDefaultController<StreamPart>, part: StreamPart) => {
      controller.enqueue(part);
      if (part?.type === 'tool-call') recordToolCalls(guard, info.sessionId, [part]);
      if (part?.type === 'finish') void record(info.sessionId, part.usage);
    };

    /** Reads the retried stream instead, when the rejection is one the guard retries. */
    const switchOver = async (error: unknown): Promise<boolean> => {
      const again = await retry(error);
      if (!again) return false;
      reader.cancel().catch(() => {}); // what is left of the rejected attempt
      // The caller gave up while the retry was being prepared: nobody reads it.
      if (cancelled) again.stream.cancel().catch(() => {});
      reader = again.stream.getReader();
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
        return reader.cancel(reason);
      },
    });
  }

  return {
    transformParams,

    // After a context-length rejection, the call runs once more on the compacted params (directly
    // on the model: the retry is already guarded). Any other error, or a second rejection, is thrown as it is.
    async wrapGenerate({ doGenerate, params, model }: { doGenerate: () => PromiseLike<unknown>; params: AnyParams; model: AnyModel }) {
      const info = calls.get(params);
      let result: unknown;
      try {
        result = await doGenerate();
      } catch (error) {
        const retry = await recover(info, model, error);
        if (!retry) throw error;
        result = await (model.doGenerate as (p: AnyParams) => PromiseLike<unknown>)(retry);
      }
      if (info && isObject(result)) {
        await record(info.sessionId, (result as { usage?: unknown }).usage);
        recordToolCalls(guard, info.sessionId, (result as { content?: unknown }).content);
      }
      return result;
    },

    async wrapStream({ doStream, params, model }: { doStream: () => PromiseLike<unknown>; params: AnyParams; model: AnyModel }) {
      const info = calls.get(params);
      // One retry per call, whether the rejection is thrown by doStream or arrives in the stream.
      let retried = false;
      const retry = async (error: unknown): Promise<StreamResult | undefined> => {
        if (retried) return undefined;
        const again = await recover(info, model, error);
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
      return { ...result, stream: guardedStream(result.stream, info, retry) };
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
